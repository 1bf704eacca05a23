"""A task a killed run left `landing` lands first on the next run even when that run's --task or
its optional flag does not name it: it costs no agent, and a later task must not land before it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.run.test_crash import git, git_history, new_repo, settle, start
from tests.run.test_landing_beside import holding, statuses, until
from tests.support.fake_agent import FakeClaude


@pytest.mark.parametrize("optional", [False, True], ids=["task-2", "optional"])
def test_a_task_left_landing_lands_before_the_selected_one(
        tmp_path: Path, fake_claude: FakeClaude, optional: bool) -> None:
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2, pause=0)
    (work / "tasks.md").write_text(
        f"## Group 1\n\n- [ ]{'*' if optional else ''} task 01\n  FAKE: write f01.txt content 1\n"
        "\n- [ ] task 02\n  FAKE: write f02.txt content 2\n  FAKE: sleep 3\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    env, mark, _release = holding(tmp_path)
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill", "--include-optional")
    until("task 1's landing", mark.exists, tool, out)
    until("task 2's agent", lambda: len(fake_claude.task_runs()) >= 2, tool, out)
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait()
    settle(tool.pid, fake_claude, "kill", within=work)
    assert statuses(work)[0] == "landing"
    again = tmp_path / "again.out"
    rerun = ("--no-distill",) if optional else ("--no-distill", "--task", "2")
    done = start(work, "git", again, None, *rerun)
    assert done.wait(timeout=200) == 0, again.read_text()
    assert statuses(work) == ["completed", "completed"], again.read_text()
    subjects = [d for _, d, _ in git_history(work)]
    assert subjects.index(next(s for s in subjects if "task 01" in s)) < \
        subjects.index(next(s for s in subjects if "task 02" in s)), subjects
