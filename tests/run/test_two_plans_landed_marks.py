"""Two plans in one checkout (`tasks.md` and `other.md`), each run with its own plan file, one
after the other and at once: a landing's mark (what keeps a killed run from landing a task twice)
lives in the repository's common git dir. Each plan keeps its marks apart, so one plan's
run-end cleanup never takes the other's, and a mark under the name the released version gave
(`refs/agent-loop/landed/<lane commit>`) still counts after the upgrade."""

from __future__ import annotations

from pathlib import Path

from tests.run.test_twin_landed_marks import ARGS, PLAN, held_after_the_mark
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, state_of
from tests.support.runner import agent_loop

OTHER = "- task c\n  FAKE: write c.txt c\n"


def _two_plans(tmp_path: Path) -> Path:
    main = tmp_path / "main"
    main.mkdir()
    (main / "README.md").write_text("hello\n")
    init_repo(main, "git")
    (main / "tasks.md").write_text(OTHER)
    (main / "other.md").write_text(PLAN)
    git(main, "add", "tasks.md", "other.md")
    git(main, "commit", "-qm", "the plans")
    return main


def _killed_after_the_mark(tmp_path: Path, main: Path, plan: str) -> None:
    """`agent-loop PLAN` in `main`, killed just after its first landing that leaves a mark."""
    tool = held_after_the_mark(tmp_path, main, "kill", plan)
    assert tool.wait(timeout=60) == -9, tool.communicate()[0].decode()


def _marks(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/agent-loop/").split()


def _landed_once(repo: Path) -> None:
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    ours = sorted(s for s in subjects if s.startswith("agent-loop:"))
    assert ours == ["agent-loop: (ungrouped) / task c", "agent-loop: A / task a",
                    "agent-loop: B / task b"], subjects


def test_a_killed_plans_mark_outlives_the_other_plans_run_end(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main = _two_plans(tmp_path)
    _killed_after_the_mark(tmp_path, main, "other.md")
    marks = _marks(main)
    assert len(marks) == 1, marks
    # The other plan's run, to its end: its cleanup leaves the killed plan's mark be.
    theirs = agent_loop(main, *ARGS, plan="tasks.md")
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert marks[0] in _marks(main), "the other plan's run took the killed plan's mark"
    again = agent_loop(main, *ARGS, plan="other.md")
    assert again.returncode == 0, again.stdout + again.stderr
    _landed_once(main)
    # The killed plan ran first: its state is the checkout's first one.
    assert [t["status"] for t in state_of(main)["tasks"]] == ["completed"] * 2
    assert _marks(main) == []


def test_a_mark_from_before_the_upgrade_still_counts(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main = _two_plans(tmp_path)
    _killed_after_the_mark(tmp_path, main, "other.md")
    (mark,) = _marks(main)
    assert not mark.startswith("refs/agent-loop/landed/"), mark
    # Where the released version left it: under the one name every plan shared.
    old = "refs/agent-loop/landed/" + mark.rsplit("/", 1)[1]
    git(main, "update-ref", old, mark)
    git(main, "update-ref", "-d", mark)
    again = agent_loop(main, *ARGS, plan="other.md")
    assert again.returncode == 0, again.stdout + again.stderr
    subjects = git(main, "log", "--format=%s", "main").splitlines()
    assert subjects.count("agent-loop: B / task b") == 1, subjects
    assert _marks(main) == []
