"""Plans for the fake agent (tests/support/fake_claude.py) whose tasks are named by a word, each
writing WORD.txt, and the plans whose agents edit them while a run works."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from tests.support.repos import init_repo
from tests.support.runner import agent_loop


def task(word: str, *after: str, before: Sequence[str] = ()) -> str:
    """`- [ ] task WORD`: its fake agent runs the directives `before`, writes WORD.txt holding
    WORD, then runs those `after`."""
    directives = [*before, f"write {word}.txt {word}", *after]
    return f"- [ ] task {word}\n" + "".join(f"  FAKE: {line}\n" for line in directives)


def edited_midrun(*words: str, edit: str) -> str:
    """A plan of tasks `words` whose first task's agent, once it wrote its file, runs the shell
    command `edit` (which edits the plan)."""
    first, *rest = words
    return task(first, f"bash {edit}") + "".join(task(word) for word in rest)


def five_and_task_one_edits(work: Path) -> None:
    """A five-task plan, in a git repository, whose task 1's agent (in its lane) edits the plan
    in your checkout: task 2 removed, a task six added at the end."""
    init_repo(work, "git")
    edit = ("python3 -c \"import sys; p=sys.argv[1]; t=open(p).read(); "
            "t=t.replace('- [ ] task two\\n  FAKE: write two.txt two\\n',''); "
            "open(p,'w').write(t+'- [ ] task six\\n  FAKE: write six.txt six\\n')\" "
            f"{work / 'tasks.md'}")
    (work / "tasks.md").write_text(
        edited_midrun("one", "two", "three", "four", "five", edit=edit))


def put_back_midrun(work: Path, back: Path, last: Sequence[str] = ()) -> None:
    """Tasks one and two done by a first run in a git repository; then task two deleted from
    the plan, which task three's agent puts back (the script `back`, written here) while the
    run works; task four's agent runs the directives `last` first."""
    init_repo(work, "git")
    one, two = task("one"), task("two")
    (work / "tasks.md").write_text(one + two)
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    back.write_text(f"import sys\np = sys.argv[1]\nt = open(p).read()\n"
                    f"open(p, 'w').write(t.replace({one!r}, {one + two!r}))\n")
    (work / "tasks.md").write_text(
        one + "\n## New\n" + task("three", before=[f"bash python3 {back} {work / 'tasks.md'}"])
        + task("four", before=last))
