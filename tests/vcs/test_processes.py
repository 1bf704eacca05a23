"""How many git or jj processes a task starts, counted off a real run: a `git` and a `jj` first on
PATH that note their arguments and hand over to the real program, in the same log where the fake
agent notes each call, so what runs between two agents is one task's finish and the next one's
begin. The count is what a task costs beyond its agent; one more process a task fails here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project, init_repo

TASKS = 4
# git: `add --all` and `commit`, the two a person's own loop runs. jj: the `commit` a person's
# own loop runs (it describes the task's change, says what it holds and starts the next change
# on it: 3 before, as `describe`, `new` and the next begin's `log`), and the `describe` that names
# the next task's change.
PER_TASK = {"git": 2, "jj": 2}
# In a lane of its own (the default workplace): git, one `status` of your checkout (did
# anything write there while the agent ran? it runs beside the lane's two), the two in the
# lane, and the landing's one `merge --ff-only` in your checkout, which starts no maintenance
# of its own (git's trace says so: the shims do not see what git starts itself). jj: the
# same two and the landing's one `rebase` of your @ onto the task's change, whose revset names
# @ only when it sits on the change's parent and touches none of its files (5 before: a `log`
# of @ asked that first, and the task's `describe` and `new` were two).
PER_TASK_LANE = {"git": 4, "jj": 3}


def shims(tmp_path: Path, log: Path) -> dict[str, str]:
    """An environment whose `git` and `jj` note every call in `log` before they run."""
    bin_dir = tmp_path / "shims"
    bin_dir.mkdir()
    # jj asks `tput` for the terminal's width where it has none: a process too.
    for name in ("git", "jj", "tput"):
        real = shutil.which(name)
        if real is None and name == "tput":
            continue
        assert real is not None, name
        shim = bin_dir / name
        # One record a process, opened by a record separator (a commit message has lines).
        shim.write_text(f'#!/bin/sh\nprintf "\\036%s\\n" "{name} $*" >> "$PROCESS_LOG"\n'
                        f'exec "{real}" "$@"\n')
        shim.chmod(0o755)
    # git's own trace names the processes git starts itself, which no shim sees: an automatic
    # `git maintenance run --auto` after a command, one more process a task.
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PROCESS_LOG": str(log), "FAKE_CLAUDE_LOG": str(log), "NO_COLOR": "1",
            "GIT_TRACE": str(log.with_suffix(".trace"))}


def between_agents(log: Path) -> list[list[str]]:
    """The git and jj commands run between one agent call and the next."""
    gaps: list[list[str]] = []
    for line in log.read_text().split("\n"):  # splitlines() would cut at the separator
        if line.startswith("{"):
            json.loads(line)  # the fake agent's own record of a call
            gaps.append([])
        elif line.startswith("\x1e") and gaps:
            gaps[-1].append(line[1:])
    # After the first agent: the first task's finish, the run's first look at the history and
    # a begin that had nothing carried to it; after the last: the run's end.
    return gaps[1:-1]


def shown(command: str) -> str:
    """A command as a failure shows it: its name and what follows jj's long options."""
    return command[:40] + " … " + command.split("1099511627776")[-1][:100]


def project(tmp_path: Path, backend: str, plan: str) -> Path:
    """A git or jj repository with one commit and `plan` in tasks.md."""
    if backend == "git":
        return git_project(tmp_path, plan)
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "jj")
    (work / "tasks.md").write_text(plan)
    return work


def logged_run(tmp_path: Path, work: Path, backend: str, workplace: str) -> Path:
    """Run the plan in `work` to the end; the log of every git and jj call and agent run."""
    log = tmp_path / "processes.log"
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill",
                           "--vcs", backend, "--workplace", workplace], cwd=work,
                          capture_output=True, text=True, timeout=120, env=shims(tmp_path, log))
    assert done.returncode == 0, done.stdout + done.stderr
    return log


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
@pytest.mark.parametrize("backend", ["git", "jj"])
def test_a_task_starts_only_the_processes_it_needs(tmp_path: Path, backend: str, workplace: str,
                                                   fake_claude: FakeClaude) -> None:
    plan = "".join(f"- task {i}\n  FAKE: write t{i}.txt {i}\n" for i in range(TASKS))
    work = project(tmp_path, backend, plan)
    if backend == "git":
        # As many repositories have it: git's `add` then complains of the state folder it is
        # told to leave out, and must not be taken at its word.
        (work / ".gitignore").write_text(".agent-loop/\n")
        git(work, "add", ".gitignore")
        git(work, "commit", "-qm", "ignore the state")
    log = logged_run(tmp_path, work, backend, workplace)
    gaps = between_agents(log)
    assert len(gaps) == TASKS - 2, log.read_text()
    expected = (PER_TASK if workplace == "checkout" else PER_TASK_LANE)[backend]
    assert [len(gap) for gap in gaps] == [expected] * len(gaps), \
        "\n\n".join("\n".join(shown(c) for c in gap) for gap in gaps)
    trace = log.with_suffix(".trace")
    started_by_git = [line for line in trace.read_text().splitlines()
                      if "built-in: git maintenance" in line or "built-in: git gc" in line] \
        if trace.exists() else []
    assert not started_by_git, "\n".join(started_by_git)


