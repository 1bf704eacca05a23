"""An agent that rewrites history: the run notices before it builds the next task on it, and
says how to get the lost work back. Real git and jj, agent-loop as a process, the fake claude.

In your checkout (`--workplace checkout`) the agent rewrites your branch, and the history check
says so; in a lane of its own (the default) it rewrites its lane's branch, or jj's shared
history, and the lane's guard (agentloop.vcs.breach) stops the group with what to run: your
branch and your checkout stay as they were in both."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, make_repo, state_of
from tests.support.runner import agent_loop


def test_git_reset_hard_by_the_agent_stops_the_run_and_loses_nothing(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: bash git reset -q --hard HEAD~1\n"
                                   "  FAKE: write b.txt B\n- three\n  FAKE: write c.txt C\n")
    done = agent_loop(work, "--no-distill", "--vcs", "git", "--workplace", "checkout")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the agent moved the branch back" in done.stderr and "git reset --hard" in done.stderr
    tasks = state_of(work)["tasks"]
    one = tasks[0]["change_id"]
    # Task 2 was not committed with task 1's file deleted; task 3 never ran on that history.
    # The run is over: task 2's open attempt is interrupted, not `running`, and the closing
    # line counts what --status counts.
    assert [t["status"] for t in tasks] == ["completed", "interrupted", "pending"]
    said = agent_loop(work, "--status")
    assert "1 completed, 1 interrupted, 1 pending" in said.stdout, said.stdout
    assert "1 completed, 1 interrupted, 1 pending" in done.stdout + done.stderr
    assert "running" not in state_of(work)["tasks"][1]["status"]
    assert one in git(work, "reflog", "--format=%H")
    git(work, "reset", "-q", "--hard", one)
    # The user takes the hostile step out of the task and goes on.
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(
        "  FAKE: bash git reset -q --hard HEAD~1\n", ""))
    again = agent_loop(work, "--no-distill", "--vcs", "git", "--workplace", "checkout")
    assert again.returncode == 0, again.stdout + again.stderr
    assert git(work, "ls-files").split() == ["README.md", "a.txt", "b.txt", "c.txt"]
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3


def test_git_reset_hard_by_the_agent_in_its_lane_stops_the_run_and_leaves_your_branch(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: bash git reset -q --hard HEAD~1\n"
                                   "  FAKE: write b.txt B\n- three\n  FAKE: write c.txt C\n")
    done = agent_loop(work, "--no-distill", "--vcs", "git")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the agent moved its lane's branch" in done.stderr and "reset --hard" in done.stderr
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "interrupted", "pending"]
    # Your branch and checkout: task 1 on it, nothing of task 2, nothing uncommitted.
    assert git(work, "log", "-1", "--format=%H") == tasks[0]["change_id"] + "\n"
    assert git(work, "ls-files").split() == ["README.md", "a.txt"]
    assert git(work, "status", "--porcelain", "--untracked-files=all") == "?? tasks.md\n"
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(
        "  FAKE: bash git reset -q --hard HEAD~1\n", ""))
    again = agent_loop(work, "--no-distill", "--vcs", "git")
    assert again.returncode == 0, again.stdout + again.stderr
    assert git(work, "ls-files").split() == ["README.md", "a.txt", "b.txt", "c.txt"]
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3


@pytest.mark.parametrize("workplace, said", [("checkout", "switched HEAD"),
                                             ("lane", "the agent checked out elsewhere")])
def test_git_checkout_b_by_the_agent_stops_the_run(work: Path, fake_claude: FakeClaude,
                                                   workplace: str, said: str) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: bash git checkout -q -b elsewhere\n"
                                   "  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "git", "--workplace", workplace)
    assert done.returncode == 1 and said in done.stderr, done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["interrupted", "pending"]
    if workplace == "lane":  # in your checkout, the agent's branch is what you are on now
        assert git(work, "symbolic-ref", "HEAD") == "refs/heads/main\n"


def test_jj_abandon_of_an_earlier_task_stops_the_run(work: Path, fake_claude: FakeClaude,
                                                    jj_bin: str) -> None:
    init_repo(work, "jj")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: bash jj --no-pager abandon @-\n"
                                   "  FAKE: write b.txt B\n- three\n  FAKE: write c.txt C\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj", "--workplace", "checkout")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the change of task 1" in done.stderr and "jj op restore" in done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]][2] == "pending"
    assert jj(work, "op", "log", "--no-graph", "-T", 'description ++ "\\n"')


def test_jj_abandon_of_an_earlier_task_in_a_lane_stops_the_run(work: Path, fake_claude: FakeClaude,
                                                              jj_bin: str) -> None:
    init_repo(work, "jj")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: bash jj --no-pager abandon @-\n"
                                   "  FAKE: write b.txt B\n- three\n  FAKE: write c.txt C\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert done.returncode == 1, done.stdout + done.stderr
    one = state_of(work)["tasks"][0]["change_id"]
    # jj's history is one for every workspace: the lane's guard names the change and the way
    # back (the operation log), and nothing of task 2 lands.
    assert f"change {one[:12]}, which this lane landed, is no longer on the main line" in \
        done.stderr and "jj --ignore-working-copy op restore" in done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]][1:] == ["interrupted", "pending"]
    assert not (work / "b.txt").exists()


def test_status_notices_an_abandoned_change_and_again_redoes_it(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    init_repo(work, "jj")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    assert agent_loop(work, "--no-distill", "--vcs", "jj").returncode == 0
    two = state_of(work)["tasks"][1]["change_id"]
    jj(work, "abandon", two)
    status = agent_loop(work, "--status").stdout
    assert "task 2's change is no longer in the history" in status
    assert "--task 2 --again" in status
    again = agent_loop(work, "--no-distill", "--task", "2", "--again")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (work / "b.txt").read_text() == "B\n"
    assert state_of(work)["tasks"][1]["change_id"] != two


def test_a_rebased_task_is_found_by_its_trailers_and_a_reverted_one_is_said(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    base = git(work, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(work, "checkout", "-qb", "work")
    assert agent_loop(work, "--no-distill", "--vcs", "git").returncode == 0
    git(work, "checkout", "-q", base)
    (work / "up.txt").write_text("upstream\n")
    git(work, "add", "up.txt")
    git(work, "commit", "-qm", "upstream")
    git(work, "checkout", "-q", "work")
    git(work, "rebase", "-q", base)
    one, two = git(work, "log", "--format=%H", "-2").split()[::-1]
    status = agent_loop(work, "--status").stdout
    assert "no longer in the history" not in status and "--again" not in status, status
    assert f"task 1's change moved: it is {one[:12]} now" in status, status
    assert f"task 2's change moved: it is {two[:12]} now" in status, status
    # The user reverts task 2: a run leaves it done, and --status says so.
    git(work, "revert", "--no-edit", two)
    revert = git(work, "rev-parse", "HEAD").strip()
    status = agent_loop(work, "--status").stdout
    assert f"task 2 was reverted by {revert[:12]}: a run leaves it done" in status, status
    assert "--task 2 --again" in status
    # A task appended: the run builds on the rebased history, finds the moved tasks by their
    # trailers instead of stopping, and pays for the new task only.
    with (work / "tasks.md").open("a") as plan:
        plan.write("- three\n  FAKE: write c.txt C\n")
    git(work, "commit", "-qam", "three")
    before = len(fake_claude.calls())
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "task 1's change moved" in done.stdout + done.stderr
    assert len(fake_claude.calls()) == before + 1
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3
    assert tasks[0]["change_id"] == one


@pytest.mark.parametrize("args", [(), ("--parallel", "2")])
def test_jj_abandon_of_an_earlier_groups_task_in_a_lane_stops_the_run(
        work: Path, fake_claude: FakeClaude, jj_bin: str, args: tuple[str, ...]) -> None:
    """Group B's agent abandons the change group A landed, which B's lane stands on. The
    lane's guard looked only at what its own group landed: the run stopped on jj's "working
    copy is stale" (to be repaired with `jj workspace update-stale`), and the next run took
    task 1 for one you took back, ending "3 completed" with task 1's files in no change."""
    init_repo(work, "jj")
    (work / "tasks.md").write_text("## A\n- one\n  FAKE: write a.txt A\n"
                                   "## B\nDepends on: A\n\n"
                                   "- two\n  FAKE: bash jj --no-pager abandon @-\n"
                                   "  FAKE: write b.txt B\n- three\n  FAKE: write c.txt C\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj", *args)
    assert done.returncode == 1, done.stdout + done.stderr
    one = state_of(work)["tasks"][0]["change_id"]
    assert f"change {one[:12]}" in done.stderr and "stale" not in done.stderr, done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]][1:] == ["interrupted", "pending"]
    assert not (work / "b.txt").exists()
    follow_the_line(work, done.stderr, one)
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(
        "  FAKE: bash jj --no-pager abandon @-\n", ""))
    again = agent_loop(work, "--no-distill", "--vcs", "jj", *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert {"a.txt", "b.txt", "c.txt"} <= {p.name for p in work.iterdir()}


def test_your_squash_of_an_earlier_groups_task_mid_run_is_not_called_the_agents_abandon(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    """You squash task 1 into the change below it from your own workspace while group B's
    agent works: not the agent's doing, so its task lands, as before the lanes' guard looked
    at what a task stands on; the history check then says where task 1 went."""
    make_repo(work, "jj")  # a change of yours below task 1, to squash it into
    squash = (f"cd {work} && jj --no-pager squash -r 'description(glob:\"agent-loop: A*\")' "
              "-m squashed >/dev/null")
    (work / "tasks.md").write_text("## A\n- one\n  FAKE: write a.txt A\n"
                                   f"## B\n- two\n  FAKE: bash {squash}\n"
                                   "  FAKE: write b.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    said = done.stdout + done.stderr
    assert "abandoned while the lane's agent worked" not in said, said
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed", "completed"], said
    assert (work / "a.txt").exists() and (work / "b.txt").exists()
    assert "squashed" in jj(work, "log", "--no-graph", "-r", "::@", "-T", "description")



def test_jj_abandon_of_a_landed_task_in_a_lane_stops_with_a_line_that_gets_it_back(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    """The agent abandons task 1 from its lane, which leaves your workspace stale: the stop
    line's commands, run as printed in your workspace, bring task 1 back with no divergent
    change and no file gone, your workspace not stale, and the next run finishes. Before,
    they failed on "working copy is stale", and after `jj workspace update-stale` a `jj op
    revert` left divergent changes and tasks.md gone from the disk."""
    init_repo(work, "jj")
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   "- two\n  FAKE: bash jj --no-pager abandon @-\n"
                                   "  FAKE: write b.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert done.returncode == 1, done.stdout + done.stderr
    follow_the_line(work, done.stderr, state_of(work)["tasks"][0]["change_id"])
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(
        "  FAKE: bash jj --no-pager abandon @-\n", ""))
    again = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (work / "a.txt").exists() and (work / "b.txt").exists()
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2


def follow_the_line(work: Path, said: str, one: str, its_file: str = "a.txt") -> None:
    """Run the stop line's jj commands as printed, in your workspace (each must work there):
    the landed change `one` is back below your working copy, no change is divergent, and its
    file `its_file` and tasks.md are still on the disk."""
    line = said.split("see and repair it with ", 1)[1].splitlines()[0]
    for command in re.findall(r"`([^`]+)`", line):
        jj(work, *shlex.split(command)[1:])
    assert jj(work, "log", "--no-graph", "-r", f"::@- & {one[:12]}", "-T", "change_id"), line
    assert not jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id"), line
    assert {p.name for p in work.iterdir()} >= {"README.md", its_file, "tasks.md"}


@pytest.mark.parametrize("undo", ["undo", "op restore @--"], ids=["undo", "restore"])
def test_an_agents_undo_in_a_lane_stops_with_a_line_that_works_from_your_workspace(
        work: Path, fake_claude: FakeClaude, jj_bin: str, undo: str) -> None:
    """Task 2's agent runs `jj undo` (its step's own `jj describe` undone) or `jj op restore`
    to before task 1 landed (your working-copy change put back on the root: your workspace
    stale) in its lane. The line named `jj op log`, then `jj op revert <the undo>`: after the
    restore that `jj op log` failed on "working copy is stale". Its commands, run as printed in
    your workspace, now leave task 1 below your working copy, nothing divergent, no file gone,
    and the next run finishes."""
    init_repo(work, "jj")
    hostile = f"  FAKE: bash jj --no-pager {undo}\n"
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   f"- two\n{hostile}  FAKE: write b.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"`jj {undo.split(' @')[0]}` ran while the lane's agent worked" in done.stderr
    follow_the_line(work, done.stderr, state_of(work)["tasks"][0]["change_id"])
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(hostile, ""))
    again = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (work / "a.txt").exists() and (work / "b.txt").exists()
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2
    assert not jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id")


def test_your_jj_command_that_ended_beside_an_agents_abandon_is_not_restored_away(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    """Your `jj describe` of your working-copy change began before task 2's step (its editor
    open meanwhile) and ended after the agent's `jj abandon @-` in its lane: jj merged the two
    ("reconcile divergent operations"), and the operation log lists yours after the step's
    first operation. The check read the log only down to that one, so it saw only the lane's
    operations and jj's merge, and named `jj op restore` of the operation before the abandon,
    which dropped your description. Now it names the revert of the abandon, and your
    description stays."""
    init_repo(work, "jj")
    yours = (f"(cd {work} && jj --at-op $before --ignore-working-copy describe -r default@ "
             "-m 'my words' >/dev/null 2>&1)")
    (work / "tasks.md").write_text(
        "- one\n  FAKE: write a.txt A\n- two\n  FAKE: bash before=$(jj --ignore-working-copy "
        "op log --no-graph -n1 -T 'parents.map(|p| p.id()).join(\"\")') && "
        f"jj --no-pager abandon @- && {yours}\n  FAKE: write b.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "jj --ignore-working-copy op revert" in done.stderr, done.stderr
    line = done.stderr.split("see and repair it with ", 1)[1].splitlines()[0]
    for command in re.findall(r"`([^`]+)`", line):
        jj(work, *shlex.split(command)[1:])
    one = state_of(work)["tasks"][0]["change_id"]
    assert jj(work, "log", "--no-graph", "-r", f"::@- & {one[:12]}", "-T", "change_id"), line
    assert jj(work, "log", "--no-graph", "-r", "description(substring:'my words')", "-T",
              "change_id"), line


def test_your_jj_command_between_the_stop_and_the_line_is_kept_by_the_repair(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    """Task 2's agent runs `jj undo` in its lane (its step's own `jj describe` undone), which
    leaves your workspace fresh (unlike an abandon of a landed change, which leaves it stale
    so that no command of yours can come between): you edit a file and run `jj st` before
    following the stop line. The line named `jj --ignore-working-copy op restore` of the
    operation before the undo, which dropped the snapshot of your `jj st` too: the line's `jj
    log` then failed on "working copy is stale", and jj's own hint, `jj workspace
    update-stale`, deleted your file and tasks.md from the disk (jj 0.45.1). Nothing but the
    lane's own step was undone, so the line now names no restore: followed as printed, your
    file stays in your working-copy change, and the next run finishes."""
    init_repo(work, "jj")
    hostile = "  FAKE: bash jj --no-pager undo\n"
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n"
                                   f"- two\n{hostile}  FAKE: write b.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert done.returncode == 1, done.stdout + done.stderr
    (work / "mine.txt").write_text("my edit\n")
    jj(work, "st")
    follow_the_line(work, done.stderr, state_of(work)["tasks"][0]["change_id"])
    assert "mine.txt" in jj(work, "diff", "--name-only", "-r", "@")
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(hostile, ""))
    again = agent_loop(work, "--no-distill", "--vcs", "jj")
    assert again.returncode == 0, again.stdout + again.stderr
    assert {"a.txt", "b.txt", "mine.txt"} <= {p.name for p in work.iterdir()}
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2
    assert not jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id")


def test_an_abandon_in_one_lane_while_another_lane_works_stops_with_a_line_that_works(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    """Group B's agent abandons B's own landed task while group A's agent is still at work
    (--parallel 2). B's check sees only B's operations since its step began and names `jj
    --ignore-working-copy op restore` of the operation before the abandon; A's landing then
    meets your workspace stale (the abandon rebased your change), and the run ends on A's
    error, which says to run `jj workspace update-stale`, not on B's line. B's line, followed
    as printed, fails too: A's operations after B's check (its landing tried from your
    workspace) leave your workspace stale after the restore (jj 0.45.1)."""
    init_repo(work, "jj")
    hostile = "  FAKE: bash jj --no-pager abandon @-\n"
    (work / "tasks.md").write_text("## A\n- a1\n  FAKE: bash sleep 8\n  FAKE: write a.txt A\n"
                                   "## B\n- b1\n  FAKE: write b1.txt B\n"
                                   f"- b2\n{hostile}  FAKE: write b2.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj", "--parallel", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "see and repair it with" in done.stderr and "update-stale" not in done.stderr, \
        done.stderr
    follow_the_line(work, done.stderr, state_of(work)["tasks"][1]["change_id"], "b1.txt")
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(hostile, ""))
    again = agent_loop(work, "--no-distill", "--vcs", "jj", "--parallel", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert {"a.txt", "b1.txt", "b2.txt"} <= {p.name for p in work.iterdir()}


@pytest.mark.parametrize("how", ["cd {work} && jj --no-pager undo",
                                 "jj --no-pager -R {work} undo"], ids=["cd", "-R"])
def test_an_undo_in_your_workspace_by_one_lanes_agent_stops_with_one_line_that_works(
        work: Path, fake_claude: FakeClaude, jj_bin: str, how: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With --parallel 2, group B's agent runs `jj undo` against your workspace while group
    A's agent is still at work. Each lane's check read the undo from its own side: A and B
    stopped with two repairs, one `jj op restore`, one `jj op revert`, and only the last
    line's worked. The run now prints one repair, and it works as printed: nothing
    divergent, no file gone, and the next run lands every task with no work lost."""
    init_repo(work, "jj")
    hostile = f"  FAKE: bash {how.format(work=work)}\n"
    (work / "tasks.md").write_text("## A\n- a1\n  FAKE: bash sleep 8\n  FAKE: write a.txt A\n"
                                   "## B\n- b1\n  FAKE: write b1.txt B\n"
                                   f"- b2\n{hostile}  FAKE: write b2.txt B\n")
    done = agent_loop(work, "--no-distill", "--vcs", "jj", "--parallel", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout + done.stderr
    repairs = {line.split("see and repair it with ", 1)[1] for line in said.splitlines()
               if "see and repair it with " in line}
    assert len(repairs) == 1, said
    # You type the line later than the run's pinned clock (as in tests/run/test_hostile_user).
    monkeypatch.setenv("JJ_TIMESTAMP", "2026-01-01T00:05:00+00:00")
    follow_the_line(work, done.stderr, state_of(work)["tasks"][1]["change_id"], "b1.txt")
    assert "stale" not in jj(work, "st")
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(hostile, ""))
    again = agent_loop(work, "--no-distill", "--vcs", "jj", "--parallel", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert {"a.txt", "b1.txt", "b2.txt"} <= {p.name for p in work.iterdir()}
    assert not jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id")
