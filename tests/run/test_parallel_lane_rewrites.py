"""An agent that rewrites its own lane's history while groups run in parallel: another group
lands beside it all the while. The rewrite (an amend of your commit, a squash, a rebase that
drops it) stops its group and is set aside by the next run, which lands the task's own file on
your branch; a lane that brought your branch in (the agent's `git merge main`, `git pull
--rebase`, `git reset --keep main`) lands its task's own change only, never the other group's
work again on top of what came after it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, state_of
from tests.support.runner import agent_loop

REWRITES = {
    "amend": "git commit -q --amend -am amended-in-lane",
    "squash": "git add -A; git reset -q --soft HEAD~1; git commit -qm squashed-in-lane",
    "rebase": "git add -A; git commit -qm lane-own; git rebase -q --onto HEAD~2 HEAD~1",
}


def _until(condition: str) -> str:
    """A FAKE bash line that waits (20 s at most) until the shell `condition` holds."""
    return f"  FAKE: bash for i in $(seq 400); do {condition} && break; sleep 0.05; done\n"


def _planned(work: Path, plan: str) -> None:
    """`plan` as tasks.md, committed."""
    (work / "tasks.md").write_text(plan)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")


def _ran_in_parallel(work: Path, plan: str) -> tuple[int, str]:
    """`plan` committed and run by git in two lanes: the run's exit code and all it said."""
    _planned(work, plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2")
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("rewrite", sorted(REWRITES))
@pytest.mark.parametrize("task", ["b1", "b2"])
def test_an_agents_rewrite_of_its_lane_beside_another_group_is_set_aside_and_its_task_lands(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, rewrite: str, task: str) -> None:
    init_repo(work, "git")
    once = tmp_path / "once"
    hostile = f"  FAKE: bash test -e {once} || {{ touch {once}; {REWRITES[rewrite]}; }}\n"
    _planned(work,
             "## B\n- b1\n  FAKE: write b1.txt b1\n" + (hostile if task == "b1" else "")
             + "- b2\n  FAKE: write b2.txt b2\n" + (hostile if task == "b2" else "")
             + "- b3\n  FAKE: write b3.txt b3\n\n"
             "## C\n- c1\n  FAKE: write c1.txt c1\n  FAKE: pause 0.3\n"
             "- c2\n  FAKE: write c2.txt c2\n  FAKE: pause 0.3\n")
    (work / "mine.txt").write_text("mine\n")
    git(work, "add", "mine.txt")
    git(work, "commit", "-qm", "my work")
    args = ["--vcs", "git", "--no-distill", "--parallel", "2"]
    first = agent_loop(work, *args)
    out = first.stdout + first.stderr
    assert first.returncode != 0 and once.exists(), out
    assert "the agent moved its lane's branch" in out
    assert "my work" in git(work, "log", "--format=%s")  # your commit stays as it was
    again = agent_loop(work, *args)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    assert "HEAD has moved since" not in out
    # The files set aside are named by their commit (the ref that keeps them moves on with
    # the next thing kept: agentloop.vcs.git.recover).
    assert "the lane is back on that commit" in out and re.search(
        r"its files are kept in commit ([0-9a-f]{12}) \(`git show \1`\)", out), out
    subjects = git(work, "log", "--format=%s")
    assert "-in-lane" not in subjects and "lane-own" not in subjects
    # One commit per task, each its own file, your commit under them all.
    committed = [files for _, _, files in git_commits(work)]
    assert sorted(f for files in committed[-5:] for f in files) == \
        ["b1.txt", "b2.txt", "b3.txt", "c1.txt", "c2.txt"]
    assert all(len(files) == 1 for files in committed[-5:]), committed
    assert git(work, "log", "-1", "--format=%s", "HEAD~5").strip() == "my work"
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}
    for name in ("b1", "b2", "b3", "c1", "c2"):
        assert (work / f"{name}.txt").read_text().strip() == name
    assert not git(work, "status", "--porcelain", "--untracked-files=no").strip()


BRINGS_MAIN_IN = {
    "merge": "git add -A; git commit -qm lane-own; git merge -q --no-edit main",
    "pull --rebase": "git add -A; git commit -qm lane-own; git pull -q --rebase . main",
    "reset --keep": "git reset -q --keep main",
}


