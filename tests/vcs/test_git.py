"""The git backend against real git repositories; the "agent" is plain file writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentloop import AGENT_REFLOG_ACTION, proc
from agentloop.errors import VcsError
from agentloop.proc.environ import current
from agentloop.vcs.choose import open_vcs
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.git.record import OPEN_ATTEMPT
from agentloop.vcs.protocol import Change
from tests.support.repos import agent_git, make_repo


def git(repo: Path, *args: str) -> str:
    return proc.run(["git", *args], cwd=repo).stdout


def commit_files(repo: Path, rev: str) -> list[str]:
    return git(repo, "show", "--format=", "--name-only", rev).split()


def subjects(repo: Path) -> list[str]:
    return git(repo, "log", "--format=%s").splitlines()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit, a tracked README and an untracked tasks.md."""
    return make_repo(tmp_path / "project", "git", plan="## One\n- [ ] a\n")


@pytest.fixture(autouse=True, params=["quick", "careful"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: the short way to commit where it may be taken (agentloop.vcs.git.quick),
    and the careful way always: what a task commit holds must not depend on which ran."""
    if request.param == "careful":
        careful(monkeypatch, GitVcs)
    return str(request.param)


def make(repo: Path, allow_dirty: bool = False) -> GitVcs:
    vcs = GitVcs(repo, repo / "tasks.md", allow_dirty=allow_dirty)
    vcs.prepare()
    return vcs


def run_task(vcs: GitVcs, repo: Path, message: str, files: dict[str, str]) -> Change:
    change = vcs.begin(message)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return vcs.finish(change, message)


def test_dirty_tree_is_refused_in_one_line(repo: Path) -> None:
    (repo / "README.md").write_text("changed by the user\n")
    with pytest.raises(VcsError) as caught:
        make(repo)
    assert "--allow-dirty" in str(caught.value) and "\n" not in str(caught.value)


def test_untracked_user_file_is_dirty_too(repo: Path) -> None:
    (repo / "notes.txt").write_text("mine\n")
    with pytest.raises(VcsError, match="notes.txt"):
        make(repo)


def test_own_gitignore_line_and_state_dir_are_not_dirty(repo: Path) -> None:
    (repo / ".gitignore").write_text(".agent-loop/\n")
    (repo / ".agent-loop").mkdir()
    (repo / ".agent-loop" / "state.json").write_text("{}")
    vcs = make(repo)
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})
    assert done.files == ("a.txt",)
    assert commit_files(repo, "HEAD") == ["a.txt"]


def test_state_dir_is_never_committed_even_when_not_ignored(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / ".agent-loop").mkdir()
    (repo / ".agent-loop" / "state.json").write_text("{}")
    (repo / "a.txt").write_text("a\n")
    assert vcs.finish(change, "task").files == ("a.txt",)


def test_allow_dirty_keeps_user_work_out_of_task_commits(repo: Path) -> None:
    (repo / "README.md").write_text("user edit\n")
    (repo / "notes.txt").write_text("user notes\n")
    git(repo, "add", "notes.txt")  # staged work stays staged
    vcs = make(repo, allow_dirty=True)
    failed = vcs.begin("task")
    (repo / "README.md").write_text("agent broke it\n")
    (repo / "notes.txt").unlink()
    vcs.abandon(failed)
    assert (repo / "README.md").read_text() == "user edit\n"
    assert (repo / "notes.txt").read_text() == "user notes\n"
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})
    assert done.files == ("a.txt",)
    assert commit_files(repo, "HEAD") == ["a.txt"]
    assert (repo / "README.md").read_text() == "user edit\n"
    assert git(repo, "status", "--porcelain").splitlines() == [
        " M README.md", "A  notes.txt", "?? tasks.md"]


def test_a_dirty_file_the_task_edits_further_is_committed_whole(repo: Path) -> None:
    (repo / "README.md").write_text("user edit\n")
    vcs = make(repo, allow_dirty=True)
    done = run_task(vcs, repo, "task", {"README.md": "user edit\nagent line\n"})
    assert done.files == ("README.md",)
    assert git(repo, "show", "HEAD:README.md") == "user edit\nagent line\n"


def test_task_file_never_lands_in_a_commit(repo: Path) -> None:
    vcs = make(repo)
    first = run_task(vcs, repo, "untracked tasks.md", {"tasks.md": "## One\n- [x] a\n",
                                                        "a.txt": "a\n"})
    assert first.files == ("a.txt",)
    (repo / "tasks.md").write_text("## One\n- [ ] a\n")
    git(repo, "add", "tasks.md")
    git(repo, "commit", "-q", "-m", "track tasks.md")
    second = vcs.begin("tracked tasks.md")
    (repo / "tasks.md").write_text("## One\n- [x] a\n- [ ] b\n")
    (repo / "b.txt").write_text("b\n")
    done = vcs.finish(second, "tracked tasks.md")
    assert done.files == ("b.txt",)
    assert commit_files(repo, "HEAD") == ["b.txt"]
    assert (repo / "tasks.md").read_text() == "## One\n- [x] a\n- [ ] b\n"


def test_abandon_keeps_ignored_and_preexisting_files(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore build")
    (repo / "build").mkdir()
    (repo / "build" / "old.o").write_text("old\n")
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "build" / "new.o").write_text("ignored, made by the attempt\n")
    (repo / "created.txt").write_text("x\n")
    (repo / "README.md").unlink()
    vcs.abandon(change)
    assert not (repo / "created.txt").exists()
    assert (repo / "README.md").read_text() == "hello\n"
    assert (repo / "build" / "old.o").exists() and (repo / "build" / "new.o").exists()
    assert (repo / "tasks.md").exists()


def test_agent_commits_are_folded_into_the_task_commit(repo: Path) -> None:
    (repo / "tasks.md").write_text("## One\n- [ ] a\n")
    git(repo, "add", "tasks.md")
    git(repo, "commit", "-q", "-m", "track tasks.md")
    base = git(repo, "rev-parse", "HEAD").strip()
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "a.txt").write_text("a\n")
    (repo / "tasks.md").write_text("## One\n- [x] a\n")
    git(repo, "add", "a.txt")
    agent_git(repo, "commit", "-q", "-a", "-m", "agent: add a")  # takes tasks.md along
    (repo / "b.txt").write_text("left uncommitted\n")
    done = vcs.finish(change, "task")
    assert done.files == ("a.txt", "b.txt")
    assert git(repo, "rev-parse", "HEAD^").strip() == base
    assert commit_files(repo, "HEAD") == ["a.txt", "b.txt"]
    assert git(repo, "log", "-1", "--format=%B").startswith("task\n\nIncludes the commits")
    assert "agent: add a" in git(repo, "log", "-1", "--format=%B")
    # The task file keeps its edit in the working tree, unstaged, outside any commit.
    assert git(repo, "status", "--porcelain") == " M tasks.md\n"


def test_abandon_undoes_the_agents_own_commits(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "a.txt").write_text("a\n")
    (repo / "README.md").write_text("changed\n")
    git(repo, "add", "a.txt", "README.md")
    agent_git(repo, "commit", "-q", "-m", "agent")
    vcs.abandon(change)
    assert git(repo, "rev-parse", "HEAD").strip() == base
    assert not (repo / "a.txt").exists()
    assert (repo / "README.md").read_text() == "hello\n"
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"


def test_agent_switching_branch_is_an_error(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task")
    git(repo, "checkout", "-q", "-b", "elsewhere")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    agent_git(repo, "commit", "-q", "-m", "agent")
    with pytest.raises(VcsError, match="switched"):
        vcs.finish(change, "task")


def test_deleted_and_executable_files(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "README.md").unlink()
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    done = vcs.finish(change, "task")
    assert done.files == ("README.md", "run.sh")
    assert "100755 blob" in git(repo, "ls-tree", "HEAD", "run.sh")
    assert "README.md" not in git(repo, "ls-tree", "--name-only", "HEAD")


def test_diff_before_and_after_finish(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "a.txt").write_text("new line\n")
    assert "+new line" in vcs.diff(change)
    done = vcs.finish(change, "task")
    patch = vcs.diff(done)
    assert "a.txt" in patch and "+new line" in patch and "tasks.md" not in patch


def test_plain_folder_is_initialized_and_its_files_become_the_base(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("print(1)\n")
    (tmp_path / "tasks.md").write_text("- [ ] a\n")
    vcs = open_vcs("git", tmp_path, tmp_path / "tasks.md")
    notes = vcs.prepare()
    assert any("initialized a git repository" in n for n in notes)
    assert commit_files(tmp_path, "HEAD") == ["main.py"]
    done = run_task(vcs, tmp_path, "task", {"main.py": "print(2)\n"})  # type: ignore[arg-type]
    git(tmp_path, "revert", "--no-edit", done.change_id)
    assert (tmp_path / "main.py").read_text() == "print(1)\n"


def test_unborn_branch_gets_a_root_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "tasks.md").write_text("- [ ] a\n")
    vcs = make(tmp_path)
    failed = vcs.begin("task")
    (tmp_path / "a.txt").write_text("a\n")
    git(tmp_path, "add", "a.txt")
    agent_git(tmp_path, "commit", "-q", "-m", "agent")
    vcs.abandon(failed)
    assert not (tmp_path / "a.txt").exists()
    # No commit on any branch: only the copy of the rolled-back files, kept aside.
    assert git(tmp_path, "rev-list", "--exclude=refs/agent-loop/*", "--all") == ""
    assert git(tmp_path, "show", "refs/agent-loop/rolled-back:a.txt") == "a\n"
    done = run_task(vcs, tmp_path, "task", {"a.txt": "a\n"})
    assert subjects(tmp_path) == ["task"] and done.base == ""
    assert "a.txt" in vcs.diff(done)


def test_undoing_the_users_own_edit_makes_no_empty_commit(repo: Path) -> None:
    (repo / "README.md").write_text("user edit\n")
    vcs = make(repo, allow_dirty=True)
    done = run_task(vcs, repo, "task", {"README.md": "hello\n"})
    assert done.empty and subjects(repo) == ["initial"]


def test_an_attempt_left_open_by_a_dead_run_is_rolled_back(repo: Path) -> None:
    crashed = make(repo)
    crashed.begin("task")
    (repo / "half.txt").write_text("half done\n")
    (repo / "README.md").write_text("half edited\n")
    (repo / "tasks.md").write_text("## One\n- [ ] a (interrupted)\n")
    vcs = GitVcs(repo, repo / "tasks.md")
    said = vcs.prepare()
    kept = git(repo, "rev-parse", "refs/agent-loop/rolled-back")[:12]
    assert said == ["rolled back the unfinished task attempt an earlier run left behind; its "
                    f"files are kept in commit {kept} (`git show {kept}`)"]
    assert not (repo / "half.txt").exists()
    assert (repo / "README.md").read_text() == "hello\n"
    assert commit_files(repo, "refs/agent-loop/rolled-back") == ["README.md", "half.txt"]
    assert "interrupted" in (repo / "tasks.md").read_text()
    assert make(repo).prepare() == []  # nothing left to roll back


def test_an_attempt_a_killed_run_left_in_a_lane_is_rolled_back_there(repo: Path,
                                                                     tmp_path: Path) -> None:
    # What your checkout's backend asks of a lane a killed run in lanes left (_left_in_a_lane):
    # its attempt rolled back as the lane's own prepare would, the line naming the copy.
    lane = tmp_path / "lane"
    git(repo, "worktree", "add", "-q", "-b", "agent-loop/one", str(lane))
    crashed = GitVcs(lane, repo / "tasks.md", lane=True)
    crashed.prepare()
    crashed.begin("task")
    (lane / "half.txt").write_text("half done\n")
    (lane / "README.md").write_text("half edited\n")
    line = GitVcs(lane, repo / "tasks.md", lane=True).roll_back_killed()
    kept = git(repo, "rev-parse", "refs/agent-loop/rolled-back")[:12]
    assert line is not None and f"kept in commit {kept}" in line, line
    assert not (lane / "half.txt").exists()
    assert (lane / "README.md").read_text() == "hello\n"
    assert commit_files(repo, "refs/agent-loop/rolled-back") == ["README.md", "half.txt"]
    assert GitVcs(lane, repo / "tasks.md", lane=True).roll_back_killed() is None  # no record


def test_a_dead_runs_attempt_with_commits_goes_on_with_its_task(repo: Path) -> None:
    # Commits on the branch since the attempt began are the attempt's, as finish takes them
    # while the agent runs: its task begun again goes on from them and folds them in.
    crashed = make(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    crashed.begin("task")
    (repo / "half.txt").write_text("half done\n")
    git(repo, "add", "half.txt")
    agent_git(repo, "commit", "-q", "-m", "committed by the agent")
    (repo / "more.txt").write_text("uncommitted\n")
    # --dry-run says what the run does: the attempt's file is no dirty tree to refuse.
    assert GitVcs(repo, repo / "tasks.md").uncommitted() is None
    again = GitVcs(repo, repo / "tasks.md")
    notes = again.prepare()  # the attempt's uncommitted file is no dirty tree of the user's
    assert notes == ["an earlier run stopped inside a task after its agent made 1 commit(s); "
                     "they and its files are kept, and the task goes on from them"]
    change = again.begin("task")
    assert change.kept and change.base == base
    done = again.finish(change, "task")
    assert sorted(done.files) == ["half.txt", "more.txt"]
    assert git(repo, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:] == [base]
    assert "committed by the agent" in git(repo, "show", "-s", "--format=%B", "HEAD")


@pytest.mark.parametrize("killed_mark", ["agent-loop agent 0badf00d", None])
def test_a_dead_runs_attempt_goes_on_with_that_runs_agents_commits(
        repo: Path, killed_mark: str | None) -> None:
    # Each run gives its agents' git a mark of its own: the killed run's agent's commit carries
    # that run's, which its attempt's record keeps (a record from before each run had one: the
    # mark all had then). It is the agent's, folded into the task's one commit; it was taken
    # for yours, kept apart under the task's.
    crashed = make(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    crashed.begin("task")
    record = repo / ".git" / OPEN_ATTEMPT
    kept = json.loads(record.read_text())
    assert kept["mark"] == AGENT_REFLOG_ACTION
    mark = killed_mark or "agent-loop agent"
    if killed_mark is None:
        del kept["mark"]
    else:
        kept["mark"] = killed_mark
    record.write_text(json.dumps(kept))
    (repo / "half.txt").write_text("half done\n")
    git(repo, "add", "half.txt")
    proc.run(["git", "commit", "-qm", "the killed run's agent"], cwd=repo,
             env={**current(), "GIT_REFLOG_ACTION": mark})
    again = GitVcs(repo, repo / "tasks.md")
    again.prepare()
    change = again.begin("task")
    assert change.kept and change.base == base
    (repo / "more.txt").write_text("more\n")
    done = again.finish(change, "task")
    assert sorted(done.files) == ["half.txt", "more.txt"]
    assert git(repo, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:] == [base]
    assert "the killed run's agent" in git(repo, "show", "-s", "--format=%B", "HEAD")


# Where finish can die after HEAD moved back over the agent's commits: right then, before the
# task's commit; or (built by hand) with the commit made but not yet on the branch.
@pytest.mark.parametrize("dies_at", ["agent-loop: set aside the agent's commits", "update-ref"])
def test_a_kill_inside_finish_after_head_moved_back_keeps_the_agents_commits(
        repo: Path, monkeypatch: pytest.MonkeyPatch, dies_at: str) -> None:
    # finish moves HEAD back over the agent's commits before it commits the task: killed right
    # then, the next run puts them back and the task goes on from them; none is left to a reflog.
    crashed = make(repo)
    base = git(repo, "rev-parse", "HEAD").strip()
    change = crashed.begin("task")
    (repo / "half.txt").write_text("half done\n")
    git(repo, "add", "half.txt")
    agent_git(repo, "commit", "-q", "-m", "committed by the agent")
    agents = git(repo, "rev-parse", "HEAD").strip()
    if dies_at == "update-ref":
        by_hand(monkeypatch, crashed)
        # The second update-ref: the first one moved HEAD back, this one would land the commit.
        real = crashed.git.out
        calls: list[str] = []

        def counting(*args: str, **kwargs: object) -> str:
            if args[:1] == ("update-ref",):
                calls.append(args[0])
                if len(calls) == 2:
                    raise Killed("update-ref")
            return real(*args, **kwargs)  # type: ignore[arg-type]
        monkeypatch.setattr(crashed.git, "out", counting)
    else:
        kill_at(monkeypatch, crashed, dies_at, after=True)
    with pytest.raises(Killed):
        crashed.finish(change, "task\n\nTask: 1")  # the full message: not begin's
    assert git(repo, "rev-parse", "HEAD").strip() == base
    again = GitVcs(repo, repo / "tasks.md")
    again.prepare()
    assert git(repo, "rev-parse", "HEAD").strip() == agents
    assert again.begin("task").kept
    # Killed again while the agent goes on: the run after that still goes on from them.
    third = GitVcs(repo, repo / "tasks.md")
    third.prepare()
    redo = third.begin("task")
    assert redo.kept
    done = third.finish(redo, "task")
    assert done.files == ("half.txt",)
    assert "committed by the agent" in git(repo, "show", "-s", "--format=%B", "HEAD")


def test_a_dead_runs_attempt_with_commits_is_left_alone_by_another_task(repo: Path) -> None:
    crashed = make(repo)
    crashed.begin("task")
    (repo / "half.txt").write_text("half done\n")
    git(repo, "add", "half.txt")
    git(repo, "commit", "-q", "-m", "the user kept it")
    kept = git(repo, "rev-parse", "HEAD").strip()
    again = GitVcs(repo, repo / "tasks.md")
    again.prepare()
    change = again.begin("another task")
    assert not change.kept and change.base == kept
    assert (repo / "half.txt").exists()


class Killed(BaseException):
    """The run dies here, as under SIGKILL: no cleanup of ours runs after it."""


def kill_at(monkeypatch: pytest.MonkeyPatch, vcs: GitVcs, *git_args: str,
            after: bool = False) -> None:
    """Make `vcs` die when it runs git with `git_args` in its argv: before the command, or
    right `after` it did its work."""
    real = vcs.git.run  # `out` and `code` go through it too

    def dying(*args: str, **kwargs: object) -> object:
        hit = any(args[i:i + len(git_args)] == git_args for i in range(len(args)))
        if hit and not after:
            raise Killed(" ".join(args))
        out = real(*args, **kwargs)  # type: ignore[arg-type]
        if hit:
            raise Killed(" ".join(args))
        return out
    monkeypatch.setattr(vcs.git, "run", dying)


def by_hand(monkeypatch: pytest.MonkeyPatch, vcs: GitVcs) -> None:
    """Make `vcs` build its commits by hand, as when git's own `commit` declines."""
    careful(monkeypatch, vcs)
    monkeypatch.setattr(vcs.tree, "commit_here", lambda *args: None)


def careful(monkeypatch: pytest.MonkeyPatch, vcs: GitVcs | type[GitVcs]) -> None:
    """Make `vcs` commit the careful way (`git status`, then `commit --only`) every time."""
    monkeypatch.setattr(vcs, "_quick_finish", lambda *args: None)


# Where a run can die once the task's commit exists: git's `commit` has moved HEAD (the record
# names only the message), the commit built by hand has landed and the index is being settled,
# or finish returned and the runner had not saved the task yet.
@pytest.mark.parametrize("dies_at", ["commit", "reset, by hand", "after finish"])
def test_a_run_killed_right_after_its_commit_keeps_it_once(
        repo: Path, monkeypatch: pytest.MonkeyPatch, dies_at: str) -> None:
    crashed = make(repo)
    change = crashed.begin("task")
    (repo / "a.txt").write_text("draft\n")
    git(repo, "add", "a.txt")  # what the agent staged is settled as finish would have
    (repo / "a.txt").write_text("a\n")
    if dies_at == "after finish":
        crashed.finish(change, "task")  # then killed before the runner saved it (no close)
    else:
        if dies_at.endswith("by hand"):
            by_hand(monkeypatch, crashed)
        kill_at(monkeypatch, crashed, dies_at.split(",")[0], after=dies_at == "commit")
        with pytest.raises(Killed):
            crashed.finish(change, "task")
    sha = git(repo, "rev-parse", "HEAD").strip()
    assert subjects(repo) == ["task", "initial"]
    # The runner never saved the task as done: the next run is handed the commit.
    vcs = GitVcs(repo, repo / "tasks.md")
    assert vcs.prepare() == [f"an earlier run stopped right after committing {sha[:12]}; "
                             "the commit is kept"]
    found = vcs.recovered()
    assert found is not None and found.change_id == sha and found.files == ("a.txt",)
    assert vcs.recovered() is None
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"
    assert (repo / "a.txt").read_text() == "a\n"
    again = run_task(vcs, repo, "task", {})
    assert again.empty and subjects(repo) == ["task", "initial"]


@pytest.mark.parametrize("dies_at", ["commit", "update-ref, by hand"])
def test_a_run_killed_before_its_commit_landed_is_rolled_back(
        repo: Path, monkeypatch: pytest.MonkeyPatch, dies_at: str) -> None:
    crashed = make(repo)
    change = crashed.begin("task")
    (repo / "a.txt").write_text("a\n")
    if dies_at.endswith("by hand"):
        by_hand(monkeypatch, crashed)
    kill_at(monkeypatch, crashed, dies_at.split(",")[0])
    with pytest.raises(Killed):
        crashed.finish(change, "task")
    notes = GitVcs(repo, repo / "tasks.md").prepare()
    assert notes[0].startswith("rolled back the unfinished task attempt")
    assert not (repo / "a.txt").exists() and subjects(repo) == ["initial"]
    # Nothing is lost: the rolled-back files are kept in a commit the note names.
    saved = git(repo, "rev-parse", "refs/agent-loop/rolled-back").strip()
    assert saved[:12] in notes[0]
    assert git(repo, "show", f"{saved}:a.txt") == "a\n"


def test_a_dead_runs_record_that_cannot_be_read_is_dropped_with_a_note(repo: Path) -> None:
    make(repo).begin("task")
    (repo / ".git" / "agent-loop-attempt.json").write_text("{not json")
    (repo / "half.txt").write_text("half done\n")
    vcs = GitVcs(repo, repo / "tasks.md", allow_dirty=True)
    assert "could not be read" in vcs.prepare()[0]
    assert (repo / "half.txt").exists()
    assert not (repo / ".git" / "agent-loop-attempt.json").exists()


def test_a_dead_runs_attempt_whose_saved_files_are_gone_is_left_alone(repo: Path) -> None:
    (repo / "README.md").write_text("user edit\n")
    make(repo, allow_dirty=True).begin("task")
    (repo / "README.md").write_text("agent edit\n")
    user_blob = proc.run(["sh", "-c", "printf 'user edit\\n' | git hash-object --stdin"],
                         cwd=repo).stdout.strip()
    (repo / ".git" / "objects" / user_blob[:2] / user_blob[2:]).unlink()  # as `git gc` would
    notes = GitVcs(repo, repo / "tasks.md", allow_dirty=True).prepare()
    assert "left as they are" in notes[0]
    assert (repo / "README.md").read_text() == "agent edit\n"


def test_a_dead_runs_rollback_spares_what_is_not_the_attempts(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n.agent-loop/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore build")
    make(repo).begin("task")
    (repo / "a.txt").write_text("a\n")
    (repo / "README.md").write_text("half edited\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored, even once force-added\n")
    git(repo, "add", "-f", "build/out.o")
    (repo / ".agent-loop").mkdir()
    (repo / ".agent-loop" / "state.json").write_text("{}")
    # The next run uses another task file: the dead run's task file is still kept out.
    vcs = GitVcs(repo, repo / "other.md", allow_dirty=True)
    assert vcs.prepare()[0].startswith("rolled back")
    assert not (repo / "a.txt").exists()
    assert (repo / "README.md").read_text() == "hello\n"
    assert (repo / "build" / "out.o").exists()
    assert (repo / ".agent-loop" / "state.json").exists()
    assert (repo / "tasks.md").exists()
    assert git(repo, "status", "--porcelain", "--ignored").splitlines() == [
        "?? tasks.md", "!! .agent-loop/", "!! build/"]


def test_a_record_naming_paths_outside_the_repo_never_reaches_them(repo: Path) -> None:
    outside = repo.parent / "outside.txt"
    outside.write_text("not the repository's\n")
    make(repo).begin("task")
    record = repo / ".git" / "agent-loop-attempt.json"
    data = json.loads(record.read_text())
    data["states"] = {"../outside.txt": "missing", str(outside): "missing"}
    record.write_text(json.dumps(data))
    assert GitVcs(repo, repo / "tasks.md").prepare()[0].startswith("rolled back")
    assert outside.read_text() == "not the repository's\n"


def test_files_that_became_folders_and_back_are_committed_and_rolled_back(repo: Path) -> None:
    (repo / "notes").write_text("the user's\n")
    vcs = make(repo, allow_dirty=True)
    failed = vcs.begin("task")
    for name in ("README.md", "notes"):
        (repo / name).unlink()
        (repo / name).mkdir()
        (repo / name / "part.txt").write_text("part\n")
    assert vcs.diff(failed).count("+part") == 2  # what finish would commit
    vcs.abandon(failed)
    assert (repo / "README.md").read_text() == "hello\n"
    assert (repo / "notes").read_text() == "the user's\n"
    change = vcs.begin("task")
    (repo / "README.md").unlink()
    (repo / "README.md").mkdir()
    (repo / "README.md" / "part.txt").write_text("part\n")
    assert vcs.finish(change, "task").files == ("README.md", "README.md/part.txt")
    failed = vcs.begin("task")
    (repo / "README.md" / "part.txt").unlink()
    (repo / "README.md").rmdir()
    (repo / "README.md").write_text("a file again\n")
    vcs.abandon(failed)
    assert (repo / "README.md" / "part.txt").read_text() == "part\n"
    (repo / "drafts").mkdir()
    (repo / "drafts" / "mine.txt").write_text("the user's\n")
    failed = vcs.begin("task")  # a folder with the user's file in it becomes a file
    shutil.rmtree(repo / "drafts")
    (repo / "drafts").write_text("a file now\n")
    vcs.abandon(failed)
    assert (repo / "drafts" / "mine.txt").read_text() == "the user's\n"



def test_a_symlink_that_took_a_folders_place_is_never_written_through(repo: Path) -> None:
    outside = repo.parent / "elsewhere"
    outside.mkdir()
    (outside / "notes.txt").write_text("not the repository's\n")
    # The symlink `sub` is ignored (and so kept), the folder `sub/` is not.
    (repo / ".gitignore").write_text("sub\n!sub/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    (repo / "sub").mkdir()
    (repo / "sub" / "notes.txt").write_text("the user's\n")
    vcs = make(repo, allow_dirty=True)
    change = vcs.begin("task")
    (repo / "sub" / "notes.txt").unlink()
    (repo / "sub").rmdir()
    (repo / "sub").symlink_to(outside)
    vcs.abandon(change)
    assert (outside / "notes.txt").read_text() == "not the repository's\n"
    assert (repo / "sub").is_symlink()


def test_an_ignored_file_in_a_folders_place_is_kept(repo: Path) -> None:
    (repo / ".git" / "info" / "exclude").write_text("drafts\n!drafts/\n")  # the file, not folder
    (repo / "drafts").mkdir()
    (repo / "drafts" / "mine.txt").write_text("the user's\n")
    vcs = make(repo, allow_dirty=True)
    failed = vcs.begin("task")
    shutil.rmtree(repo / "drafts")
    (repo / "drafts").write_text("ignored\n")
    vcs.abandon(failed)
    assert (repo / "drafts").read_text() == "ignored\n"


def test_no_roll_back_without_a_copy_of_what_it_undoes(repo: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    make(repo).begin("task")
    (repo / "half.txt").write_text("half done, or the user's since\n")
    vcs = GitVcs(repo, repo / "tasks.md", allow_dirty=True)
    real = vcs.git.out

    def no_commits(*args: str, **kwargs: object) -> str:
        if args[0] == "commit-tree":
            raise VcsError("`git commit-tree` failed: disk full")
        return real(*args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(vcs.git, "out", no_commits)
    assert "keeping a copy of its files failed" in vcs.prepare()[0]
    assert (repo / "half.txt").exists()


def test_no_hook_runs_and_the_message_is_kept_byte_for_byte(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    for name, body in [("pre-commit", "exit 1"), ("commit-msg", "exit 1"),
                       ("prepare-commit-msg", 'echo rewritten > "$1"'),
                       ("post-commit", "touch post-commit-ran")]:
        (hooks / name).write_text(f"#!/bin/sh\n{body}\n")
        (hooks / name).chmod(0o755)
    git(repo, "config", "commit.cleanup", "strip")
    vcs = make(repo)
    message = "agent-loop: One / a\n\n# not a comment: task text\n  indented line"
    done = run_task(vcs, repo, message, {"a.txt": "a\n", "sub/b.txt": "b\n"})
    assert git(repo, "log", "-1", "--format=%B").rstrip("\n") == message
    assert done.files == ("a.txt", "sub/b.txt") and commit_files(repo, "HEAD") == list(done.files)
    assert not (repo / "post-commit-ran").exists()
    assert git(repo, "status", "--porcelain") == "?? tasks.md\n"


def test_what_the_user_staged_elsewhere_stays_staged_and_out(repo: Path) -> None:
    (repo / "notes.txt").write_text("mine\n")
    git(repo, "add", "notes.txt")
    vcs = make(repo, allow_dirty=True)
    done = run_task(vcs, repo, "task", {"new.txt": "new\n", "README.md": "edited by the task\n"})
    assert commit_files(repo, "HEAD") == ["README.md", "new.txt"] == list(done.files)
    assert git(repo, "status", "--porcelain") == "A  notes.txt\n?? tasks.md\n"


def test_the_next_begin_after_a_clean_commit_starts_no_git_and_still_knows_the_tree(
        repo: Path) -> None:
    (repo / "README.md").write_text("the user's own edit\n")
    vcs = make(repo, allow_dirty=True)
    first = run_task(vcs, repo, "one", {"a.txt": "a\n"})
    before = proc.started()
    change = vcs.begin("two")
    assert proc.started() == before  # known from the first task's finish
    (repo / "b.txt").write_text("b\n")
    second = vcs.finish(change, "two")
    assert first.files == ("a.txt",) and second.files == ("b.txt",)
    assert commit_files(repo, "HEAD") == ["b.txt"]
    # The user's edit stayed theirs through both, and an abandon still puts it back.
    change = vcs.begin("three")
    (repo / "README.md").write_text("the agent's edit\n")
    vcs.abandon(change)
    assert (repo / "README.md").read_text() == "the user's own edit\n"
    # Anything run in between (here: git itself) means the next begin looks again.
    run_task(vcs, repo, "four", {"c.txt": "c\n"})
    git(repo, "add", "README.md")
    before = proc.started()
    change = vcs.begin("five")
    assert proc.started() > before
    (repo / "d.txt").write_text("d\n")
    vcs.finish(change, "five")
    assert commit_files(repo, "HEAD") == ["d.txt"]
    assert git(repo, "status", "--porcelain") == "M  README.md\n?? tasks.md\n"


def test_a_task_begins_by_writing_over_the_last_tasks_record_and_the_next_run_reads_it(
        repo: Path) -> None:
    # The record is overwritten in place, padded with spaces to the old one's length: a longer
    # record from the last task (a dirty tree's states) must not leave its tail behind.
    (repo / "notes.txt").write_text("the user's\n")
    vcs = make(repo, allow_dirty=True)
    first = vcs.begin("a first task, with a long message " * 20)
    (repo / "first.txt").write_text("first\n")
    assert vcs.finish(first, "a first task, with a long message " * 20).change_id
    record = repo / ".git" / "agent-loop-attempt.json"
    assert len(record.read_bytes()) > 600
    vcs.begin("second")
    assert json.loads(record.read_text())["message"] == "second"
    (repo / "half.txt").write_text("half\n")
    again = GitVcs(repo, repo / "tasks.md", allow_dirty=True)
    assert again.prepare()[0].startswith("rolled back")
    assert not (repo / "half.txt").exists()
    assert (repo / "notes.txt").read_text() == "the user's\n"
