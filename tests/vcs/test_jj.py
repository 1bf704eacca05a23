"""The jj backend against the real jj; the "agent" is plain file writes between begin and finish."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.errors import ProcessError, VcsError
from agentloop.vcs.jj import carried
from agentloop.vcs.jj.backend import JjVcs
from agentloop.vcs.protocol import Change
from tests.support.repos import make_repo


@pytest.fixture(autouse=True)
def fresh_change_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pinned JJ_RANDOMNESS_SEED gives every jj process the same first change id, so two
    `jj new` in two processes make one divergent change. jj's own tests bump the seed per
    command; we let jj draw real random ids instead (no test compares ids)."""
    monkeypatch.delenv("JJ_RANDOMNESS_SEED", raising=False)


def jj(repo: Path, *args: str) -> str:
    return proc.run(["jj", "--no-pager", "--color=never", *args], cwd=repo).stdout


def history(repo: Path) -> list[tuple[str, list[str]]]:
    """(description, changed files) of every described change below @, newest first."""
    out = jj(repo, "log", "--no-graph", "-r", "::@", "-T",
             'description.first_line() ++ "\t" ++ '
             'self.diff().files().map(|f| f.path()).join(",") ++ "\n"')
    rows = [line.split("\t") for line in out.splitlines()]
    return [(desc, files.split(",") if files else []) for desc, files in rows if desc]


def files_in(repo: Path, rev: str) -> list[str]:
    out = jj(repo, "log", "--no-graph", "-r", rev, "-T",
             'self.diff().files().map(|f| f.path()).join("\n")')
    return out.split()


@pytest.fixture
def repo(tmp_path: Path, jj_bin: str) -> Path:
    """A jj repository whose @ holds one committed README, plus an untracked-so-far tasks.md."""
    return make_repo(tmp_path / "project", "jj", plan="## One\n- [ ] a\n")


def make(repo: Path) -> JjVcs:
    vcs = JjVcs(repo, repo / "tasks.md")
    assert vcs.prepare() == []
    return vcs


def run_task(vcs: JjVcs, repo: Path, message: str, files: dict[str, str]) -> Change:
    change = vcs.begin(message)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    # The tool ticks the task off while the task's change is still @.
    (repo / "tasks.md").write_text((repo / "tasks.md").read_text() + f"- [x] {message}\n")
    return vcs.finish(change, message)


def test_user_work_stays_in_its_own_change(repo: Path) -> None:
    (repo / "README.md").write_text("user edit\n")
    (repo / "notes.txt").write_text("user notes\n")
    vcs = make(repo)
    base = vcs.begin("task")
    (repo / "a.txt").write_text("a\n")
    done = vcs.finish(base, "task")
    vcs.close()
    assert done.files == ("a.txt",)
    assert history(repo)[0] == ("task", ["a.txt"])
    # An untracked task file stays untracked: no change of ours takes it in.
    assert sorted(files_in(repo, done.base)) == ["README.md", "notes.txt"]
    assert (repo / "README.md").read_text() == "user edit\n"
    assert (repo / "notes.txt").read_text() == "user notes\n"


def test_tracked_task_file_and_state_dir_never_land_in_a_task(repo: Path) -> None:
    jj(repo, "commit", "-m", "track tasks.md")
    (repo / ".gitignore").write_text(".agent-loop/\n")  # the tool's edit before the first task
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "a.txt").write_text("a\n")
    (repo / "tasks.md").write_text("## One\n- [x] a\n")
    (repo / ".agent-loop").mkdir()
    (repo / ".agent-loop" / "state.json").write_text("{}")
    done = vcs.finish(change, "task")
    assert done.files == ("a.txt",)
    assert files_in(repo, done.change_id) == ["a.txt"]
    assert sorted(files_in(repo, done.base)) == [".gitignore", "tasks.md"]
    assert (repo / "tasks.md").read_text() == "## One\n- [x] a\n"