@pytest.mark.parametrize("how", sorted(BRINGS_MAIN_IN))
def test_a_lane_that_brought_your_branch_in_lands_its_own_change_only(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, how: str) -> None:
    """Task b2's agent brings your branch, where group C's c1 landed meanwhile, into its lane;
    then C's c2 changes c1.txt again. b2's commit holds b2.txt alone: not c1.txt as c1 left
    it, which its landing would meet as a change of its own against c2's."""
    init_repo(work, "git")
    began, pulled = tmp_path / "began", tmp_path / "pulled"
    code, out = _ran_in_parallel(work, (
        "## B\n- b1\n  FAKE: write b1.txt b1\n"
        f"- b2\n  FAKE: bash touch {began}\n  FAKE: write b2.txt b2\n"
        + _until("git cat-file -e main:c1.txt 2>/dev/null")
        + f"  FAKE: bash {BRINGS_MAIN_IN[how]}\n  FAKE: bash touch {pulled}\n"
        + _until('[ "$(git show main:c1.txt 2>/dev/null)" = two ]')
        + "- b3\n  FAKE: write b3.txt b3\n\n"
        "## C\n- c1\n" + _until(f"test -e {began}") + "  FAKE: write c1.txt one\n"
        "- c2\n" + _until(f"test -e {pulled}") + "  FAKE: write c1.txt two\n"))
    assert code == 0, out
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}, out
    by_subject = {s: files for _, s, files in git_commits(work)}
    assert by_subject["agent-loop: B / b2"] == ["b2.txt"], by_subject
    assert (work / "c1.txt").read_text().strip() == "two"  # c2's change stays
    assert git(work, "show", "main:c1.txt").strip() == "two"
    task2 = next(t for t in state_of(work)["tasks"] if t["summary"] == "b2")
    assert git(work, "diff-tree", "--no-commit-id", "--name-only", "-r",
               task2["change_id"]).split() == ["b2.txt"]


def test_a_lane_whose_merge_of_your_branch_kept_its_own_side_conflicts_not_overwrites(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Task a1's agent edits line 1 of f.txt, then brings your branch in with `git merge -X
    ours main` after group B's b1 landed its own line 1 there: the merge keeps the lane's line,
    undoing b1's. a1's landing meets b1's line as a conflict (the group's session is asked to
    resolve it); b1's line is never overwritten without a word."""
    init_repo(work, "git")
    (work / "f.txt").write_text("one\ntwo\nthree\n")
    git(work, "add", "f.txt")
    git(work, "commit", "-qm", "f")
    _, out = _ran_in_parallel(work, (
        "## A\n- a1\n" + _until("git show main:f.txt | grep -q ONE-by-B")
        + "  FAKE: bash printf 'ONE-by-A\\ntwo\\nthree\\n' > f.txt; git add f.txt; "
        "git commit -qm lane-own; git merge -q -X ours main -m merged\n\n"
        "## B\n- b1\n  FAKE: write f.txt ONE-by-B\n"))
    assert "task 1 conflicts with the main line in f.txt" in out, out
    assert git(work, "show", "main:f.txt").splitlines()[0] == "ONE-by-B", out
    status = {t["summary"]: t["status"] for t in state_of(work)["tasks"]}
    assert status == {"a1": "conflicted", "b1": "completed"}, out


def test_your_branch_renamed_while_a_lane_agent_committed_lands_there(
        work: Path, fake_claude: FakeClaude) -> None:
    """While task a1's agent commits in its lane, you rename your branch (a git run outside
    the agent): a1's change is committed from where it began and lands on the renamed branch,
    where the finish read the old name and stopped on git's "Not a valid object name"."""
    init_repo(work, "git")
    code, out = _ran_in_parallel(work, (
        "## A\n- a1\n  FAKE: bash echo one > one.txt && git add one.txt && "
        # Until it takes: a rename meeting group B's landing of `main` fails on its ref's lock.
        "git commit -qm 'agent: one' && for i in $(seq 100); do env -u GIT_REFLOG_ACTION "
        f"git -C {work} branch -m main trunk && break; sleep 0.05; done\n\n"
        "## B\n- b1\n  FAKE: write two.txt two\n"))
    assert code == 0, out
    assert "branch main was renamed to trunk" in out and "merge-base" not in out, out
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}, out
    by_subject = {s: files for _, s, files in git_commits(work)}
    assert by_subject["agent-loop: A / a1"] == ["one.txt"], by_subject
    assert by_subject["agent-loop: B / b1"] == ["two.txt"], by_subject
    assert git(work, "show", "trunk:one.txt").strip() == "one"
