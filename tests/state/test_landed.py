"""What is done, read back from history (agentloop.state.landed): by the tasks' trailers, by
subject before the trailers, and a task its user reverted is not done. End to end with real git:
`.agent-loop/` removed, `--dry-run` has nothing left to run for a finished plan."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson

from agentloop.state.landed import Commit, PlannedTask, done_tasks, last_word, task_hash, trailers
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project, init_repo, jj

TASKS = [PlannedTask(1, "write a", "agent-loop: G / write a"),
         PlannedTask(2, "write b\n  carefully", "agent-loop: G / write b"),
         PlannedTask(3, "write c", "agent-loop: G / write c")]


def committed(sha: str, task: PlannedTask, plan: str = "tasks") -> Commit:
    return Commit(sha, f"{task.subject}\n\nbody\n\n{trailers(plan, task.index, task.text)}\n")


def test_trailers_name_the_plan_and_the_task_by_number_and_text() -> None:
    assert trailers("tasks", 2, "write b\n  carefully") == (
        f"Agent-Loop-Plan: tasks\nAgent-Loop-Task: 2 {task_hash('write b carefully')}")
    assert len(task_hash("x")) == 12


def test_done_by_trailers_even_after_the_plan_was_renumbered() -> None:
    history = [committed("a1", TASKS[0]), committed("b2", TASKS[1])]
    assert done_tasks("tasks", TASKS, history) == {1: "a1", 2: "b2"}
    # A task inserted at the top: the same texts are tasks 2 and 3 now.
    moved = [PlannedTask(1, "new first", "agent-loop: G / new first"),
             *(PlannedTask(t.index + 1, t.text, t.subject) for t in TASKS)]
    assert done_tasks("tasks", moved, history) == {2: "a1", 3: "b2"}
    assert done_tasks("other-plan", TASKS, history) == {}  # another plan's commits


def test_commits_from_before_the_trailers_match_by_subject() -> None:
    history = [Commit("a1", "agent-loop: G / write a\n"), Commit("x", "a commit of the user")]
    assert done_tasks("tasks", TASKS, history) == {1: "a1"}


def test_a_reverted_task_is_not_done_and_a_reverted_revert_is() -> None:
    a, b, r1, r2 = "a" * 40, "b" * 40, "c" * 40, "d" * 40
    history = [committed(a, TASKS[0]), committed(b, TASKS[1]),
               Commit(r1, f'Revert "agent-loop: G / write b"\n\nThis reverts commit {b}.\n')]
    assert done_tasks("tasks", TASKS, history) == {1: a}
    again = [*history, Commit(r2, 'Revert "Revert "agent-loop: G / write b""\n\n'
                                  f"This reverts commit {r1}.\n")]
    assert done_tasks("tasks", TASKS, again) == {1: a, 2: r2}
    # jj's wording, with an id we do not know: by the subject it quotes.
    jj = [committed(a, TASKS[0]),
          Commit(r1, 'Back out "agent-loop: G / write a"\n\nThis backs out commit 0123456.\n')]
    assert done_tasks("tasks", TASKS, jj) == {}


def dry_run(work: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--dry-run"],
                          cwd=work, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_long_history_is_read_in_one_pass() -> None:
    # 2,000 landed tasks, one reverted: each commit is looked up by its trailer's hash, never
    # compared with every task's text (which took about 8 s on this many, and --status paid it
    # whenever the history had moved since the run).
    tasks = [PlannedTask(i, f"task {i}\n  with details", f"agent-loop: G / task {i}")
             for i in range(1, 2001)]
    history = [committed(f"{i:040x}", t) for i, t in enumerate(tasks, 1)]
    history.append(Commit("f" * 40, f'Revert "{tasks[6].subject}"\n\n'
                                     f"This reverts commit {7:040x}.\n"))
    started = time.perf_counter()
    word = last_word("tasks", tasks, history)
    assert time.perf_counter() - started < 2.0
    assert len(word) == 2000 and word[7] == ("f" * 40, False) and word[8] == (f"{8:040x}", True)


def test_a_lost_state_is_rebuilt_from_the_branch(tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "## G\n- write a\n  FAKE: write a.txt A\n"
                                 "- write b\n  FAKE: write b.txt B\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    run = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                          "--no-distill"], cwd=work, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    last = git(work, "log", "-1", "--format=%B")
    assert last.rstrip().endswith(f"Agent-Loop-Plan: tasks\nAgent-Loop-Task: 2 "
                                  f"{task_hash('write b FAKE: write b.txt B')}"), last
    shutil.rmtree(work / ".agent-loop")
    text = dry_run(work)
    assert "2 task(s), 0 to run" in text, text
    assert "no state for this plan: 2 task(s) found done in the history" in text
    # The user reverts task 2: it stays done until asked (`--task 2 --again`), as in the
    # checkout that ran it (tests/run/test_reverted_in_a_clone.py).
    git(work, "revert", "--no-edit", "HEAD")
    shutil.rmtree(work / ".agent-loop", ignore_errors=True)
    assert "2 task(s), 0 to run" in dry_run(work)
    again = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                            "--no-distill"], cwd=work, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert "no state for this plan: 2 task(s) found done" in again.stdout
    assert "reverted since: task 2 by " in again.stdout, again.stdout
    assert len(fake_claude.calls()) == 2  # no task was paid for again
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    assert [t["status"] for t in state["tasks"]] == ["completed", "completed"]


def test_a_lost_state_is_rebuilt_from_jjs_history(tmp_path: Path, jj_bin: str,
                                                  fake_claude: FakeClaude) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "jj")
    (work / "tasks.md").write_text("## G\n- write a\n  FAKE: write a.txt A\n"
                                   "- write b\n  FAKE: write b.txt B\n")
    run = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "jj",
                          "--no-distill"], cwd=work, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    described = jj(work, "log", "--no-graph", "-r", "::@ & description(glob:'agent-loop:*')",
                   "-T", 'description ++ "\\x1e"').split("\x1e")
    assert any(d.rstrip().endswith(f"Agent-Loop-Task: 1 {task_hash('write a FAKE: write a.txt A')}")
               for d in described), described
    shutil.rmtree(work / ".agent-loop")
    assert "2 task(s), 0 to run" in dry_run(work)


def test_a_squash_merge_lands_every_task_it_names() -> None:
    # GitHub's "Squash and merge": one commit, the squashed messages listed one after the other,
    # each with its trailers; `git merge --squash` quotes them indented.
    listed = "".join(f"* {t.subject}\n\n{trailers('tasks', t.index, t.text)}\n\n" for t in TASKS)
    assert done_tasks("tasks", TASKS, [Commit("s1", f"Do the plan (#12)\n\n{listed}")]) == {
        1: "s1", 2: "s1", 3: "s1"}
    quoted = "Squashed commit of the following:\n\n" + "".join(
        f"commit {t.index}\n\n    {t.subject}\n    \n    "
        + trailers("tasks", t.index, t.text).replace("\n", "\n    ") + "\n\n" for t in TASKS)
    assert done_tasks("tasks", TASKS, [Commit("s2", quoted)]) == {1: "s2", 2: "s2", 3: "s2"}
    # A task reverted inside the squashed branch (its commit's id is gone): by the quote.
    reverted = (f"{listed}* Revert \"{TASKS[1].subject}\"\n\nThis reverts commit "
                f"{'e' * 40}.\n")
    assert done_tasks("tasks", TASKS, [Commit("s3", f"Do it (#13)\n\n{reverted}")]) == {
        1: "s3", 3: "s3"}
    # Reverting the squash commit undoes every task it landed.
    assert done_tasks("tasks", TASKS, [
        Commit("51" * 20, f"Do the plan (#12)\n\n{listed}"),
        Commit("r1", f"Revert \"Do the plan (#12)\"\n\nThis reverts commit {'51' * 20}.\n")
    ]) == {}


def test_a_fresh_clone_after_a_squash_merge_runs_nothing_again(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "## A\n- write a\n  FAKE: write a.txt A\n"
                                 "- write b\n  FAKE: write b.txt B\n"
                                 "## B\n- write c\n  FAKE: write c.txt C\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    git(work, "checkout", "-qb", "feature")
    run = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                          "--no-distill"], cwd=work, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    listed = git(work, "log", "--reverse", "--format=* %B", "main..feature")
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "--squash", "feature")
    git(work, "commit", "-qm", f"Do the plan (#12)\n\n{listed}")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(work), str(clone)], check=True)
    text = dry_run(clone)
    assert "3 task(s), 0 to run" in text, text
    assert "3 task(s) found done in the history" in text



def _two_tasks_run(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """A committed plan of two tasks, run to the end with git; (the project, the run's
    options)."""
    from tests.support.runner import agent_loop

    work = git_project(tmp_path, "## G\n- [ ] t1\n  FAKE: write f1.txt 1\n"
                                 "- [ ] t2\n  FAKE: write f2.txt 2\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    args = ("--vcs", "git", "--no-distill")
    assert agent_loop(work, *args).returncode == 0
    return work, args

def _readded(tmp_path: Path, fake_claude: FakeClaude, revert: bool) -> tuple[Path, str]:
    """A plan of two tasks run to the end (t1's commit reverted with `git revert` when
    `revert`), t1 deleted from the plan, a run, the plan put back (`git checkout tasks.md`),
    a run: that last run's output."""
    from tests.support.runner import agent_loop

    work, args = _two_tasks_run(tmp_path)
    first = git(work, "log", "--format=%H", "--grep", "/ t1").split()
    assert len(first) == 1
    if revert:
        git(work, "revert", "--no-edit", first[0])
    (work / "tasks.md").write_text("## G\n- [ ] t2\n  FAKE: write f2.txt 2\n")
    assert agent_loop(work, *args).returncode == 0
    git(work, "checkout", "-q", "tasks.md")
    last = agent_loop(work, *args)
    assert last.returncode == 0, last.stderr
    return work, last.stdout + last.stderr