def test_state_dir_is_kept_out_even_when_not_ignored(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / ".agent-loop").mkdir()
    (repo / ".agent-loop" / "state.json").write_text("{}")
    (repo / "a.txt").write_text("a\n")
    assert vcs.finish(change, "task").files == ("a.txt",)
    assert (repo / ".agent-loop" / "state.json").exists()


def test_edits_between_tasks_do_not_fall_into_the_last_task(repo: Path) -> None:
    vcs = make(repo)
    first = run_task(vcs, repo, "first", {"a.txt": "a\n"})
    (repo / "tasks.md").write_text("rewritten between tasks\n")
    second = run_task(vcs, repo, "second", {"b.txt": "b\n"})
    assert files_in(repo, first.change_id) == ["a.txt"]
    assert files_in(repo, second.change_id) == ["b.txt"]
    assert second.base == first.change_id


def test_a_task_that_only_touches_the_task_file_is_empty(repo: Path) -> None:
    vcs = make(repo)
    done = run_task(vcs, repo, "nothing", {})
    vcs.close()
    # Abandoned, so no id: the runner records no change for the task (as with git).
    assert done.empty and done.files == () and done.change_id == done.commit_id == ""
    assert vcs.diff(done) == ""
    assert [d for d, _ in history(repo)] == ["initial"]


def test_abandon_keeps_ignored_and_preexisting_files(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    jj(repo, "commit", "-m", "ignore build")
    (repo / "build").mkdir()
    (repo / "build" / "old.o").write_text("old\n")
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "build" / "new.o").write_text("made by the attempt, ignored\n")
    (repo / "created.txt").write_text("x\n")
    (repo / "README.md").unlink()
    vcs.abandon(change)
    assert not (repo / "created.txt").exists()
    assert (repo / "README.md").read_text() == "hello\n"
    assert (repo / "build" / "old.o").exists() and (repo / "build" / "new.o").exists()
    assert (repo / "tasks.md").exists()


def test_finish_with_a_new_message_redescribes(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task (attempt 1)")
    (repo / "a.txt").write_text("a\n")
    vcs.finish(change, "task")
    assert history(repo)[0] == ("task", ["a.txt"])


def test_close_leaves_an_empty_change_for_the_users_next_edits(repo: Path) -> None:
    vcs = make(repo)
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})
    vcs.close()
    vcs.close()  # idempotent: no second empty change
    (repo / "later.txt").write_text("user, after the run\n")
    # The user's own jj tracks the untracked task file too, into the user's change.
    assert files_in(repo, "@") == ["later.txt", "tasks.md"]
    assert files_in(repo, done.change_id) == ["a.txt"]
    assert jj(repo, "log", "--no-graph", "-r", "@-", "-T", "change_id") == done.change_id


