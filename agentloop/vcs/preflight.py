"""What would make a run fail only after the agent was paid, found before the first agent run:
each a VcsError of one line with the fix, or a warning to show."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Callable

from agentloop.errors import VcsError
from agentloop.files import opened
from agentloop.files.shown import typed
from agentloop.proc.program_path import which
from agentloop.vcs import STATE_DIR
from agentloop.vcs.git.config_text import may_set
from agentloop.vcs.git.in_the_way import finish, in_progress, quit_line
from agentloop.vcs.git.run import EMPTY_TREE, Git
from agentloop.vcs.stays_git import git_only

# What git says of who commits (None: no identity) and whether commits are signed, asked in
# threads of their own: the function that waits for both.
Answers = Callable[[], tuple[str | None, bool]]
# What the run's early ask (ask_git) found: whether jj makes the commits, git's Answers when
# git makes them (else None), and the function that waits for the first look at the checkout
# started with them (agentloop.vcs.git.first_look; None when none was).
Asked = tuple[bool, Answers | None, Callable[[], None] | None]


def preflight(kind: str, root: Path, task_file: Path, asked: Asked | None = None) -> list[str]:
    """Check the repository before anything runs; raise for a blocker, return warnings.
    `asked`: what ask_git found a moment before (asked now when not given)."""
    if (root / STATE_DIR).is_symlink():
        raise VcsError(f"{root / STATE_DIR} is a symlink: agent-loop keeps its state there and "
                       "will not write through a link; remove the link and run again")
    if _bare(root):
        raise VcsError(f"{root} is a bare git repository (no working tree): run agent-loop in a "
                       "clone of it (`git clone` it, then run in the clone)")
    if asked is not None:
        return _checked(kind, root, asked)
    asked = ask_git(kind, root)
    try:
        return _checked(kind, root, asked)
    finally:
        settle(asked)


def settle(asked: Asked) -> None:
    """Wait for the commands ask_git started, whatever they answer (they are reaped on every
    path; what they say, preflight reads)."""
    for wait in asked[1:]:
        if wait is not None:
            try:
                wait()
            except Exception:  # noqa: BLE001, S110 - the caller's own error is said instead
                pass


def _checked(kind: str, root: Path, asked: Asked) -> list[str]:
    jj, answers, _ = asked
    warnings: list[str] = []
    git_dir = root / ".git"
    if git_dir.is_dir():
        warnings += _stale_locks(git_dir)
        landing = _landing_finished(root, git_dir)  # a parallel run's, cut short by a kill
        if landing:  # the checkout's files moved: its first look's status is asked again
            from agentloop.vcs.git.first_look import forget_status

            forget_status(root)
        warnings += [landing] if landing else []
    own = git_dir if git_dir.is_dir() else _linked_git_dir(root)
    if kind in ("git", "auto") and own is not None:
        _git_ready(root, own, answers)
    if jj and not _jj_identity(root) and "JJ_EMAIL" not in _jj_env(root):
        warnings.append("jj has no user identity: every change will say \"(no email set)\"; "
                        "set one with `jj config set --user user.name \"Your Name\"` and "
                        "`jj config set --user user.email you@example.com`")
    return warnings


def _linked_git_dir(root: Path) -> Path | None:
    """The git dir a `.git` file names (a linked checkout's own), or None."""
    from agentloop.vcs.git.refs import worktree_git_dir

    return worktree_git_dir(root)


def _landing_finished(root: Path, git_dir: Path) -> str | None:
    """A landing a kill cut short, finished (landing_record.finish_landing): its note, or None.
    Its module is loaded only when the repository's files say there is one (its record, or a
    checkout left behind: agentloop.vcs.git.behind), not on every run's way to its first agent
    (a jj run never needs it)."""
    from agentloop.vcs.git import behind

    if not (git_dir / behind.RECORD).exists() and behind.unrecorded(root, git_dir) is None:
        return None
    from agentloop.vcs.git.landing_record import finish_landing

    return finish_landing(root, git_dir)


def _stale_locks(git_dir: Path) -> list[str]:
    """git's lock files a killed git or jj left behind (every later git command would fail on
    them). Called under agent-loop's run lock: one no live process holds open is stale and goes;
    one that is held stops the run, naming it."""
    notes = []
    for lock in _lock_files(git_dir):
        if not lock.is_file():
            continue
        if opened.by_a_process(lock):
            raise VcsError(f"{lock} is held by a running process (another git or jj?): let it "
                           "finish; if nothing should be running, remove it with "
                           f"`rm {typed(lock)}`")
        lock.unlink(missing_ok=True)
        notes.append(f"removed {lock}, which a killed git or jj command left behind")
    return notes


def _lock_files(git_dir: Path) -> list[Path]:
    """The lock files git may have left in `git_dir`: its index's and HEAD's, every branch's
    (a parallel run's too), and each worktree's index and HEAD (a lane's commit, killed).
    Found by name, by a walk of those folders: a glob compiles a pattern for each (a few
    milliseconds at every run's start) to find the same names."""
    found = [git_dir / "index.lock", git_dir / "HEAD.lock"]
    for refs in (git_dir / "refs" / "heads", git_dir / "refs" / "agent-loop"):
        for folder, _, files in os.walk(refs):
            found += [Path(folder, name) for name in sorted(files) if name.endswith(".lock")]
    try:
        worktrees = sorted(os.listdir(git_dir / "worktrees"))
    except OSError:
        worktrees = []
    found += [git_dir / "worktrees" / name / lock for lock in ("index.lock", "HEAD.lock")
              for name in worktrees]
    return found


def _bare(root: Path) -> bool:
    return (not (root / ".git").exists() and (root / "HEAD").is_file()
            and (root / "objects").is_dir() and (root / "refs").is_dir())


def _jj_commits(kind: str, root: Path) -> bool:
    """Whether jj makes the run's commits (a git repository stays git: vcs.stays_git; git
    commits in a linked checkout, where jj cannot colocate: vcs.choose)."""
    linked = (root / ".git").is_file() and not (root / ".jj").is_dir()
    return kind in ("jj", "auto") and which("jj") is not None and not (
        kind == "auto" and (git_only(root) or linked))


def ask_git(kind: str, root: Path, look: bool = False) -> Asked:
    """Whether jj makes the commits, and what preflight asks git when it does not (who
    commits, whether commits are signed), started now while the run goes on setting up: two
    commands that change nothing, side by side, started by this thread (Git.begin: no thread
    to start and hand the GIL to). No questions (None) when git makes no commit here (jj
    does, or there is no git repository yet); the Answers must be waited for on every path
    (they reap the commands). `look`: the backend's first look at the checkout is started
    too (the caller waits for it, Asked's last part, on every path as well:
    agentloop.vcs.git.first_look)."""
    jj = _jj_commits(kind, root)
    # A `.git` file is a repository too: a linked checkout's (`git worktree add`, a
    # rehearsal's own), whose commits need an identity and a signature all the same.
    if jj or kind not in ("git", "auto") or not (root / ".git").exists():
        return jj, None, None
    who = _begin(root, "var", "GIT_COMMITTER_IDENT")
    # A config git reads that never mentions signing cannot set it: no process to hear so.
    signed = _begin(root, *SIGNING) if may_set(root, b"gpgsign") else _unset
    _signing[root] = signed  # signs() takes this answer rather than asking again
    looked = None
    if look:
        from agentloop.vcs.git.first_look import look as first_look

        looked = first_look(root)
    return jj, lambda: (who(), _true(signed())), looked


def _git_ready(root: Path, git_dir: Path, answers: Answers | None) -> None:
    under_way = in_progress(git_dir)
    if under_way is not None:
        ended = quit_line(root, git_dir, Git(root))
        if ended is not None:
            raise VcsError(ended)
        raise VcsError(f"{under_way[0]} is in progress in {root}: {finish(under_way[1])}, then "
                       "run again")
    if answers is None:
        return  # jj makes the commits, with its own identity
    if may_set(root, b"required"):  # a config that never says it requires no filter
        from agentloop.vcs.git.required_filter import check

        check(root, git_dir)
    who, signed = answers()
    if who is None:
        raise VcsError("git has no identity to commit with here: set it with `git config "
                       "--global user.name \"Your Name\"` and `git config --global user.email "
                       "you@example.com`, then run again")
    if signed and _git(root, "commit-tree", "-S", EMPTY_TREE, "-m", "agent-loop: can "
                            "sign?") is None:
        raise VcsError("commit.gpgsign is set but git cannot sign a commit here (no usable key, "
                       "or gpg asks for a passphrase nobody can type): fix signing, or run with "
                       "`git -c commit.gpgsign=false` set for this repository "
                       "(`git config commit.gpgsign false`)")


# What git says of commit.gpgsign, asked by ask_git: its output, None when git cannot say.
SIGNING = ("config", "--get", "--bool", "commit.gpgsign")
_signing: dict[Path, Callable[[], str | None]] = {}


@lru_cache(maxsize=8)
def signs(root: Path) -> bool:
    """Whether the user asks git to sign every commit (commit.gpgsign)."""
    asked = _signing.pop(root, None)
    return _true(asked() if asked is not None else _git(root, *SIGNING))


def _unset() -> str | None:
    return None


def _true(out: str | None) -> bool:
    return (out or "").strip() == "true"


def _begin(root: Path, *args: str) -> Callable[[], str | None]:
    """A question to git started now; the function that waits for its output (None when
    git cannot say: exit 1 of `git config` for a setting not set, a git that cannot start,
    which is the backend's to report), the same every time it is called."""
    try:
        wait = Git(root).begin(*args, codes=None)
    except VcsError:
        return lambda: None

    def answer() -> str | None:
        try:
            done = wait()
        except VcsError:
            return None
        return done.stdout if done.returncode == 0 else None
    return answer


def _git(root: Path, *args: str) -> str | None:
    try:
        return Git(root).out(*args, timeout=60)  # a probe: gpg waiting for a passphrase
    except VcsError:  # a git that cannot start is the backend's to report
        return None


def _jj_env(root: Path) -> dict[str, str]:
    from agentloop.vcs.jj.run import identity  # jj's runner only when jj is there to ask

    return identity(dict(os.environ), root)


def _jj_identity(root: Path) -> bool:
    from agentloop.vcs.jj.run import Jj

    try:
        return bool(Jj(root).out("--ignore-working-copy", "config", "get", "user.email").strip())
    except VcsError:
        return False
