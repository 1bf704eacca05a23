"""The git backend's short way (`git add -A`, `git commit`): taken on a clean tree nothing else
has touched, and never where it would commit something the careful way leaves out."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.vcs.git import quick
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.git.quick import only_kept_ignored, staged_paths
from agentloop.vcs.git.record import OPEN_ATTEMPT
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git_commits, make_repo
from tests.support.runner import agent_loop
from tests.vcs.test_git import Killed, commit_files, git, kill_at, make, repo, subjects

__all__ = ["repo"]  # the fixture, shared


def counted(vcs: GitVcs, repo: Path, message: str, edit: object) -> tuple[int, tuple[str, ...]]:
    """Run one task whose agent is `edit(repo)`; (git processes begin and finish started, the
    files of its commit)."""
    before = proc.started()
    change = vcs.begin(message)
    mine = proc.started()
    edit(repo)  # type: ignore[operator]
    agent = proc.started()
    done = vcs.finish(change, message)
    return mine - before + proc.started() - agent, done.files


def write(name: str, text: str = "x\n") -> object:
    def edit(repo: Path) -> None:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return edit


def test_a_clean_task_after_the_first_costs_two_git_commands(repo: Path) -> None:
    vcs = make(repo)
    counted(vcs, repo, "one", write("a.txt"))
    for name in ("b.txt", "c/d.txt"):
        started, files = counted(vcs, repo, name, write(name))
        assert (started, files) == (2, (name,))  # git add -A, git commit
    assert subjects(repo) == ["c/d.txt", "b.txt", "one", "initial"]
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"


def test_deletions_edits_and_odd_names_are_committed_and_named(repo: Path) -> None:
    names = ["it's here.txt", "caf\udce9.txt", "new\nline.txt", "ü/ß.txt"]
    vcs = make(repo)
    counted(vcs, repo, "warm", write("keep.txt"))

    def edit(root: Path) -> None:
        (root / "README.md").unlink()
        (root / "keep.txt").write_text("edited\n")
        for name in names:
            (root / name).parent.mkdir(exist_ok=True)
            (root / name).write_text("odd\n")
    _, files = counted(vcs, repo, "odd", edit)
    assert sorted(files) == sorted(["README.md", "keep.txt", *names])
    shown = git(repo, "show", "--format=", "--name-only", "-z", "HEAD").split("\0")
    assert sorted(p for p in shown if p) == sorted(["README.md", "keep.txt", *names])
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"


def test_what_an_agent_staged_itself_is_seen_and_the_task_file_stays_out(repo: Path) -> None:
    vcs = make(repo)
    counted(vcs, repo, "warm", write("a.txt"))

    def edit(root: Path) -> None:
        (root / "tasks.md").write_text("## One\n- [x] a\n")
        (root / "b.txt").write_text("b\n")
        git(root, "add", "tasks.md", "b.txt")
        (root / "b.txt").write_text("b, edited after it was staged\n")
    _, files = counted(vcs, repo, "staged", edit)
    assert files == ("b.txt",)
    assert commit_files(repo, "HEAD") == ["b.txt"]
    assert git(repo, "show", "HEAD:b.txt") == "b, edited after it was staged\n"
    assert git(repo, "status", "--porcelain") == "A  tasks.md\n"  # the agent's, as it left it


def test_an_agents_git_status_only_makes_it_careful(repo: Path) -> None:
    vcs = make(repo)
    counted(vcs, repo, "warm", write("a.txt"))

    def edit(root: Path) -> None:
        (root / "b.txt").write_text("b\n")
        os.utime(root / "a.txt")  # stat-dirty: `git status` rewrites the index
        git(root, "status", "--porcelain")
    started, files = counted(vcs, repo, "status", edit)
    assert files == ("b.txt",) and started > 2


@pytest.mark.parametrize("committed", [True, False])
def test_a_nested_repository_is_never_taken_as_a_gitlink(repo: Path, committed: bool) -> None:
    """The agent's repository's files are the task's as plain files (agentloop.vcs.git.nested),
    never a gitlink to a commit only that folder holds."""
    vcs = make(repo)
    counted(vcs, repo, "warm", write("a.txt"))

    def edit(root: Path) -> None:
        (root / "sub").mkdir()
        git(root / "sub", "init", "-q")
        (root / "sub" / "inner.txt").write_text("inner\n")
        if committed:  # `git add -A` takes it as a gitlink; else it fails
            git(root / "sub", "add", "inner.txt")
            git(root / "sub", "commit", "-q", "-m", "inner")
        (root / "b.txt").write_text("b\n")
    _, files = counted(vcs, repo, "nested", edit)
    assert files == ("b.txt", "sub/inner.txt")
    assert commit_files(repo, "HEAD") == ["b.txt", "sub/inner.txt"]
    assert "160000" not in git(repo, "ls-tree", "-r", "HEAD")
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"


def test_state_and_other_plans_stay_out_even_unignored(repo: Path) -> None:
    (repo / ".agent-loop" / "plans" / "x").mkdir(parents=True)
    (repo / ".agent-loop" / "plans" / "x" / "state.json").write_text(
        json.dumps({"task_file": "other.md"}))
    (repo / "other.md").write_text("## Other\n- [ ] o\n")
    vcs = GitVcs(repo, repo / "tasks.md", allow_dirty=True)
    vcs.prepare()
    git(repo, "add", "other.md")
    git(repo, "commit", "-q", "-m", "other plan")
    counted(vcs, repo, "warm", write("a.txt"))

    def edit(root: Path) -> None:
        (root / "other.md").write_text("## Other\n- [x] o\n")
        (root / "tasks.md").write_text("## One\n- [x] a\n")
        (root / ".agent-loop" / "log.txt").write_text("no .gitignore holds this folder\n")
        (root / "b.txt").write_text("b\n")
    _, files = counted(vcs, repo, "kept out", edit)
    assert files == ("b.txt",) and commit_files(repo, "HEAD") == ["b.txt"]


def test_nothing_changed_is_an_empty_task(repo: Path) -> None:
    vcs = make(repo)
    counted(vcs, repo, "warm", write("a.txt"))
    change = vcs.begin("nothing")
    assert vcs.finish(change, "nothing").empty
    assert subjects(repo) == ["warm", "initial"]


@pytest.mark.parametrize("after", [False, True])
def test_a_run_killed_around_git_add_is_rolled_back(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                    after: bool) -> None:
    crashed = make(repo)
    counted(crashed, repo, "warm", write("a.txt"))
    change = crashed.begin("task")
    (repo / "b.txt").write_text("b\n")
    (repo / "a.txt").write_text("edited\n")
    kill_at(monkeypatch, crashed, "add", "--all", after=after)
    with pytest.raises(Killed):
        crashed.finish(change, "task")
    notes = GitVcs(repo, repo / "tasks.md").prepare()
    assert notes[0].startswith("rolled back the unfinished task attempt")
    assert not (repo / "b.txt").exists() and (repo / "a.txt").read_text() == "x\n"
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"  # the index too


def test_what_git_add_reports_is_read_whole_or_not_at_all(tmp_path: Path) -> None:
    (tmp_path / "a b'.txt").write_text("")
    (tmp_path / "dir").mkdir()
    assert staged_paths("add 'a b'.txt'\nremove 'gone.txt'\n", tmp_path) == {"a b'.txt",
                                                                             "gone.txt"}
    assert staged_paths("", tmp_path) == set()
    for odd in ["add 'missing.txt'\n", "remove 'a b'.txt'\n", "add 'dir'\n", "add 'dir/'\n",
                "warning: something\n", "add '../up.txt'\n", "add 'a b'.txt\n"]:
        assert staged_paths(odd, tmp_path) is None, odd


@pytest.mark.parametrize("message", ["task", "task, as the distiller put it"])
def test_a_run_killed_right_after_the_short_commit_keeps_it_once(
        repo: Path, monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    crashed = make(repo)
    counted(crashed, repo, "warm", write("a.txt"))
    change = crashed.begin("task")
    (repo / "b.txt").write_text("b\n")
    kill_at(monkeypatch, crashed, "commit", after=True)
    with pytest.raises(Killed):
        crashed.finish(change, message)
    sha = git(repo, "rev-parse", "HEAD").strip()
    assert subjects(repo) == [message, "warm", "initial"]
    vcs = GitVcs(repo, repo / "tasks.md")
    assert vcs.prepare() == [f"an earlier run stopped right after committing {sha[:12]}; "
                             "the commit is kept"]
    found = vcs.recovered()
    assert found is not None and found.change_id == sha and found.files == ("b.txt",)
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"


def test_a_commit_the_user_makes_between_tasks_stays_theirs(repo: Path) -> None:
    """Found by review: with HEAD read from a cache, a user's commit during a `--sleep` pause
    (no process of ours in between) was folded into the next task's commit."""
    vcs = make(repo)
    counted(vcs, repo, "one", write("a.txt"))
    (repo / "u.txt").write_text("the user's\n")
    for argv in (["git", "add", "u.txt"], ["git", "commit", "-qm", "user: my own work"]):
        subprocess.run(argv, cwd=repo, check=True)  # not through proc: nothing of ours ran
    _, files = counted(vcs, repo, "two", write("b.txt"))
    assert files == ("b.txt",)
    assert subjects(repo) == ["two", "user: my own work", "one", "initial"]