def test_a_gone_change_is_a_vcs_error(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task")
    jj(repo, "abandon", change.change_id)
    with pytest.raises(VcsError, match="gone"):
        vcs.finish(change, "task")


def test_abandon_takes_changes_the_agent_stacked_on_top(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "a.txt").write_text("a\n")
    jj(repo, "new")
    (repo / "b.txt").write_text("b\n")
    vcs.abandon(change)
    assert not (repo / "a.txt").exists() and not (repo / "b.txt").exists()
    done = run_task(vcs, repo, "task", {"c.txt": "c\n"})
    vcs.close()
    assert history(repo) == [("task", ["c.txt"]), ("initial", ["README.md"])]
    assert done.files == ("c.txt",)


def test_abandon_returns_to_the_users_uncommitted_work(repo: Path) -> None:
    (repo / "README.md").write_text("user edit\n")
    vcs = make(repo)
    change = vcs.begin("task")
    (repo / "README.md").write_text("agent broke it\n")
    vcs.abandon(change)
    assert (repo / "README.md").read_text() == "user edit\n"


def test_user_edits_between_tasks_stay_out_of_the_next_task(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vcs = make(repo)
    first = run_task(vcs, repo, "first", {"a.txt": "a\n"})
    # The pause between tasks outlasted the moment in which the next begin trusts what
    # finish's `jj new` said @ was (edits in that moment are the task's, as with git).
    monkeypatch.setattr(carried, "CARRY_SECONDS", 0.0)
    (repo / "user.txt").write_text("typed while the loop ran\n")
    second = run_task(vcs, repo, "second", {"b.txt": "b\n"})
    assert files_in(repo, second.change_id) == ["b.txt"]
    assert files_in(repo, second.base) == ["user.txt"]
    assert files_in(repo, f"{second.base}-") == files_in(repo, first.change_id) == ["a.txt"]


def test_a_change_the_user_describes_between_tasks_stays_theirs(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vcs = make(repo)
    monkeypatch.setattr(carried, "CARRY_SECONDS", 60.0)  # however slow jj is here
    run_task(vcs, repo, "first", {"a.txt": "a\n"})
    (repo / "user.txt").write_text("mine\n")
    # Not through proc: only jj's operation tells that anything happened.
    subprocess.run(["jj", "describe", "-m", "user: my own work"], cwd=repo, check=True,
                   capture_output=True)
    second = run_task(vcs, repo, "second", {"b.txt": "b\n"})
    assert files_in(repo, second.change_id) == ["b.txt"]
    # (the user's own jj, without our narrowed auto-track, took the plan in too)
    assert "user.txt" in files_in(repo, second.base)
    assert jj(repo, "log", "--no-graph", "-r", f"{second.change_id}-", "-T",
              "description").strip() == "user: my own work"


def test_the_last_tick_goes_to_the_base_not_a_stray_change(repo: Path) -> None:
    jj(repo, "commit", "-m", "track tasks.md")
    vcs = make(repo)
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})
    (repo / "tasks.md").write_text("all done\n")  # ticked after finish, before close
    vcs.close()
    assert files_in(repo, "@") == []
    assert jj(repo, "log", "--no-graph", "-r", "@-", "-T", "change_id") == done.change_id
    assert (repo / "tasks.md").read_text() == "all done\n"


def test_the_users_auto_track_setting_is_kept(repo: Path) -> None:
    config = Path(os.environ["JJ_CONFIG"])
    config.write_text('[snapshot]\nauto-track = "~glob:\\"*.log\\""\n')
    vcs = make(repo)
    done = run_task(vcs, repo, "task", {"a.txt": "a\n", "debug.log": "noise\n"})
    assert done.files == ("a.txt",)


def test_an_earlier_runs_leftover_change_can_be_abandoned_first(repo: Path) -> None:
    jj(repo, "commit", "-m", "track tasks.md")
    crashed = make(repo)
    leftover = crashed.begin("task")
    (repo / "half.txt").write_text("half done\n")
    (repo / "tasks.md").write_text("## One\n- [ ] a (attempt 1 interrupted)\n")
    # A new run: a new backend, which abandons the leftover before its first begin.
    vcs = make(repo)
    vcs.abandon(Change(change_id=leftover.change_id))
    assert not (repo / "half.txt").exists()
    assert "interrupted" in (repo / "tasks.md").read_text()
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})
    vcs.close()
    assert [d for d, _ in history(repo)] == ["task", "track tasks.md", "initial"]
    assert files_in(repo, done.change_id) == ["a.txt"]
    assert files_in(repo, done.base) == ["tasks.md"]


def test_abandoning_a_change_gone_by_hand_is_a_no_op(repo: Path) -> None:
    # Tracked: the user's own `jj abandon` snapshots first, and would take an untracked task
    # file into the abandoned change (and off the disk) with it.
    jj(repo, "commit", "-m", "track tasks.md")
    crashed = make(repo)
    leftover = crashed.begin("task")
    (repo / "half.txt").write_text("half done\n")
    jj(repo, "abandon", leftover.change_id)  # the user cleaned up after the interrupted run
    vcs = make(repo)
    vcs.abandon(Change(change_id=leftover.change_id))
    vcs.abandon(Change(change_id=leftover.change_id))  # and again: still nothing to do
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})
    vcs.close()
    assert [d for d, _ in history(repo)] == ["task", "track tasks.md", "initial"]
    assert files_in(repo, done.change_id) == ["a.txt"]
    assert not (repo / "half.txt").exists()


