"""scripts/demo.sh, the README's first command, run as a newcomer would: a fresh HOME, no agent
installed, no model reachable. It installs this checkout (pip fetches the dependencies, as on a
fresh machine) into a virtual environment of its own, makes a demo repository and rehearses the
example plan there; run again, it keeps the plan and ends well."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def demo(home: Path) -> subprocess.CompletedProcess[str]:
    # PATH holds python3 and git only: no claude, no codex, so nothing could reach a model.
    tools = home.parent / "tools"
    tools.mkdir(exist_ok=True)
    for name in ("python3", "git"):
        found = shutil.which(name)
        assert found, f"{name} is needed"
        if not (tools / name).exists():
            (tools / name).symlink_to(found)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENT_LOOP_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(HOME=str(home), PATH=f"{tools}:/usr/bin:/bin")
    return subprocess.run(["bash", str(CHECKOUT / "scripts" / "demo.sh")], env=env,
                          capture_output=True, text=True, timeout=600, cwd=home)


def test_demo_installs_writes_the_plan_and_rehearses_it_offline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = demo(home)
    assert done.returncode == 0, done.stdout + done.stderr
    program = home / ".agent-loop-venv" / "bin" / "agent-loop"
    repo = home / "agent-loop-demo"
    assert (repo / "tasks.md").read_text().startswith("# An example plan for agent-loop")
    assert "3 completed" in done.stdout  # the example's three open tasks, rehearsed
    status = subprocess.run([str(program), "tasks.md", "--status"], cwd=repo,
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert f'export PATH="{program.parent}:$PATH"' in done.stdout
    # again: the plan is kept, the install repeated, and it still ends well
    (repo / "tasks.md").write_text((repo / "tasks.md").read_text() + "\n- [ ] One more.\n")
    again = demo(home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "keeping the tasks.md that is there" in again.stdout
    assert "One more." in (repo / "tasks.md").read_text()
