"""An agent that damages its own lane (removes its `.git` file, prunes or removes its worktree,
leaves its index locked, forgets its jj workspace) gets one line that names what it did, never
a traceback or a raw git/jj error; and its finished work, where it is still on disk, lands
without the agent being paid again (a forgotten jj workspace is brought back, and lands in the
same run). Acted out by the agent's own Bash tool, on its first run
only (a marker file), as in a hostile trial."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, make_repo, tasks_of
from tests.support.runner import agent_loop, plain_shell

pytestmark = pytest.mark.usefixtures("plain_shell")
assert plain_shell  # the fixture, imported for the mark above

PLAN = ("# P\n## A\n- [ ] a1\n  FAKE: bash {damage}\n  FAKE: write a1.txt A1\n"
        "- [ ] a2\n  FAKE: write a2.txt A2\n## B\n- [ ] b1\n  FAKE: write b1.txt B1\n")


def _project(tmp_path: Path, damage: str, kind: str = "git") -> Path:
    once = tmp_path / "once"
    work = make_repo(tmp_path / "work", "git" if kind == "git" else "colocated",
                     {"README": "base\n", ".gitignore": ".agent-loop/\n"})
    (work / "tasks.md").write_text(PLAN.format(
        damage=f"[ -e {once} ] || {{ touch {once}; {damage.format(root=work)}; }}"))
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    return work


def _no_traceback(out: str) -> None:
    assert "internal error" not in out and "Traceback" not in out, out


def _landed(work: Path) -> list[str]:
    return sorted(git(work, "ls-tree", "--name-only", "HEAD").split())


def _stopped(work: Path, *args: str) -> str:
    """A run that the damage stops (exit 1): what it said on stderr."""
    first = agent_loop(work, *args)
    assert first.returncode == 1, first.stdout + first.stderr
    return first.stderr


def _went_on(work: Path, *args: str) -> str:
    """The next run, which ends well: what it said on stdout."""
    again = agent_loop(work, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    return again.stdout


def _landed_unpaid(work: Path, out: str) -> None:
    """Every task landed, the damaging agent's finished work not paid again (`out`: the run)."""
    assert "the agent is not paid again" in out
    assert _landed(work) == [".gitignore", "README", "a1.txt", "a2.txt", "b1.txt", "tasks.md"]


@pytest.mark.parametrize("damage", [
    "rm -f .git; git -C {root} worktree prune",
    "for w in $(git -C {root} worktree list --porcelain | grep '^worktree' | cut -d' ' -f2 "
    "| grep lanes); do git -C {root} worktree remove --force $w; done",
], ids=["prune", "wtremove"])
def test_a_lane_pruned_or_removed_by_its_agent_is_one_line_not_a_crash(
        tmp_path: Path, fake_claude: FakeClaude, damage: str) -> None:
    work = _project(tmp_path, damage)
    done = agent_loop(work)
    _no_traceback(done.stdout + done.stderr)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "A stopped: " in done.stdout and "removed" in done.stderr
    assert "b1.txt" in _landed(work)  # the other group goes on
    assert tasks_of(work)[0]["status"] == "interrupted"


