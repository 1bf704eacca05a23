"""`--status --follow`: the newest run's events as they come, until that run ends."""

from __future__ import annotations

from pathlib import Path

from tests.run.test_agent_commits import killed_when_flagged, start
from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo
from tests.support.runner import agent_loop


def test_follow_of_a_run_killed_midway_ends_in_one_line(tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    """A run killed (SIGKILL, the OOM killer) writes no RunFinished: `--status --follow` showed
    its `claude: running…` and then waited for ever, where `--status` says `interrupted`."""
    flags = tmp_path / "flags"
    flags.mkdir()
    work = make_repo(tmp_path / "work", files={
        "README.md": "hi\n",
        "tasks.md": f"- [ ] a1\n  FAKE: bash echo $PPID $$ > {flags}/pids.tmp"
                    f" && mv {flags}/pids.tmp {flags}/pids && exec sleep 60\n"})
    killed_when_flagged(start(work, "checkout"), flags)
    done = agent_loop(work, "--status", "--follow", timeout=30)
    assert "claude: running" in done.stdout, done.stdout
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "ended without finishing" in lines[0] and "agent-loop tasks.md --status" in lines[0]
