"""The jj side of tests/run/test_history_midrun: you rewrite a task's change that a jj run
landed (`jj describe`, `jj squash` into it, a change of yours slipped in under it), between two
runs or while the run goes on. jj keeps a rewritten change's id, so the change is still in the
history: no task is lost, none runs twice, and the records name the change as it is now."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from agentloop import proc
from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, make_repo, state_of
from tests.support.runner import agent_loop, done_by_git

pytestmark = pytest.mark.usefixtures("jj_bin")

PLAN = """\
## All
- task one
  FAKE: write one.txt one
- task two
  FAKE: write two.txt two
- task three
  FAKE: write three.txt three
"""

# Task 1's change, by its subject: found the same way in the checkout and in a lane.
TASK_1 = "description(substring:'/ task one') & ::@"
REWRITES = {
    # Reword its subject; the trailers below it stay.
    "describe": f'jj log --no-graph -r "{TASK_1}" -T description | sed "1s/$/ (edited)/" | '
                f'jj describe -r "{TASK_1}" --stdin',
    # A fix of yours squashed into it from your working copy.
    "squash": f'echo fix > fix.txt && jj squash --from @ --into "{TASK_1}" '
              f'--use-destination-message fix.txt',
    # A change of yours slipped in under it: it is rebased.
    "rebase": f'jj new --no-edit --insert-before "{TASK_1}" -m mine',
}


def _assert_followed(work: Path, said: str, fake_claude: FakeClaude, what: str) -> None:
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3, said
    assert [t["attempts"] for t in tasks] == [1, 1, 1], said
    assert len(fake_claude.task_runs()) == 3, said
    assert "no longer in the history" not in said, said
    history = jj(work, "log", "--no-graph", "-r", "::@", "-T", 'change_id ++ "\\n"').split()
    assert all(t["change_id"] in history for t in tasks), said
    assert (work / "one.txt").exists() and (work / "three.txt").exists()
    if what == "squash":  # your fix is in task 1's change, and in no other task's
        assert jj(work, "diff", "--name-only", "-r", TASK_1).split() == ["fix.txt", "one.txt"]


@pytest.mark.parametrize("what", sorted(REWRITES))
def test_your_rewrite_of_a_task_between_runs(work: Path, fake_claude: FakeClaude,
                                             what: str) -> None:
    make_repo(work, "jj", plan=PLAN, message="start")  # the README a change of yours
    first = agent_loop(work, "--vcs", "jj", "--no-distill", "--task", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    proc.run(["sh", "-c", REWRITES[what]], cwd=work)
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    _assert_followed(work, said, fake_claude, what)


@pytest.mark.parametrize("what", sorted(REWRITES))
@pytest.mark.parametrize("workplace", ["lane", "checkout"])
def test_your_rewrite_of_a_task_mid_run(work: Path, fake_claude: FakeClaude, what: str,
                                        workplace: str) -> None:
    make_repo(work, "jj", plan=PLAN, message="start")  # the README a change of yours
    hook = f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {REWRITES[what]}; fi'
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--workplace", workplace,
                      "--on-task", hook)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    _assert_followed(work, said, fake_claude, what)


def test_your_fix_squashed_into_a_task_the_lane_landed_before_its_next_group(
        work: Path, fake_claude: FakeClaude) -> None:
    """The lane's workspace stands on the task you rewrote: jj rebased its @ with it, and the
    next group goes on there from the task as you left it."""
    make_repo(work, "jj", plan=PLAN, message="start")  # the README a change of yours
    (work / "tasks.md").write_text(PLAN.replace("- task two", "## Two\n- task two"))
    hook = f'if [ "$AGENT_LOOP_EVENT_TASK" = 1 ]; then {REWRITES["squash"]}; fi'
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--on-task", hook)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    _assert_followed(work, said, fake_claude, "squash")


def test_the_record_follows_the_commit_of_a_change_you_rewrote(work: Path,
                                                                fake_claude: FakeClaude) -> None:
    """git's record follows a rewritten commit to its new id; jj's change keeps its id, but its
    commit (what the dashboard shows the diff of, in a colocated repository) is a new one."""
    make_repo(work, "jj", plan=PLAN, message="start")  # the README a change of yours
    first = agent_loop(work, "--vcs", "jj", "--no-distill", "--task", "1")
    assert first.returncode == 0, first.stdout + first.stderr
    proc.run(["sh", "-c", REWRITES["describe"]], cwd=work)
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    task = state_of(work)["tasks"][0]
    now = jj(work, "log", "--no-graph", "-r", task["change_id"], "-T", "commit_id")
    assert task["commit_id"] == now.strip()


# Between runs, on task 1's change as git committed it and jj imported it.
IMPORTED_REWRITES = {
    "rebase": REWRITES["rebase"],
    # Its author made yours: a new commit, the same change.
    "metaedit": f'jj metaedit --update-author -r "{TASK_1}"',
}


def _pairs(work: Path) -> set[tuple[str, ...]]:
    """(change id, commit id) of every change in jj's history of the working copy."""
    return {tuple(line.split()) for line in jj(work, "log", "--no-graph", "-r", "::@", "-T",
                                               'change_id ++ " " ++ commit_id ++ "\\n"'
                                               ).splitlines()}