def before_first_agent(log: Path) -> list[str]:
    """The git and jj commands a run starts before its first agent call."""
    commands = []
    for line in log.read_text().split("\n"):
        if line.startswith("{"):
            break
        if line.startswith("\x1e"):
            commands.append(line[1:])
    return commands


# Before its first task, a fresh git run asks: whether history holds the plan's tasks already (no
# state yet), who commits and whether commits are signed (preflight), where the repository is
# and where its hooks are (one rev-parse, instead of GitPython's two `git version` and a second
# rev-parse), the tree's status (a dirty tree is refused), and the first task's begin's status
# (8 before: GitPython ran `git version` twice; 7 with the hooks' own rev-parse). jj: the
# history, its identity, its root, whether it tracks new files, the open changes, where @ is and
# the first task's change; whether git's HEAD is on a branch is read off .git/HEAD (8 before:
# `git symbolic-ref`).
# In a lane (the default), the lane is made as well. git: the `checkout -f -B` of its branch
# in a worktree registered from files as `worktree add --detach --no-checkout` registers it (8
# before, with that `worktree add` and the `update-ref` it starts itself, counted off git's own
# trace; 9 before that, when `worktree add -B` started `branch`, `symbolic-ref` and `reset
# --hard`); the sweep's
# `worktree list`, which the lane's opening took, is not needed while .git holds no linked
# worktree at all (10 before); the user's uncommitted paths (what a landing
# must not overwrite) are the ones the tree's status listed; where the lane's git dir is, that it
# is on its branch, that nothing in it is uncommitted and what its first task's begin finds are
# read from its files or known from having just made it (16 before, then 10 with the begin's
# status, a second status of the checkout and the hooks' rev-parse). jj: one `workspace list`,
# the main line's tip and the `workspace add`; the lane takes the checkout's snapshot.auto-track
# and has no stray change of a killed run to drop (14 before, then 10 with a `log` of @ before
# the first task's `jj new`).
AT_START = {("git", "checkout"): 6, ("jj", "checkout"): 6, ("git", "lane"): 6,
            ("jj", "lane"): 9}


def started_by_git(log: Path) -> list[str]:
    """The processes git started itself in a whole run (its trace's `run_command`), which no
    shim sees."""
    trace = log.with_suffix(".trace")
    lines = trace.read_text(errors="replace").splitlines() if trace.exists() else []
    return [line.split("run_command: ", 1)[1] for line in lines if "run_command: " in line]


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
@pytest.mark.parametrize("backend", ["git", "jj"])
def test_a_run_starts_with_few_questions_to_the_vcs(tmp_path: Path, backend: str,
                                                    workplace: str,
                                                    fake_claude: FakeClaude) -> None:
    work = project(tmp_path, backend, "- task\n  FAKE: write t.txt t\n")
    log = logged_run(tmp_path, work, backend, workplace)
    # One task, whose finish and the run's end start nothing of git's own: every process git
    # started itself was started before the agent (the lane's making).
    asked = before_first_agent(log) + started_by_git(log)
    assert len(asked) <= AT_START[backend, workplace], "\n".join(shown(c) for c in asked)


# Between two groups of a sequential run in a lane: the last task's finish and the next one's
# begin, as between two tasks of one group, and what the group's end and the next one's start
# add. git: nothing (the one lane goes on, its worktree at the main line's tip, read from the
# files; 7 before, and 2 more after the new lane's first task: the worktree listed, its status,
# removed, its branch deleted, a new one added, the checkout's status, a `rev-list` of the new
# lane's history). jj: the main line's tip (one `jj log`), which the lane's @ sits on already
# (8 before, and 10 more after the new workspace's first task).
PER_GROUP_LANE = {"git": 0, "jj": 1}
GROUPS = 3