def test_an_empty_change_a_killed_run_began_is_dropped(repo: Path) -> None:
    # A run killed right after `jj new -m` (before its state save) leaves this behind.
    first = make(repo)
    stray = first.begin("agent-loop: One / a")
    again = JjVcs(repo, repo / "tasks.md", initialized=True)
    notes = again.prepare()
    assert notes == ["dropped 1 empty change(s) a killed run had begun"]
    assert jj(repo, "log", "--no-graph", "-r", f"present({stray.change_id})",
              "-T", "change_id") == ""
    assert again.prepare() == []


def abandon_killed_before_the_files(repo: Path) -> None:
    """An attempt whose agent wrote half.txt, abandoned by a jj that recorded its operation
    and was killed before it wrote the working copy: what `--ignore-working-copy` leaves."""
    first = make(repo)
    attempt = first.begin("agent-loop: One / a")
    (repo / "half.txt").write_text("half done\n")
    assert "half.txt" in first.diff(attempt)  # snapshotted into the attempt's change
    jj(repo, "--ignore-working-copy", "abandon", attempt.change_id)


def test_a_stale_working_copy_a_killed_jj_left_is_brought_up_to_date(repo: Path) -> None:
    # What a jj killed between recording its operation and updating the files leaves (seen in
    # test_crash's kill sweep): every later command refuses, "The working copy is stale". Here
    # the killed command is the abandon of an attempt whose agent wrote half.txt.
    abandon_killed_before_the_files(repo)
    with pytest.raises(ProcessError, match="stale"):
        jj(repo, "status")
    vcs = JjVcs(repo, repo / "tasks.md", initialized=True)
    assert vcs.prepare() == ["brought the working copy up to date after a jj command that was "
                             "killed (`jj workspace update-stale`)"]
    assert not (repo / "half.txt").exists()  # the abandon is complete
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})
    vcs.close()
    assert files_in(repo, done.change_id) == ["a.txt"]
    assert vcs.prepare() == []


def test_files_changed_after_the_killed_jj_are_kept_and_named(repo: Path) -> None:
    abandon_killed_before_the_files(repo)
    (repo / "mine.txt").write_text("the user's, written after the kill\n")
    vcs = JjVcs(repo, repo / "tasks.md", initialized=True)
    notes = vcs.prepare()
    assert notes[0].startswith("brought the working copy up to date") and \
        "kept in a change of their own" in notes[0]
    done = run_task(vcs, repo, "task", {"a.txt": "a\n"})  # the run goes on, cleanly
    vcs.close()
    assert files_in(repo, done.change_id) == ["a.txt"]
    # Nothing is lost: jj keeps the edit in a change of its own, as the note says.
    kept = jj(repo, "log", "--no-graph", "-r", "all()", "-T",
              'self.diff().files().map(|f| f.path()).join(",") ++ "\n"')
    assert "mine.txt" in kept
    assert JjVcs(repo, repo / "tasks.md", initialized=True).prepare() == []


def described(repo: Path, text: str) -> list[str]:
    """The change ids of every visible change whose description starts with `text`."""
    return jj(repo, "log", "--no-graph", "-r", f'description(glob:"{text}*")', "-T",
              'change_id ++ "\\n"').split()