def _git_then_jj(tmp_path: Path, fake_claude: FakeClaude) -> Path:
    """Tasks 1 and 2 committed by a git run, `.agent-loop/` gone (a fresh clone), then a
    `--vcs jj` run that finds them done in git's history and does task 3."""
    work = done_by_git(tmp_path, PLAN.replace("- task three\n  FAKE: write three.txt three\n", ""))
    shutil.rmtree(work / ".agent-loop")
    (work / "tasks.md").write_text(PLAN)
    second = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = second.stdout + second.stderr
    assert second.returncode == 0, said
    assert "2 task(s) found done in the history" in said, said
    assert len(fake_claude.task_runs()) == 3, said
    return work


def _rewritten_then_run(work: Path, fake_claude: FakeClaude, what: str) -> None:
    """Your rewrite of task 1, then a run with a fourth task (it looks at the history before
    it): every task followed, as for tasks a jj run did, and `--status` says the same."""
    proc.run(["sh", "-c", IMPORTED_REWRITES[what]], cwd=work)
    (work / "tasks.md").write_text(PLAN + "- task four\n  FAKE: write four.txt four\n")
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    assert "no longer in the history" not in said and "change moved" not in said, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 4, said
    assert len(fake_claude.task_runs()) == 4, said
    assert {(t["change_id"], t["commit_id"]) for t in tasks} <= _pairs(work), (tasks, said)
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stderr
    assert "moved" not in status.stdout and "no longer" not in status.stdout, status.stdout


@pytest.mark.parametrize("what", sorted(IMPORTED_REWRITES))
def test_tasks_a_git_run_did_are_followed_as_jj_changes_once_jj_takes_over(
        tmp_path: Path, fake_claude: FakeClaude, what: str) -> None:
    """The first jj run found tasks 1 and 2 in git's history, before jj's repository was made
    from it: it records them by jj's change ids, not git's commit ids, so that your later jj
    rewrites of them are followed as any jj task's."""
    work = _git_then_jj(tmp_path, fake_claude)
    tasks = state_of(work)["tasks"]
    assert {(t["change_id"], t["commit_id"]) for t in tasks} <= _pairs(work), tasks
    _rewritten_then_run(work, fake_claude, what)


def test_git_ids_an_earlier_run_recorded_for_jj_changes_are_put_right(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """A state an earlier agent-loop left so (tasks 1 and 2 by their git commit ids): the next
    jj run names them by jj's change ids before it looks at the history."""
    work = _git_then_jj(tmp_path, fake_claude)
    path = work / ".agent-loop" / "state.json"
    state = orjson.loads(path.read_bytes())
    for task in state["tasks"][:2]:
        task["change_id"] = task["commit_id"]
    state["history_mark"] = None
    path.write_bytes(orjson.dumps(state))
    _rewritten_then_run(work, fake_claude, "metaedit")
