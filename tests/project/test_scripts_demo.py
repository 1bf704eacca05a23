"""scripts/demo.sh, the README's first command, run as a newcomer would: a fresh HOME, no agent
installed, no model reachable. It installs this checkout (pip fetches the dependencies, as on a
fresh machine) into a virtual environment of its own, makes a demo repository and rehearses the
example plan there; run again, it keeps the plan and ends well."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


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


def test_the_readme_opens_with_the_demo_and_keeps_the_tests_under_development() -> None:
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    assert blocks[0].strip() == "bash scripts/demo.sh"
    # the project's own test command (minutes, the first time) under a heading of its own,
    # never on the user's first screen
    development = re.search(r"^## Development\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    assert development, "the README has no Development section"
    assert re.findall(r"^```sh\n(.*?)^```", development.group(1), re.M | re.S)[0].strip() == \
        "bash scripts/test.sh"
    assert "bash scripts/test.sh" not in readme[:readme.index("## Development")]
    assert 'bash scripts/test.sh "$@"' in (CHECKOUT / ".ci" / "run").read_text()


def test_every_agent_loop_command_of_the_quick_start_parses() -> None:
    from agentloop.cli import command

    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    # a plan (its ## headings) and a run's output are not commands
    readme = re.sub(r"^```(markdown|text)\n.*?^```\n", "", readme, flags=re.M | re.S)
    quick = re.search(r"^## Quick start\n(.*?)^## ", readme, re.M | re.S)
    assert quick
    lines = re.findall(r"`(agent-loop [^`]+)`", quick.group(1))
    lines += [line.split("#")[0] for line in quick.group(1).splitlines()
              if line.startswith("agent-loop ")]
    assert len(lines) >= 6
    for line in lines:
        args = shlex.split(line)[1:]
        if args == ["--help"]:
            continue
        ctx = command.make_context("agent-loop", args)  # raises on an option that is not there
        assert ctx.params["tasks_md"] == Path("tasks.md"), line
