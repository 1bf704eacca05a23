"""The plan is read again between tasks unless its stamp (inode, size, write and change times)
says it is the file read last time (agentloop.run.controller._read_plan): an edit that keeps
its size and puts its write time back, and an editor's save by rename, are both seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo, state_of
from tests.support.runner import agent_loop

PLAN = """\
## One
- [ ] task one
  FAKE: write one.txt one

## Two
- [ ] task two
  FAKE: write two.txt two

## Three
- [ ] task three
  FAKE: write three.txt three
"""

# Run after task 1, in the checkout: each edits the plan as a user or an editor does.
EDITS = {
    # Task 3 ticked: same size; its write time put back as it was.
    "same size, time put back": (
        "python3 -c \"import os,sys; p='tasks.md'; st=os.stat(p); t=open(p).read(); "
        "open(p,'w').write(t.replace('- [ ] task three','- [x] task three')); "
        "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))\""),
    # Task 3 deleted, saved the way editors do: a new file renamed over the plan.
    "rename over": (
        "python3 -c \"import os; t=open('tasks.md').read(); "
        "t=t[:t.index('## Three')]; open('tasks.md.new','w').write(t); "
        "os.replace('tasks.md.new','tasks.md')\""),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_between_tasks_is_seen(work: Path, fake_claude: FakeClaude, edit: str) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(PLAN)
    hook = f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {EDITS[edit]}; fi'
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--on-task", hook)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "one.txt").exists() and (work / "two.txt").exists()
    assert not (work / "three.txt").exists(), done.stdout
    assert not any("task three" in p for p in fake_claude.task_prompts())
    assert [t["status"] for t in state_of(work)["tasks"]][:2] == ["completed"] * 2