def test_edits_made_while_the_loop_pauses_are_not_the_next_tasks(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vcs = GitVcs(repo, repo / "tasks.md", allow_dirty=True)
    vcs.prepare()
    counted(vcs, repo, "one", write("a.txt"))
    monkeypatch.setattr(quick, "CARRY_SECONDS", 0.0)  # the pause outlasted it
    (repo / "notes.txt").write_text("written by the user during --sleep\n")
    _, files = counted(vcs, repo, "two", write("b.txt"))
    assert files == ("b.txt",) and commit_files(repo, "HEAD") == ["b.txt"]
    assert git(repo, "status", "--porcelain") == "?? notes.txt\n?? tasks.md\n"


def test_the_commit_message_writers_look_at_the_diff_keeps_the_short_way(repo: Path) -> None:
    vcs = make(repo)
    counted(vcs, repo, "warm", write("a.txt"))
    change = vcs.begin("task")
    (repo / "b.txt").write_text("b\n")
    assert "+b" in vcs.diff(change)  # what the distiller is shown, before the commit
    before = proc.started()
    done = vcs.finish(change, "task")
    assert done.files == ("b.txt",) and proc.started() - before == 2


def test_gits_complaint_of_an_ignored_state_folder_is_no_failure() -> None:
    notice = ("The following paths are ignored by one of your .gitignore files:\n"
              ".agent-loop\ntasks.md\nhint: Use -f if you really want to add them.\n")
    assert only_kept_ignored(notice, [".agent-loop", "tasks.md"])
    assert not only_kept_ignored(notice, [".agent-loop"])  # a path we never named
    assert not only_kept_ignored("fatal: adding files failed\n", [".agent-loop"])
    assert not only_kept_ignored(notice.replace("tasks.md\n", "tasks.md\nwarning: odd\n"),
                                 [".agent-loop", "tasks.md"])
    assert not only_kept_ignored("", [".agent-loop"])


def test_a_task_committed_with_the_message_begin_expected_rewrites_no_record(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The open-attempt record names at begin the message a plain completion commits with:
    finish replaces no file before its commit (on ext4, a flush to disk every task), and a run
    killed right after that commit still keeps it, once."""
    crashed = make(repo)
    counted(crashed, repo, "warm", write("a.txt"))
    message = "task\n\nAgent-Loop-Task: 2"
    crashed.expect_message(message)
    change = crashed.begin("task")
    record = repo / ".git" / OPEN_ATTEMPT
    began = os.stat(record).st_ino
    assert json.loads(record.read_text())["message"] == message
    (repo / "b.txt").write_text("b\n")
    kill_at(monkeypatch, crashed, "commit", after=True)
    with pytest.raises(Killed):
        crashed.finish(change, message)
    assert os.stat(record).st_ino == began  # written once, by begin
    sha = git(repo, "rev-parse", "HEAD").strip()
    vcs = GitVcs(repo, repo / "tasks.md")
    assert vcs.prepare() == [f"an earlier run stopped right after committing {sha[:12]}; "
                             "the commit is kept"]
    found = vcs.recovered()
    assert found is not None and found.change_id == sha and found.files == ("b.txt",)
    assert subjects(repo) == ["task", "warm", "initial"]


def test_an_expected_message_that_did_not_come_is_written_before_the_commit(
        repo: Path) -> None:
    """A task committed with another message than begin expected (a distilled one, a note):
    the record names that one before HEAD moves, as ever; the expectation holds for one
    begin only."""
    vcs = make(repo)
    counted(vcs, repo, "warm", write("a.txt"))
    vcs.expect_message("task\n\nplain")
    change = vcs.begin("task")
    (repo / "b.txt").write_text("b\n")
    vcs.finish(change, "task, distilled")
    record = repo / ".git" / OPEN_ATTEMPT
    assert json.loads(record.read_text())["message"] == "task, distilled"
    vcs.begin("next")
    assert json.loads(record.read_text())["message"] == "next"


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_an_edit_outside_a_sparse_checkouts_cone_is_committed(
        tmp_path: Path, fake_claude: FakeClaude, workplace: str) -> None:
    # `git add -A` leaves a tracked file outside the sparse-checkout cone (not checked out,
    # written by the agent) out without a word (exit 0, nothing staged): the task was taken
    # for one that changed no files, completed empty, and its edit lost with the lane (in
    # your checkout, left there as if yours).
    work = tmp_path / "work"
    for name in ("src", "docs"):
        (work / name).mkdir(parents=True)
        (work / name / f"{name[0]}.txt").write_text(f"{name}\n")
    make_repo(work, files={"README.md": "hello\n"},
              plan="- edit docs\n  FAKE: write docs/d.txt D2\n")
    git(work, "sparse-checkout", "set", "src")
    assert not (work / "docs").exists()
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [files for _, _, files in git_commits(work)] == [["docs/d.txt"]], done.stdout
    assert git(work, "show", "HEAD:docs/d.txt") == "D2\n"