def test_a_task_ends_in_one_jj_commit(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("agent-loop: task")
    (repo / "a.txt").write_text("a\n")
    before = proc.started()
    done = vcs.finish(change, "agent-loop: task\n\nTask: 1\n")
    assert proc.started() - before == 1
    assert done.change_id == change.change_id and done.files == ("a.txt",)
    # (Read without a snapshot: the user's own jj would track tasks.md into @.)
    at = jj(repo, "--ignore-working-copy", "log", "--no-graph", "-r", "@", "-T",
            'parents.map(|p| p.change_id()).join(",") ++ " " ++ empty ++ " " ++ description')
    assert at == f"{change.change_id} true "  # sealed: an empty, undescribed @ right on it
    assert jj(repo, "log", "--no-graph", "-r", change.change_id, "-T", "description") == \
        "agent-loop: task\n\nTask: 1\n"


def test_the_agents_own_commits_fold_into_the_task(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("agent-loop: task")
    (repo / "a.txt").write_text("a\n")
    jj(repo, "commit", "-m", "wip")
    (repo / "b.txt").write_text("b\n")
    done = vcs.finish(change, "agent-loop: task done")
    assert done.change_id == change.change_id and done.files == ("a.txt", "b.txt")
    assert described(repo, "wip") == [] and described(repo, "agent-loop:") == [change.change_id]
    assert jj(repo, "log", "--no-graph", "-r", "@-", "-T", "change_id") == change.change_id


def test_an_agent_that_moved_off_the_task_leaves_other_changes_as_they_were(
        repo: Path) -> None:
    jj(repo, "commit", "-m", "the user's own work")
    theirs = jj(repo, "log", "--no-graph", "-r", "@-", "-T", "change_id")
    vcs = make(repo)
    change = vcs.begin("agent-loop: task")
    jj(repo, "edit", theirs)  # the agent's
    (repo / "x.txt").write_text("x\n")
    with pytest.raises(VcsError, match="moved off the task's change"):
        vcs.finish(change, "agent-loop: task done")
    # The user's change keeps its description, and @ is where the agent left it.
    assert jj(repo, "log", "--no-graph", "-r", theirs, "-T", "description") == \
        "the user's own work\n"
    assert jj(repo, "log", "--no-graph", "-r", "@", "-T", "change_id") == theirs
    assert set(described(repo, "agent-loop: task done")) <= {change.change_id}


def test_a_change_gone_by_hand_takes_no_other_change_for_the_task(repo: Path) -> None:
    vcs = make(repo)
    change = vcs.begin("agent-loop: task")
    (repo / "a.txt").write_text("a\n")
    jj(repo, "abandon", change.change_id)
    with pytest.raises(VcsError, match="gone"):
        vcs.finish(change, "agent-loop: task done")
    assert described(repo, "agent-loop:") == []
    assert jj(repo, "log", "--no-graph", "-r", "@", "-T", "description") == ""


def git_head(repo: Path) -> str:
    return proc.run(["git", "rev-parse", "HEAD"], cwd=repo).stdout.strip()


def test_a_head_moved_by_a_killed_jjs_export_is_put_back(repo: Path) -> None:
    """git's HEAD moved the way jj's export moves it (a reflog line "export from jj") after jj's
    last operation, with jj's @ still on the commit it moved from: what a jj command killed
    before it recorded its operation leaves (tests/run/test_crash.py kills a real one).
    prepare() puts it back before any snapshot takes it in; a HEAD the user moved with git,
    or one jj recorded, is left for jj."""
    jj(repo, "commit", "-m", "two")
    old = git_head(repo)
    first = jj(repo, "log", "--no-graph", "-r", "@--", "-T", "commit_id").strip()
    proc.run(["git", "update-ref", "--no-deref", "-m", "export from jj", "HEAD", first], cwd=repo)
    assert any("put git's HEAD back" in note for note in JjVcs(repo, repo / "tasks.md").prepare())
    assert git_head(repo) == old
    proc.run(["git", "update-ref", "--no-deref", "-m", "checkout: by hand", "HEAD", first],
             cwd=repo)
    assert not any("HEAD" in note for note in JjVcs(repo, repo / "tasks.md").prepare())
    assert jj(repo, "log", "--no-graph", "-r", "@-", "-T", "commit_id").strip() == first
