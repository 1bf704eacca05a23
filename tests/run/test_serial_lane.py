"""A sequential run in lanes (the default) works in one lane for all its groups: made once before
the first group, taken by each next group from the main line's tip as it is then, removed once
after the last. A group that leaves something in it (a conflict, an attempt a kill cut short)
keeps it for its own next run; a kill between groups leaves nothing a re-run trips on."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from agentloop.state.store import Store
from agentloop.vcs import lanes
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, jj, state_of
from tests.support.runner import agent_loop, half_done_in_the_serial_lane

# The one lane of a sequential run of tasks.md: its plan's key, then `serial`.
SERIAL = lanes.plan_key("tasks.md") + "-serial"


def plan(groups: int, tasks: int = 2, first: str = "") -> str:
    """`groups` groups of `tasks` tasks, each writing a file of its own; `first`: directives
    for group 2's first task."""
    out = []
    for g in range(1, groups + 1):
        out.append(f"## Group {g}")
        for t in range(1, tasks + 1):
            out.append(f"- task {g}.{t}\n  FAKE: write g{g}t{t}.txt {g}.{t}"
                       + (f"\n  {first}" if first and (g, t) == (2, 1) else ""))
        out.append("")
    return "\n".join(out)


def logged(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` and `jj` note each call (one a line) before they run."""
    log = tmp_path / "vcs.log"
    folder = tmp_path / "shims"
    folder.mkdir()
    for name in ("git", "jj"):
        real = shutil.which(name)
        assert real is not None, name
        (folder / name).write_text(f'#!/bin/sh\necho "{name} $*" | tr "\\n" " " >> "{log}"\n'
                                   f'echo >> "{log}"\nexec "{real}" "$@"\n')
        (folder / name).chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}, log


def statuses(work: Path) -> list[str]:
    """The tasks' statuses as the saved state and its journal hold them (after a kill too)."""
    state = Store(work).load()
    assert state is not None
    return [str(t.status) for t in state.tasks]


def agent_cwds(fake: FakeClaude) -> list[str]:
    return [c["cwd"] for c in fake.calls() if "--output-format" in c["argv"]]


def nothing_left(work: Path, kind: str) -> None:
    """No lane's folder, worktree, workspace, branch or landed record is left behind."""
    folder = work / ".agent-loop" / "lanes"
    assert not folder.is_dir() or not list(folder.iterdir())
    if kind == "git":
        assert git(work, "worktree", "list").count("\n") == 1
        assert "agent-loop/" not in git(work, "branch", "--list")
        assert "refs/agent-loop/landed" not in git(work, "for-each-ref", "refs/agent-loop/")
    else:
        assert jj(work, "workspace", "list").count("\n") == 1


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_three_groups_make_one_lane_and_each_starts_a_fresh_session(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text(plan(3))
    env, log = logged(tmp_path)
    done = agent_loop(work, "--vcs", kind, "--no-distill", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    # git's lane is registered from files (agentloop.vcs.git.worktrees), then checked out.
    made = " checkout -q -f " if kind == "git" else "workspace add"
    calls = log.read_text().splitlines()
    assert sum(made in c for c in calls) == 1, "\n".join(c for c in calls if made in c)
    # git's worktree goes from its files (no `worktree remove`), its branch too (no `branch -D`).
    if kind == "git":
        assert not any("worktree remove" in c or "branch -q -D" in c for c in calls)
    else:
        assert sum("workspace forget" in c for c in calls) == 1
    if kind == "git":
        nothing_left(work, kind)
    # Every group worked in the one lane; each group's first task began a session of its own,
    # its second went on in it.
    cwds = agent_cwds(fake_claude)
    assert len(cwds) == 6 and set(cwds) == {str((work / ".agent-loop/lanes" / SERIAL).resolve())}
    runs = [c["argv"] for c in fake_claude.calls() if "--output-format" in c["argv"]]
    assert ["--resume" in argv for argv in runs] == [False, True] * 3
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    assert len({t["session_id"] for t in state["tasks"]}) == 3
    if kind == "git":
        assert [files for _, _, files in git_commits(work)][-6:] == [
            [f"g{g}t{t}.txt"] for g in (1, 2, 3) for t in (1, 2)]
    assert all((work / f"g{g}t{t}.txt").exists() for g in (1, 2, 3) for t in (1, 2))
    nothing_left(work, kind)


# What the user does in their checkout once group 1 is done: a commit of their own, which
# group 2 must start from.
YOUR_COMMIT = {
    "git": 'if [ "$AGENT_LOOP_EVENT_TASK" = 2 ]; then echo mine > mine.txt && '
           'git add mine.txt && git commit -qm "my own commit"; fi',
    "jj": 'if [ "$AGENT_LOOP_EVENT_TASK" = 2 ]; then echo mine > mine.txt && '
          'jj commit -m "my own commit" mine.txt; fi',
}


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_your_commit_between_groups_is_the_next_groups_base(
        work: Path, fake_claude: FakeClaude, kind: str) -> None:
    init_repo(work, kind)
    # Group 2's first agent looks for your file in its lane: there only if it started on it.
    (work / "tasks.md").write_text(plan(2, first="FAKE: bash test -f mine.txt && "
                                                 "echo seen > saw-mine.txt"))
    done = agent_loop(work, "--vcs", kind, "--no-distill", "--on-task", YOUR_COMMIT[kind])
    assert done.returncode == 0, done.stdout + done.stderr
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}
    assert (work / "saw-mine.txt").read_text() == "seen\n"
    if kind == "git":
        subjects = git(work, "log", "--reverse", "--format=%s").splitlines()
        assert subjects[-5:] == ["agent-loop: Group 1 / task 1.1", "agent-loop: Group 1 / task 1.2",
                                 "my own commit", "agent-loop: Group 2 / task 2.1",
                                 "agent-loop: Group 2 / task 2.2"]
        # Group 2's first task landed as its own commit, made right on yours.
        third = state_of(work)["tasks"][2]["change_id"]
        assert git(work, "log", "-1", "--format=%s", f"{third}^").strip() == "my own commit"
    else:
        line = jj(work, "log", "--no-graph", "-r", "::@- & description(glob:'*')",
                  "-T", 'description.first_line() ++ "\\n"').splitlines()
        assert line[:3] == ["agent-loop: Group 2 / task 2.2", "agent-loop: Group 2 / task 2.1",
                            "my own commit"]
    nothing_left(work, kind)


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_kill_between_groups_then_a_rerun_finishes_and_leaves_no_lane(
        work: Path, fake_claude: FakeClaude, kind: str) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text(plan(2))
    args = ["--vcs", kind, "--no-distill"]
    # Killed the moment group 1's last task is saved done, before group 2 begins.
    killed = agent_loop(work, *args, "--on-task",
                        'if [ "$AGENT_LOOP_EVENT_TASK" = 2 ]; then kill -9 $PPID; fi')
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert statuses(work) == ["completed"] * 2 + ["pending"] * 2
    assert (work / ".agent-loop" / "lanes" / SERIAL).is_dir()  # left as the kill found it
    again = agent_loop(work, *args)
    assert again.returncode == 0, again.stdout + again.stderr
    assert statuses(work) == ["completed"] * 4
    assert all((work / f"g{g}t{t}.txt").exists() for g in (1, 2) for t in (1, 2))
    nothing_left(work, kind)


# The re-run is sequential too, or parallel (which goes on in the one lane the same way).
@pytest.mark.parametrize("kind,rerun", [("git", ()), ("jj", ()), ("git", ("--parallel", "2"))])
def test_a_kill_inside_a_later_group_goes_on_in_the_one_lane(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, kind: str,
        rerun: tuple[str, ...]) -> None:
    init_repo(work, kind)
    (work / "tasks.md").write_text(plan(2))
    args = ["--vcs", kind, "--no-distill"]
    # Group 2's first agent writes its file, then dawdles: only in the first run.
    tool, lane = half_done_in_the_serial_lane(work, tmp_path / "directives.json", "task 2.1",
                                              args)
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=30)
    assert statuses(work)[2] == "running"
    again = agent_loop(work, *args, *rerun)
    assert again.returncode == 0, again.stdout + again.stderr
    assert statuses(work) == ["completed"] * 4
    # The killed task ran again in the lane it was cut short in, its half-done file dropped.
    assert agent_cwds(fake_claude)[-2] == str(lane.resolve())
    assert not (work / "half.txt").exists()
    assert all((work / f"g{g}t{t}.txt").exists() for g in (1, 2) for t in (1, 2))
    nothing_left(work, kind)


CONFLICT_PLAN = """\
## Left
- left edit
  FAKE: bash cd {root} && echo yours > shared.txt && env -u GIT_REFLOG_ACTION git commit -qam yours
  FAKE: write shared.txt left

## Right
- right edit
  FAKE: write right.txt right
"""
CONFLICT_FIRST_LINE = ("Your change for the task above does not fit the main line: other groups "
                       "changed the same lines and their work landed first. Your working copy "
                       "now holds the main line as it is, with your change applied on top; git "
                       "marked each conflict (<<<<<<< / ======= / >>>>>>>) in:")


def conflicted_run(work: Path, tmp_path: Path, monkeypatch):
    """A git run of CONFLICT_PLAN whose first group's agent cannot resolve its conflict: the
    group is left conflicted in the serial lane."""
    init_repo(work, "git")
    (work / "shared.txt").write_text("base\n")
    git(work, "add", "shared.txt")
    git(work, "commit", "-qm", "shared")
    (work / "tasks.md").write_text(CONFLICT_PLAN.format(root=work))
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({CONFLICT_FIRST_LINE: ["FAKE: say I could not"]}))
    monkeypatch.setenv("FAKE_CLAUDE_DIRECTIVES", str(directives))
    return agent_loop(work, "--vcs", "git", "--no-distill")


def test_a_conflicted_group_keeps_the_lane_and_the_next_group_works_beside_it(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    done = conflicted_run(work, tmp_path, monkeypatch)
    assert done.returncode == 4, done.stdout + done.stderr
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["conflicted", "completed"]
    # The conflicted work is where its help says, on a branch that exists.
    lane = work / ".agent-loop" / "lanes" / SERIAL
    assert git(work, "show", f"agent-loop/{SERIAL}:shared.txt") == "left\n"
    assert git(work, "rev-parse", f"agent-loop/{SERIAL}").strip() == tasks[0]["change_id"]
    assert f"git log -p main..agent-loop/{SERIAL}" in done.stdout
    assert f"worktree .agent-loop/lanes/{SERIAL}" in tasks[0]["error"]
    # What lands it is the run you made again, as below: no --parallel this run never had.
    assert "--parallel" not in tasks[0]["error"] and "--parallel" not in done.stdout
    assert "run the same agent-loop command again to land it" in tasks[0]["error"]
    # The Right group worked in a lane of its own, gone once its task landed.
    assert agent_cwds(fake_claude)[-1] != str(lane.resolve())
    assert (work / "right.txt").exists()
    assert sorted(p.name for p in lane.parent.iterdir()) == [SERIAL]
    # Resolved by hand in the lane, a plain re-run lands it and leaves nothing behind.
    (lane / "shared.txt").write_text("yours and left\n")
    git(lane, "commit", "-qam", "by hand")
    git(lane, "rebase", "-q", "-X", "theirs", "main")
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert statuses(work) == ["completed"] * 2
    assert (work / "shared.txt").read_text() == "yours and left\n"
    nothing_left(work, "git")


def test_another_plans_sequential_run_never_touches_this_plans_lane(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    assert conflicted_run(work, tmp_path, monkeypatch).returncode == 4
    kept = git(work, "rev-parse", f"agent-loop/{SERIAL}").strip()
    (work / "other.md").write_text(plan(2, 1))
    other = agent_loop(work, "--vcs", "git", "--no-distill", plan="other.md")
    assert other.returncode == 0, other.stdout + other.stderr
    # Its own one lane came and went; plan tasks.md's conflicted lane is as it was.
    theirs = lanes.plan_key("other.md") + "-serial"
    assert {c for c in agent_cwds(fake_claude)[-2:]} == {
        str((work / ".agent-loop" / "lanes" / theirs).resolve())}
    assert sorted(p.name for p in (work / ".agent-loop" / "lanes").iterdir()) == [SERIAL]
    assert git(work, "rev-parse", f"agent-loop/{SERIAL}").strip() == kept
    assert "agent-loop/" + theirs not in git(work, "branch", "--list")