@pytest.mark.parametrize("backend", ["git", "jj"])
def test_a_later_group_starts_in_the_same_lane_with_few_processes(
        tmp_path: Path, backend: str, fake_claude: FakeClaude) -> None:
    plan = "".join(f"## Group {g}\n" + "".join(f"- task {g}.{t}\n  FAKE: write g{g}t{t}.txt x\n"
                                              for t in range(2)) for g in range(GROUPS))
    work = project(tmp_path, backend, plan)
    log = logged_run(tmp_path, work, backend, "lane")
    gaps = between_agents(log)  # after each agent but the first and the last
    assert len(gaps) == 2 * GROUPS - 2, log.read_text()
    # The gaps after a group's last task, and after a group's first (within a group).
    ends, within = gaps[0::2], gaps[1::2]
    assert [len(gap) for gap in within] == [PER_TASK_LANE[backend]] * len(within)
    expected = PER_TASK_LANE[backend] + PER_GROUP_LANE[backend]
    # jj's begin trusts the @ finish made for half a second only: on a loaded machine the tip's
    # `jj log` can take it past that, and the begin looks at @ once (as a task's would).
    lapsed = [sum("conflict-marker-style=git log --no-graph -r @ -T " in c for c in gap)
              for gap in ends] \
        if backend == "jj" else [0] * len(ends)
    assert [len(gap) - late for gap, late in zip(ends, lapsed)] == [expected] * len(ends), \
        "\n\n".join("\n".join(shown(c) for c in gap) for gap in ends)
    made = " checkout -q -f " if backend == "git" else "workspace add"
    assert sum(made in line for line in log.read_text().split("\n")) == 1


def after_last_agent(log: Path) -> list[str]:
    """The git and jj commands a run starts after its last agent call."""
    gaps = [[]] + [[]]  # before any agent call, then after each
    for line in log.read_text().split("\n"):
        if line.startswith("{"):
            gaps.append([])
        elif line.startswith("\x1e"):
            gaps[-1].append(line[1:])
    return gaps[-1]


# After its last agent a git run in a lane finishes the last task as any other (the lane's `add`
# and `commit`, your checkout's `status` beside them, the landing's `merge`), then lets the lane
# go: one `status` in it (what is uncommitted there is kept before it goes). The worktree's
# folder and git's folder for it are deleted from files, as `git worktree remove` would, and its
# branch as `branch -D` would (7 before: the `worktree remove` itself; 6: the `branch -D`).
AT_END_GIT_LANE = 5


def test_a_finished_run_lets_its_lane_go_with_few_processes(tmp_path: Path,
                                                             fake_claude: FakeClaude) -> None:
    # Two tasks: the last is not the first, whose finish asks more (a lane's first landing).
    work = project(tmp_path, "git", "- task 1\n  FAKE: write t1.txt 1\n"
                                    "- task 2\n  FAKE: write t2.txt 2\n")
    log = logged_run(tmp_path, work, "git", "lane")
    asked = after_last_agent(log)
    assert len(asked) <= AT_END_GIT_LANE, "\n".join(shown(c) for c in asked)
    assert not (work / ".agent-loop" / "lanes").exists() or \
        not any((work / ".agent-loop" / "lanes").iterdir())
    assert git(work, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert "agent-loop/" not in git(work, "branch", "--list")


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_a_task_dropped_before_the_run_costs_no_process_a_task(
        tmp_path: Path, workplace: str, fake_claude: FakeClaude) -> None:
    """A finished task's commit you reset away between two runs is said before the first task
    and then left out of every task's look at the history: the history is not read again after
    each task, which costs what a run without it costs."""
    plan = "".join(f"- task {i}\n  FAKE: write t{i}.txt {i}\n" for i in range(TASKS + 1))
    work = project(tmp_path, "git", plan)
    first = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--no-distill",
                            "--vcs", "git", "--workplace", workplace, "--task", "1"], cwd=work,
                           capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    git(work, "reset", "-q", "--hard", "HEAD~1")
    gaps = between_agents(logged_run(tmp_path, work, "git", workplace))
    assert len(gaps) == TASKS - 2
    expected = (PER_TASK if workplace == "checkout" else PER_TASK_LANE)["git"]
    assert [len(gap) for gap in gaps] == [expected] * len(gaps), \
        "\n\n".join("\n".join(shown(c) for c in gap) for gap in gaps)


def test_a_change_you_abandoned_reads_the_operation_log_once_an_operation(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """You take task 0 back (`jj abandon` in your checkout) while task 1's agent works: the
    looks for it (the lane's check for an undo, the step's and the history check's for your
    abandon) read jj's operation log once for each operation the repository is at, known off
    its op heads folder without a process (5 reads after task 1 before, one a look), and no
    task after the next reads it again."""
    task_0 = "description(substring:'/ task 0')"
    plan = ("- task 0\n  FAKE: write t0.txt 0\n"
            "- task 1\n  FAKE: write t1.txt 1\n"
            f"  FAKE: bash cd {tmp_path / 'project'} && jj abandon -r \"{task_0}\"\n"
            + "".join(f"- task {i}\n  FAKE: write t{i}.txt {i}\n" for i in range(2, TASKS + 2)))
    work = project(tmp_path, "jj", plan)
    gaps = between_agents(logged_run(tmp_path, work, "jj", "lane"))
    read = [sum(" op log " in c for c in gap) for gap in gaps]
    # After task 1: the heads the lane's check, the step's repair and its landing left.
    assert read[0] <= 3 and read[1:] == [1] + [0] * (len(gaps) - 2), \
        f"{read}\n" + "\n\n".join("\n".join(shown(c) for c in gap) for gap in gaps)