def test_a_done_task_deleted_and_put_back_is_done_by_its_commit(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The trial: the agent was paid a third time for a plan of two tasks, "completed, but the
    # task changed no files", though t1's commit and its trailers are in the branch.
    work, out = _readded(tmp_path, fake_claude, revert=False)
    assert len(fake_claude.task_runs()) == 2, out
    first = git(work, "log", "--format=%H", "--grep", "/ t1").split()
    assert len(first) == 1
    assert f"task 1: done already in {first[0][:12]} (history" in out, out
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    t1 = state["tasks"][0]
    assert (t1["status"], t1["commit_id"]) == ("completed", first[0])


def test_a_reverted_task_put_back_runs_again(tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The history holds its commit and the revert of it: not done, so it runs.
    work, out = _readded(tmp_path, fake_claude, revert=True)
    assert len(fake_claude.task_runs()) == 3, out
    assert "task 1: done already in" not in out, out
    assert (work / "f1.txt").read_text().strip() == "1"


def test_status_says_a_done_task_put_back_is_done_as_the_dry_run_does(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Put back, t1 read "pending" in --status while --dry-run said "not run: done" (and the
    # run, paying nothing, recorded it done by its commit).
    from tests.support.runner import agent_loop

    work, args = _two_tasks_run(tmp_path)
    (work / "tasks.md").write_text("## G\n- [ ] t2\n  FAKE: write f2.txt 2\n")
    assert agent_loop(work, *args).returncode == 0
    git(work, "checkout", "-q", "tasks.md")
    first = git(work, "log", "--format=%H", "--grep", "/ t1").split()[0]
    dry = agent_loop(work, "--dry-run")
    assert "t1  (not run: done)" in dry.stdout, dry.stdout
    status = agent_loop(work, "--status")
    assert status.returncode == 0, status.stdout + status.stderr
    row = next(line for line in status.stdout.splitlines() if line.endswith("> t1"))
    assert "completed" in row and first[:12] in row, status.stdout
    assert f"task 1: done already in {first[:12]} (history)" in status.stdout, status.stdout
    assert len(fake_claude.task_runs()) == 2


def test_a_git_history_is_read_by_a_first_jj_run(tmp_path: Path, jj_bin: str,
                                                 fake_claude: FakeClaude) -> None:
    # Tasks a git run committed, `.agent-loop/` gone (a fresh clone), then `--vcs jj`: the jj
    # repository is made from git's history at the run's start, after the history was read,
    # so the history is git's; read as jj's (no repository yet) it named nothing and every
    # done task was paid for again.
    work = git_project(tmp_path, "## G\n- write a\n  FAKE: write a.txt A\n"
                                 "- write b\n  FAKE: write b.txt B\n")
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    first = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                            "--no-distill"], cwd=work, capture_output=True, text=True,
                           timeout=60)
    assert first.returncode == 0, first.stderr
    shutil.rmtree(work / ".agent-loop")
    again = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "jj",
                            "--no-distill"], cwd=work, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0, again.stderr
    assert "2 task(s) found done in the history" in again.stdout, again.stdout
    assert len(fake_claude.calls()) == 2  # neither task paid for again
    # and back: the jj run's changes read by a git run that finds no state
    shutil.rmtree(work / ".agent-loop")
    back = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--dry-run"], cwd=work, capture_output=True, text=True, timeout=60)
    assert back.returncode == 0, back.stderr
    assert "2 task(s), 0 to run" in back.stdout, back.stdout