def test_a_lock_its_agent_left_in_the_lane_is_removed_and_the_task_lands(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = _project(tmp_path, "touch $(git rev-parse --git-dir)/index.lock")
    done = agent_loop(work)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "index.lock" in done.stdout and "removed" in done.stdout
    assert "File exists" not in done.stdout + done.stderr
    assert _landed(work) == [".gitignore", "README", "a1.txt", "a2.txt", "b1.txt", "tasks.md"]
    assert len(fake_claude.task_runs()) == 3  # one agent run a task, none paid again


@pytest.mark.parametrize("damage", ["rm -f .git", "rm -f .git; git -C {root} worktree prune"],
                         ids=["dotgit", "prune"])
def test_a_finished_agents_work_in_a_lane_it_unregistered_lands_unpaid(
        tmp_path: Path, fake_claude: FakeClaude, damage: str) -> None:
    work = _project(tmp_path, damage)
    said = _stopped(work)
    # Only its .git file went: said as that, not as the whole worktree removed.
    assert "the lane's .git file" in said and "lane's worktree" not in said
    assert "a1.txt) is kept in commit" in said
    _landed_unpaid(work, _went_on(work))
    assert (work / "a1.txt").read_text() == "A1\n"
    assert len(fake_claude.task_runs()) == 3  # a1's agent ran once


def test_a_lane_its_agent_removed_took_the_work_and_says_the_agent_runs_again(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = _project(tmp_path, "git -C {root} worktree remove --force $PWD; cd {root}")
    said = _stopped(work)
    assert "was removed (by its agent, or from outside" in said
    assert "went with the lane's folder, so the task's agent runs again" in said
    _went_on(work)
    assert len(fake_claude.task_runs()) == 4  # a1's agent paid again: its work was lost


def test_a_finished_agents_work_in_a_lane_it_switched_lands_unpaid_after_the_repair(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = _project(tmp_path, "git switch -q -c agent-own-branch")
    assert "a1.txt) is kept in commit" in _stopped(work)
    lane = next((work / ".agent-loop" / "lanes").iterdir())
    git(lane, "switch", "-q", f"agent-loop/{lane.name}")  # the repair the stop names
    _landed_unpaid(work, _went_on(work))
    assert len(fake_claude.task_runs()) == 3


@pytest.mark.parametrize("damage", [
    "echo ../../../nonexist > $(git rev-parse --git-dir)/commondir",
    ": > $(git rev-parse --git-dir)/commondir",
], ids=["elsewhere", "empty"])
def test_a_lane_registration_its_agent_damaged_is_said_then_repaired_and_lands_unpaid(
        tmp_path: Path, fake_claude: FakeClaude, damage: str) -> None:
    """The agent writes a wrong path (or nothing) into its lane's `commondir`: git then takes
    the lane for no repository at all. The stop says so in one line (not git's raw "not a git
    repository"), keeping the finished work aside; the next run writes the registration back
    (it stopped every later run with GitPython's WorkTreeRepositoryUnsupported) and lands it,
    the agent not paid again."""
    work = _project(tmp_path, damage)
    said = _stopped(work)
    _no_traceback(said)
    assert "worktree registration" in said and "was damaged (by its agent" in said, said
    assert "not a git repository" not in said
    out = _went_on(work)
    # An emptied one fails `git worktree list` itself, which writes it back before the sweep.
    assert "repaired the worktree registration of lane" in out or damage.startswith(":")
    _landed_unpaid(work, out)
    assert len(fake_claude.task_runs()) == 3  # a1's agent ran once


@pytest.mark.parametrize("forget", [
    "jj workspace forget",
    # every workspace, your checkout's `default` too, as a hostile agent did
    "jj workspace forget $(jj workspace list -T 'name ++ \" \"')",
], ids=["own", "all"])
@pytest.mark.parametrize("parallel", ["1", "2"])
def test_a_finished_agents_work_in_a_jj_workspace_it_forgot_lands_unpaid(
        tmp_path: Path, fake_claude: FakeClaude, jj_bin: str, forget: str, parallel: str
) -> None:
    # What it wrote before the forget (snapshotted into the task's change by its `jj status`)
    # and after it (on disk only) alike.
    work = _project(tmp_path, f"echo early > early.txt; jj status >/dev/null; {forget}",
                    kind="colocated")
    out = _went_on(work, "--vcs", "jj", "--parallel", parallel)
    _no_traceback(out)
    assert "doesn't have a working-copy commit" not in out, out
    assert "jj workspace was forgotten" in out and "jj op revert" in out, out
    assert len(fake_claude.task_runs()) == 3, out  # a1's agent ran once
    assert "early.txt" in jj(work, "diff", "--name-only", "-r", "::@-")
    jj(work, "bookmark", "set", "main", "-r", "@-")
    assert _landed(work) == [".gitignore", "README", "a1.txt", "a2.txt", "b1.txt", "early.txt",
                             "tasks.md"], out
    assert "jj-forgotten" not in str(tasks_of(work)), out


def _developer_runs(fake_claude: FakeClaude) -> int:
    """The agent's runs of tasks as developer (a reviewer's call names its read-only tools)."""
    return sum(1 for c in fake_claude.task_runs() if "--tools" not in c["argv"])


@pytest.mark.parametrize("damage", ["rm -f .git", "rm -f .git; git -C {root} worktree prune"],
                         ids=["dotgit", "prune"])
@pytest.mark.parametrize("step", ["--review", "--require-changes"])
def test_a_finished_agents_work_in_a_lane_it_unregistered_is_kept_before_the_review_too(
        tmp_path: Path, fake_claude: FakeClaude, step: str, damage: str) -> None:
    # The review's diff (or --require-changes' look) meets the lane first, not the landing.
    work = _project(tmp_path, damage)
    said = _stopped(work, "--no-distill", step)
    _no_traceback(said)
    assert "a1.txt) is kept in commit" in said, said
    _landed_unpaid(work, _went_on(work, "--no-distill", step))
    assert _developer_runs(fake_claude) == 3  # a1's agent ran once


@pytest.mark.parametrize("step", ["--review", "--require-changes"])
def test_a_jj_workspace_its_agent_forgot_before_the_review_is_brought_back_too(
        tmp_path: Path, fake_claude: FakeClaude, jj_bin: str, step: str) -> None:
    work = _project(tmp_path, "jj workspace forget", kind="colocated")
    out = _went_on(work, "--vcs", "jj", "--no-distill", step)
    assert "jj workspace was forgotten" in out, out
    assert _developer_runs(fake_claude) == 3, out
    jj(work, "bookmark", "set", "main", "-r", "@-")
    assert _landed(work) == [".gitignore", "README", "a1.txt", "a2.txt", "b1.txt",
                             "tasks.md"], out


@pytest.mark.parametrize("which", ["agent-loop-", "."], ids=["lane", "yours-too"])
def test_a_jj_workspace_forgotten_between_tasks_stops_with_a_line_that_works_as_printed(
        work: Path, fake_claude: FakeClaude, jj_bin: str, which: str) -> None:
    """The lane's workspace (and yours too) forgotten from your checkout once task 1 is done
    (an on-task hook here): the stop said "`jj op log` shows that operation, `jj op revert
    <its id>` undoes it", a placeholder for a command. It now names the forget's operation;
    run as printed in your workspace, the line brings the workspaces back with nothing
    divergent, no file gone and no change of yours left beside the line, and the next run
    finishes."""
    from tests.vcs.test_history_guard import follow_the_line

    init_repo(work, "jj")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    hook = ('[ "$AGENT_LOOP_EVENT_TASK" = 1 ] && jj --ignore-working-copy workspace forget '
            f"$(jj --ignore-working-copy workspace list -T 'name ++ \"\\n\"' | grep -e {which})")
    done = agent_loop(work, "--no-distill", "--vcs", "jj", "--on-task", hook)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "was forgotten" in done.stderr and "<its id>" not in done.stderr, done.stderr
    follow_the_line(work, done.stderr, tasks_of(work)[0]["change_id"])
    again = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed"] * 2
    assert (work / "a.txt").exists() and (work / "b.txt").exists()
    assert not jj(work, "log", "--no-graph", "-r", "mutable() ~ ::@", "-T", "change_id")


def test_an_agent_that_commits_on_a_branch_of_its_own_gets_a_repair_that_keeps_its_commits(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The agent commits its work on a branch of its own, then leaves its lane on a detached
    HEAD. The stop line's repair (`git -C LANE switch agent-loop/…`) took the lane back to
    where its branch was, without the agent's commit: own.txt never landed, the next run paid
    the agent for the task again from scratch. The repair printed now keeps the commit."""
    work = _project(tmp_path, "printf 'own\\n' > own.txt && git switch -q -c agent-own && "
                              "git add -A && git commit -qm own && git switch -q --detach")
    said = _stopped(work)
    assert "the agent checked out a detached HEAD in its lane" in said, said
    repair = [c for c in re.findall(r"`([^`]+)`", said) if " switch " in c][-1]
    subprocess.run(shlex.split(repair), cwd=work, check=True, capture_output=True)
    _went_on(work)
    assert "own.txt" in _landed(work), _landed(work)
    assert (work / "own.txt").read_text() == "own\n"


@pytest.mark.parametrize("at", ["HEAD", "HEAD~1"], ids=["on-top", "split-off"])
def test_an_agent_that_commits_on_a_detached_head_gets_a_repair_that_keeps_its_commits(
        tmp_path: Path, fake_claude: FakeClaude, at: str) -> None:
    """The agent detaches HEAD in its lane (at its branch's tip, or at an older commit, so
    that its commit splits off the lane's branch) and commits its work there. Split off, the
    stop line's repair was a plain `git -C LANE switch agent-loop/…`, which left the commit in
    the reflog only: own.txt never landed, and the next run's agent did the task again from
    scratch. The repair printed now takes the commit onto the lane's branch (a rebase onto it
    first, when split off), as for a branch of the agent's own."""
    work = _project(tmp_path, f"git switch -q --detach {at} && printf 'own\\n' > own.txt && "
                              "git add -A && git commit -qm own")
    said = _stopped(work)
    assert "the agent checked out a detached HEAD in its lane" in said, said
    assert "its 1 commit(s) there" in said, said
    line = said.split("see and repair it with ", 1)[1]
    for command in re.findall(r"`([^`]+)`", line):
        subprocess.run(shlex.split(command), cwd=work, check=True, capture_output=True)
    _went_on(work)
    assert "own.txt" in _landed(work), _landed(work)
    assert (work / "own.txt").read_text() == "own\n"


def test_an_agent_that_deletes_its_lanes_branch_from_a_detached_head_gets_a_repair_that_works(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The agent detaches HEAD, deletes its lane's branch, and commits its work. The repair
    printed was `git -C LANE switch agent-loop/…`, which fails (no such branch); the next
    run made the lane again, paid the agent for the task again from scratch, and left its
    commit on no ref. The repair printed now makes the branch again at the lane's HEAD, its
    commit with it, and the task goes on from there."""
    work = _project(tmp_path, "b=$(git symbolic-ref --short HEAD) && git switch -q --detach && "
                              "git branch -q -D $b && printf 'own\\n' > own.txt && "
                              "git add -A && git commit -qm own")
    said = _stopped(work)
    assert "the agent checked out a detached HEAD in its lane" in said, said
    # Run again without the repair: the lane is not made again over the commit.
    paid = len(fake_claude.task_runs())
    assert _stopped(work) == said
    assert len(fake_claude.task_runs()) == paid
    line = said.split("see and repair it with ", 1)[1]
    for command in re.findall(r"`([^`]+)`", line):
        subprocess.run(shlex.split(command), cwd=work, check=True, capture_output=True)
    out = _went_on(work)
    assert "the task goes on from them" in out, out  # not done again from scratch
    assert _landed(work) == [".gitignore", "README", "a1.txt", "a2.txt", "b1.txt", "own.txt",
                             "tasks.md"]
    assert (work / "own.txt").read_text() == "own\n"


def test_a_merge_its_agent_left_stopped_on_a_conflict_in_its_lane_lands_no_marker(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The agent merges a branch of its own into its lane and leaves the merge stopped on a
    conflict. Task a1 completed with README holding git's <<<<<<< markers, landed so on your
    branch; the next task's commit took the merge's MERGE_HEAD as a second parent, bringing the
    agent's side branch into your history as "1 file changed". The group stops on it now, with
    the command that ends the merge; done as printed, the next run lands no marker."""
    work = _project(tmp_path, "B=$(git branch --show-current); git switch -q -c side && "
                              "echo side > README && git commit -qam side && git switch -q $B && "
                              "echo lane > README && git commit -qam lane && "
                              "{{ git merge side >/dev/null 2>&1 || true; }}")
    said = _stopped(work)
    assert "a merge" in said and "in its lane" in said, said
    repair = [c for c in re.findall(r"`([^`]+)`", said) if c.endswith("merge --abort")]
    assert repair, said
    subprocess.run(shlex.split(repair[-1]), cwd=work, check=True, capture_output=True)
    _went_on(work)
    assert "<<<<<<<" not in git(work, "show", "HEAD:README")
    assert "side" not in git(work, "log", "--format=%s", "main").split(), \
        git(work, "log", "--format=%s %p", "main")
    assert "a1.txt" in _landed(work)


def test_a_git_am_its_agent_left_stopped_in_its_lane_is_ended_by_the_repair_printed(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The agent applies a patch with `git am` and leaves it stopped on a conflict. git keeps
    an am session in the same rebase-apply folder a rebase uses: the stop line called it a
    rebase and printed `git rebase --abort`, which git refuses ("It looks like 'git am' is in
    progress. Cannot rebase."), so the repair done as printed left the lane stopped."""
    work = _project(tmp_path, "B=$(git branch --show-current); git switch -q -c side && "
                              "echo side > README && git commit -qam side && "
                              "git format-patch -q -1 -o {root}/../patches && git switch -q $B && "
                              "echo lane > README && git commit -qam lane && "
                              "{{ git am -q {root}/../patches/*.patch >/dev/null 2>&1 || true; }}")
    said = _stopped(work)
    assert "in its lane" in said and "a rebase" not in said, said
    repair = [c for c in re.findall(r"`([^`]+)`", said) if c.endswith("--abort")]
    assert repair, said
    subprocess.run(shlex.split(repair[-1]), cwd=work, check=True, capture_output=True)
    _went_on(work)
    assert "side" not in git(work, "log", "--format=%s", "main").split()
    assert "a1.txt" in _landed(work)


@pytest.mark.parametrize("between", ["git commit -qam lane", "git add README"])
def test_a_stash_pop_its_agent_left_conflicted_in_its_lane_lands_no_marker(
        tmp_path: Path, fake_claude: FakeClaude, between: str) -> None:
    """The agent stashes its edit of README, commits (or stages) another one and pops the
    stash: git leaves README with its conflict markers and unmerged in the index, but no
    command "in progress" (no MERGE_HEAD, no rebase folder). Task a1 completed with the
    markers, landed so on your branch. The group stops on it now, naming the file and the
    command that ends it; done as printed, the next run lands no marker."""
    work = _project(tmp_path, "echo mine > README && git stash -q && echo lane > README && "
                              f"{between} && {{{{ git stash pop >/dev/null 2>&1 || true; }}}}")
    said = _stopped(work)
    assert "the agent left README unmerged" in said, said
    repair = [c for c in re.findall(r"`([^`]+)`", said) if " restore " in c]
    assert repair and repair[-1].endswith(" -- README"), said
    subprocess.run(shlex.split(repair[-1]), cwd=work, check=True, capture_output=True)
    _went_on(work)
    assert "<<<<<<<" not in git(work, "show", "HEAD:README")
    assert "a1.txt" in _landed(work)


def _error(said: str) -> list[str]:
    return [line for line in said.splitlines() if line.startswith("agent-loop: error:")]


@pytest.mark.parametrize("between", ["git commit -qam lane", "git add README"])
def test_a_stash_pop_left_conflicted_in_its_lane_stops_a_run_again_before_its_agent(
        tmp_path: Path, fake_claude: FakeClaude, between: str) -> None:
    """The stop names README and the `git restore` that ends it. Run again without that
    repair, the task was resumed and its agent paid again, only for the run to stop on the
    same line. The run now stops where it opens the lane it kept, before any agent starts, on
    the same line and repair, the lane left exactly as it was (the repair's LANE is there); done
    as printed, the next run lands no marker."""
    work = _project(tmp_path, "echo mine > README && git stash -q && echo lane > README && "
                              f"{between} && {{{{ git stash pop >/dev/null 2>&1 || true; }}}}")
    said = _stopped(work)
    repair = [c for c in re.findall(r"`([^`]+)`", said) if " restore " in c][-1]
    lane = Path(shlex.split(repair)[2])
    paid = len(fake_claude.task_runs())

    def looks() -> tuple[str, ...]:
        return (git(lane, "rev-parse", "HEAD"), git(lane, "ls-files", "--stage"),
                git(lane, "status", "--porcelain"), (lane / "README").read_text())
    before = looks()
    again = _stopped(work)
    assert _error(again) == _error(said) != [], again
    assert len(fake_claude.task_runs()) == paid, again  # no agent started
    assert looks() == before
    subprocess.run(shlex.split(repair), cwd=work, check=True, capture_output=True)
    _went_on(work)
    # a1's agent again (the repair put README back as HEAD has it, its edit with it), then a2.
    assert len(fake_claude.task_runs()) == paid + 2
    assert "<<<<<<<" not in git(work, "show", "HEAD:README")
    assert "a1.txt" in _landed(work)


@pytest.mark.parametrize("between", ["git commit -qam lane", "git add README"])
def test_a_stash_pop_its_agent_left_conflicted_in_your_checkout_lands_no_marker(
        tmp_path: Path, fake_claude: FakeClaude, between: str) -> None:
    """The same in your checkout (`--workplace checkout`): task a1 completed with README's
    markers on your branch. Now the run stops on a line naming README, its work rolled back
    (kept, as any stopped attempt's), never brought back as finished: the next run runs its
    agent again and lands no marker."""
    work = _project(tmp_path, "echo mine > README && git stash -q && echo lane > README && "
                              f"{between} && {{{{ git stash pop >/dev/null 2>&1 || true; }}}}")
    said = _stopped(work, "--workplace", "checkout")
    assert "the agent left README unmerged in your checkout with no merge or other command " \
        "under way" in said and "runs its agent again" in said, said
    assert ", say" not in said, said
    assert "<<<<<<<" not in (work / "README").read_text()
    _went_on(work, "--workplace", "checkout")
    assert "<<<<<<<" not in git(work, "show", "HEAD:README")
    assert "a1.txt" in _landed(work)
    assert len(fake_claude.task_runs()) == 4  # a1's agent twice


def test_a_merge_its_agent_left_conflicted_in_your_checkout_is_said_as_one_with_its_repair(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`--workplace checkout`: the agent merges a branch of its own and leaves the merge
    stopped on a conflict. The stop called it "a `git stash pop` that conflicted, say" and
    promised that the next run runs its agent again, while git still had the merge under way
    (its files put back, MERGE_HEAD left): the next run refused with `git merge --continue`
    among its repairs, which commits the agent's side branch into your history. The line now
    says a merge, and the `git merge --quit` that ends it leaving the files as they are; run
    again before it, the run stops before any agent, naming the same command; done as
    printed, the next run runs a1's agent again and lands neither a marker nor the side."""
    work = _project(tmp_path, "B=$(git branch --show-current); git switch -q -c side && "
                              "echo side > README && git commit -qam side && git switch -q $B && "
                              "echo lane > README && git commit -qam lane && "
                              "{{ git merge side >/dev/null 2>&1 || true; }}")
    said = _stopped(work, "--workplace", "checkout")
    assert "the agent left a merge stopped on a conflict in your checkout" in said, said
    assert "stash" not in said, said
    repair = f"git -C {work} merge --quit"
    assert f"`{repair}`" in said, said
    assert "<<<<<<<" not in (work / "README").read_text()  # its files put back, as it says
    paid = len(fake_claude.task_runs())
    again = _stopped(work, "--workplace", "checkout")
    assert f"`{repair}`" in again and "finish it" not in again, again
    assert len(fake_claude.task_runs()) == paid  # no agent started
    subprocess.run(shlex.split(repair), cwd=work, check=True, capture_output=True)
    _went_on(work, "--workplace", "checkout")
    assert "<<<<<<<" not in git(work, "show", "HEAD:README")
    assert "side" not in git(work, "log", "--format=%s", "main").split(), \
        git(work, "log", "--format=%s %p", "main")
    assert "a1.txt" in _landed(work)
    assert len(fake_claude.task_runs()) == paid + 3  # a1's agent again, a2, b1


@pytest.mark.parametrize("repair", [False, True], ids=["reset-kept", "cherry-picked"])
def test_a_finished_agents_work_is_kept_when_you_reset_a_landed_task_off_your_branch(
        tmp_path: Path, fake_claude: FakeClaude, repair: bool) -> None:
    """While a2's agent works, you (no agent's mark in the reflog) `git reset --hard HEAD~1`
    your branch to drop a1, which landed. The run stops when a2's agent has finished (a commit
    this lane landed is gone): the stop kept nothing of a2's finished work, so the next run,
    with your reset kept or a1 picked back as the stop says, rolled it back and paid a2's
    agent again. Its work is kept now, and lands unpaid either way."""
    work = make_repo(tmp_path / "work", "git", {"README": "base\n", ".gitignore": ".agent-loop/\n"})
    # a1 lands beside a2's start: the reset waits until it is on your branch.
    reset = (f"until git -C {work} log -1 --format=%s | grep -q a1; do sleep 0.05; done; "
             f"env -u GIT_REFLOG_ACTION git -C {work} reset -q --hard HEAD~1")
    (work / "tasks.md").write_text(f"# P\n## A\n- [ ] a1\n  FAKE: write a1.txt A1\n"
                                   f"- [ ] a2\n  FAKE: bash {reset}\n  FAKE: write a2.txt A2\n"
                                   "- [ ] a3\n  FAKE: write a3.txt A3\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    said = _stopped(work)
    assert "which this lane landed on main, is no longer on it" in said, said
    assert "a2.txt) is kept in commit" in said, said
    if repair:
        picked = re.search(r"`(git cherry-pick [0-9a-f]+)`", said)
        assert picked is not None, said
        subprocess.run(shlex.split(picked.group(1)), cwd=work, check=True, capture_output=True)
    out = _went_on(work)
    assert "the agent is not paid again" in out, out
    # The lane's roll-back keeps a2's files before they come back; the `git show` it prints
    # showed the lane's own commits instead, kept under the same ref after it (your reset).
    shown = re.search(r"its files are kept in commit \w+ \(`(git show [^`]+)`\)", out)
    assert shown is not None, out
    assert "a2.txt" in git(work, *shlex.split(shown.group(1))[1:], "--stat"), shown.group(1)
    landed = [".gitignore", "README", "a2.txt", "a3.txt", "tasks.md"]
    assert _landed(work) == sorted(landed + ["a1.txt"] * repair)
    assert (work / "a2.txt").read_text() == "A2\n"
    assert len(fake_claude.task_runs()) == 3  # a2's agent ran once
