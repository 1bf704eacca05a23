"""Preflight: what would fail only after the agent was paid is refused before it runs, in one
line with the fix. Real git and jj, agent-loop as a process, the fake claude (which must never
be called)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo
from tests.support.runner import agent_loop, noting_git


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("hello\n")
    (folder / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n")
    return folder


def refused(done: subprocess.CompletedProcess[str], fake: FakeClaude, *words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    line = done.stderr.strip()
    assert "\n" not in line, line
    for word in words:
        assert word in line, line
    assert fake.task_runs() == []


def test_no_git_identity(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    env["EMAIL"] = ""
    # git falls back to user@host when the host has a domain; an empty config.email forbids it.
    git(work, "config", "user.useConfigOnly", "true")
    refused(agent_loop(work, "--no-distill", "--vcs", "git", env=env), fake_claude, "no identity",
            "git config --global user.email")


def test_signing_that_cannot_work(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    git(work, "config", "commit.gpgsign", "true")
    git(work, "config", "gpg.program", "false")
    refused(agent_loop(work, "--no-distill", "--vcs", "git"), fake_claude, "commit.gpgsign",
            "git config commit.gpgsign false")



def linked_checkout(work: Path) -> Path:
    """A checkout of `work`'s repository made by `git worktree add` (its `.git` is a file),
    the plan committed."""
    init_repo(work, "git")
    linked = work.parent / "linked"
    git(work, "worktree", "add", "-q", "-b", "feature", str(linked))
    (linked / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n")
    git(linked, "add", "tasks.md")
    git(linked, "commit", "-qm", "plan")
    return linked


@pytest.mark.parametrize("vcs", ["git", "auto"])
def test_signing_that_cannot_work_in_a_linked_checkout(work: Path, fake_claude: FakeClaude,
                                                       vcs: str) -> None:
    # A checkout whose `.git` is a file (`git worktree add`) was taken for no repository
    # (auto, with jj installed: for jj's, though jj cannot colocate there and git commits):
    # signing was never tried, the agent was paid, and its commit failed on git's own error.
    linked = linked_checkout(work)
    git(linked, "config", "commit.gpgsign", "true")
    git(linked, "config", "gpg.program", "false")
    refused(agent_loop(linked, "--no-distill", "--vcs", vcs), fake_claude, "commit.gpgsign",
            "git config commit.gpgsign false")


def test_signing_that_cannot_work_refuses_a_rehearsal(work: Path,
                                                      fake_claude: FakeClaude) -> None:
    # A rehearsal works in a checkout of its own (`.git` a file): its stand-in agent ran, and
    # the run ended on git's own error at its first commit.
    init_repo(work, "git")
    git(work, "config", "commit.gpgsign", "true")
    git(work, "config", "gpg.program", "false")
    refused(agent_loop(work, "--rehearse"), fake_claude, "commit.gpgsign",
            "git config commit.gpgsign false")
    logs = work / ".agent-loop" / "rehearsal" / "logs"
    assert not logs.is_dir() or not list(logs.iterdir())


def test_no_git_identity_in_a_linked_checkout(work: Path, fake_claude: FakeClaude) -> None:
    linked = linked_checkout(work)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    env["EMAIL"] = ""
    git(linked, "config", "user.useConfigOnly", "true")
    refused(agent_loop(linked, "--no-distill", "--vcs", "git", env=env), fake_claude,
            "no identity", "git config --global user.email")

def test_signing_set_in_your_global_config_is_asked_of_git(work: Path,
                                                          fake_claude: FakeClaude) -> None:
    # Set where every repository reads it (the test's ~/.gitconfig), not in the repository's.
    init_repo(work, "git")
    with open(os.environ["GIT_CONFIG_GLOBAL"], "a") as config:
        config.write("[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = false\n")
    refused(agent_loop(work, "--no-distill", "--vcs", "git"), fake_claude, "commit.gpgsign",
            "git config commit.gpgsign false")


def test_signing_an_included_file_sets_is_asked_of_git(work: Path, tmp_path: Path,
                                                       fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (tmp_path / "signing").write_text("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n")
    git(work, "config", "include.path", str(tmp_path / "signing"))
    refused(agent_loop(work, "--no-distill", "--vcs", "git"), fake_claude, "commit.gpgsign")


def test_signing_no_config_mentions_is_not_asked_of_git(work: Path, tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    # No config file git reads says a word of signing: git is not started to say it is unset.
    init_repo(work, "git")
    _, calls = noting_git(work, tmp_path / "calls", "tasks.md", "--no-distill", "--vcs", "git")
    assert (work / "a.txt").read_text().strip() == "A"
    assert not [c for c in calls if c.startswith("config")], calls
    assert [c for c in calls if c.startswith("var")] == ["var GIT_COMMITTER_IDENT"], calls


@pytest.mark.parametrize("marker, words", [
    ("MERGE_HEAD", "merge --quit"), ("rebase-merge", "git rebase --continue"),
    ("CHERRY_PICK_HEAD", "cherry-pick --quit"), ("REVERT_HEAD", "revert --quit"),
    ("rebase-apply/applying", "git am --abort")])
def test_a_git_operation_in_progress(work: Path, fake_claude: FakeClaude, marker: str,
                                     words: str) -> None:
    """With nothing of it in the index (HEAD's tree, as the rollback of an agent's attempt
    that left one leaves it), a merge, cherry-pick or revert is ended by its `--quit`, which
    leaves the files as they are: a merge's `--continue` would record the other side with
    none of its changes, and an `--abort` takes staged edits away, from the index and the files."""
    init_repo(work, "git")
    target = work / ".git" / marker
    if marker == "rebase-apply/applying":  # git am's session, in a rebase's folder
        target.parent.mkdir()
        target.touch()
    elif marker.startswith("rebase"):
        target.mkdir()
    else:
        target.write_text(git(work, "rev-parse", "HEAD"))
    refused(agent_loop(work, "--no-distill", "--vcs", "git"), fake_claude, "in progress", words)


def test_your_merge_stopped_on_a_conflict_is_finished_or_aborted(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    git(work, "switch", "-q", "-c", "side")
    (work / "a.txt").write_text("side\n")
    git(work, "add", "a.txt")
    git(work, "commit", "-qm", "side")
    git(work, "switch", "-q", "-")
    (work / "a.txt").write_text("mine\n")
    git(work, "add", "a.txt")
    git(work, "commit", "-qm", "mine")
    subprocess.run(["git", "merge", "side"], cwd=work, capture_output=True)
    refused(agent_loop(work, "--no-distill", "--vcs", "git"), fake_claude, "in progress",
            "git merge --continue", "git merge --abort")


def test_a_bare_repository(tmp_path: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    (bare / "tasks.md").write_text("- one\n")
    refused(agent_loop(bare, "--no-distill"), fake_claude, "bare git repository", "git clone")
    assert not (bare / ".jj").exists()


def test_a_symlinked_state_folder_or_task_file(work: Path, tmp_path: Path,
                                               fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (work / ".agent-loop").symlink_to(elsewhere)
    refused(agent_loop(work, "--no-distill", "--vcs", "git"), fake_claude,
            ".agent-loop is a symlink")
    (work / ".agent-loop").unlink()
    (elsewhere / "plan.md").write_text("- one\n")
    (work / "plan.md").symlink_to(elsewhere / "plan.md")
    refused(agent_loop(work, "--no-distill", "--vcs", "git", plan="plan.md"), fake_claude,
            "is a symlink", str(elsewhere / "plan.md"))


def test_jj_without_an_identity_is_a_warning(work: Path, fake_claude: FakeClaude,
                                             jj_bin: str) -> None:
    init_repo(work, "jj")
    env = {k: v for k, v in os.environ.items()
           if k not in ("JJ_USER", "JJ_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL")}
    done = agent_loop(work, "--no-distill", "--vcs", "jj", env=env)
    assert done.returncode == 0, done.stderr
    assert "jj has no user identity" in done.stdout


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_stale_git_locks_a_killed_command_left_are_cleared(work: Path, fake_claude: FakeClaude,
                                                          kind: str, jj_bin: str) -> None:
    init_repo(work, "git")
    if kind == "jj":
        subprocess.run(["jj", "git", "init", "--colocate"], cwd=work, check=True,
                       capture_output=True)
    for name in ("index.lock", "HEAD.lock"):
        (work / ".git" / name).write_text("")
    done = agent_loop(work, "--no-distill", "--vcs", kind)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "removed" in done.stdout and "index.lock" in done.stdout
    assert not (work / ".git" / "index.lock").exists()


def test_a_lanes_head_lock_a_killed_commit_left_is_cleared(work: Path,
                                                            fake_claude: FakeClaude) -> None:
    # A lane's `git commit` killed halfway leaves its worktree's HEAD.lock; every later git
    # command in that worktree (the next run's roll-back of the attempt) would fail on it.
    init_repo(work, "git")
    subprocess.run(["git", "worktree", "add", "-q", "-b", "side", str(work.parent / "side")],
                   cwd=work, check=True, capture_output=True)
    lock = work / ".git" / "worktrees" / "side" / "HEAD.lock"
    lock.write_text("")
    done = agent_loop(work, "--no-distill", "--vcs", "git")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not lock.exists() and "HEAD.lock" in done.stdout


def test_a_lock_a_live_process_holds_stops_the_run_naming_it(work: Path,
                                                            fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    lock = work / ".git" / "index.lock"
    lock.write_text("")
    holder = subprocess.Popen([sys.executable, "-c", "import sys,time; f=open(sys.argv[1]); "
                               "print('ready', flush=True); time.sleep(60)", str(lock)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        refused(agent_loop(work, "--no-distill", "--vcs", "git"), fake_claude, "index.lock",
                "is held", "rm ")
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("kind, repo", [("auto", "colocated"), ("jj", "jj"), ("auto", "git"),
                                        ("jj", "colocated")])
def test_whether_jj_makes_the_commits_is_asked_once_a_run(
        work: Path, jj_bin: str, monkeypatch: pytest.MonkeyPatch, kind: str, repo: str) -> None:
    """The run's early ask (ask_git) finds out whether jj makes the commits (a PATH lookup and
    a stat); preflight, a moment later, goes by that answer instead of looking again."""
    from agentloop.vcs import preflight

    init_repo(work, repo)
    looked: list[str] = []
    which = preflight.which
    # preflight's own lookups only (every process agent-loop starts looks its program up too)
    monkeypatch.setattr(preflight, "which", lambda name: looked.append(name) or which(name))
    asked = preflight.ask_git(kind, work)   # as agentloop.run.start does
    assert asked[0] == (repo != "git")
    preflight.preflight(kind, work, work / "tasks.md", asked)
    assert looked == ["jj"]


def test_a_state_that_says_git_in_a_colocated_repository_checks_git_identity(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    # A git run first; then the repository is made colocated and the identity goes away. The
    # default --vcs (auto) goes on with the state's git, whose commit would fail only after
    # the agent was paid: refused before it, as for a run asked for git.
    init_repo(work, "git")
    done = agent_loop(work, "--no-distill", "--vcs", "git")
    assert done.returncode == 0, done.stderr
    subprocess.run(["jj", "git", "init", "--colocate"], cwd=work, check=True,
                   capture_output=True)
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n- two\n  FAKE: write b.txt B\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    env["EMAIL"] = ""
    git(work, "config", "user.useConfigOnly", "true")
    paid = len(fake_claude.task_runs())
    again = agent_loop(work, "--no-distill", env=env)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "no identity" in again.stderr, again.stderr
    assert len(fake_claude.task_runs()) == paid
