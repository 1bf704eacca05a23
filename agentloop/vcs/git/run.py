"""The one door agent-loop's git commands go through: one environment, one timeout, one error text.

Every git command of the backend, the lanes, the main line and the fleet's branches runs here, so
a missing git, a folder removed from outside and a command git refuses each read the same way
wherever they happen.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable, Mapping

from agentloop import proc
from agentloop.errors import ProcessError, ProgramNotFound, VcsError
from agentloop.proc import environ
from agentloop.vcs import folder_gone

# A git command that takes longer than this is stuck (a lock, a hook waiting for input).
TIMEOUT = 600
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Runs of one command refused for an index lock a git at work holds: a lock taken again and
# again (an editor's git panel refreshing in a loop) is no moment's lock, and the run says so.
LOCK_TRIES = 3
# On every git command of agent-loop's: none of the programs a repository's config or hooks
# folder names runs for it (its hooks: reference-transaction on each ref update,
# post-index-change, post-checkout on a lane's `worktree add`; an fsmonitor on each look at a
# working tree). A hook waiting for input or editing the tree would break the bookkeeping, and
# an agent working without --sandbox can plant one in .git/hooks or .git/config (the lane's
# check says so: agentloop.vcs.git.gitfiles). --git-hooks runs pre-commit and commit-msg itself,
# as checks (agentloop.vcs.githooks). `/dev/null` is no folder: git finds no hook there.
GUARD = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """What every git command runs with: pathspecs are file names to us, never globs; git never
    asks for a password on a terminal nobody watches; and no GIT_REFLOG_ACTION from outside (a
    run started from an agent's shell inherits the mark an agent's reflog entries carry, which
    agentloop.vcs.git.reflog reads as an agent's own command)."""
    env = {**environ.current(), "GIT_LITERAL_PATHSPECS": "1", "GIT_TERMINAL_PROMPT": "0",
           **(extra or {})}
    if "GIT_REFLOG_ACTION" not in (extra or {}):
        env.pop("GIT_REFLOG_ACTION", None)
    return env


LOST = "git objects it needs are missing"
NOT_HERE = "is not in this repository"
# The error of a git command that failed on an object git does not have holds one of these (git's
# own words never: `failure` says them as ours).
GONE = (LOST, NOT_HERE)
# What git says of an object it needed and does not have, each read off a real git (2.39: see
# tests/vcs/test_git_run.py); the group is the object, or the name git was given for it.
# Patterns, compiled where a git command has failed: a plain run never does (compiling is a
# start-up cost: tests/cli/test_startup.py).
_LOST_WORDS = (r"unable to read (?:tree )?([0-9a-f]{7,})\b"     # diff-tree, diff: a tree, a file
               r"|invalid object [0-7]+ ([0-9a-f]{40,64})"       # write-tree, read-tree: a file
               r"|bad object (\S+)"                              # diff-tree, log, rev-list, show
               r"|nonexistent object ([0-9a-f]{40,64})"          # update-ref
               r"|([0-9a-f]{40,64}) is not a valid object"       # commit-tree
               r"|[Cc]ould not read ([0-9a-f]{40,64})"           # rev-list, log: a parent
               r"|cannot read commit object ([0-9a-f]{40,64})"   # log --oneline: a parent
               r"|([0-9a-f]{40,64}) - not something we can merge"  # merge, merge-tree
               r"|cat-file ([0-9a-f]{40,64}): bad file")         # cat-file <kind>
_SHA = r"[0-9a-f]{40,64}"


def lost(shown: str, root: Path, args: tuple[str, ...], detail: str,
         git_dir: Path | None = None) -> str | None:
    """Our one line for `git SHOWN` (`args` in full) in `root` failing on an object git does
    not have (`detail`, git's words, left out); None for any other failure. git's words are the
    same for an object a `git gc` removed and for a full sha it never had (mistyped, from
    another clone, a record edited by hand): one it was handed is said as not in the
    repository; one it reached through another (a tree's file, a commit's parent, what a
    branch or HEAD names) as missing objects, what removes them, and what says which."""
    found = re.search(_LOST_WORDS, detail)
    if found is None:
        return None
    name = next(group for group in found.groups() if group)
    if name in re.findall(_SHA, " ".join(args)):
        # One git has, of another kind than the command takes, reads the same: git's words.
        if Git(root, git_dir).code("cat-file", "-e", name, codes=(0, 1, 128))[0] == 0:
            return None
        return f"`git {shown}` failed in {root}: it was given {name[:12]}, which {NOT_HERE}"
    which = f" ({name[:12]} among them)" if re.fullmatch(_SHA, name) else ""
    return (f"`git {shown}` failed in {root}: {LOST}{which}: a `git gc --prune=now` (an "
            "agent's, in its lane, say) removed them, or the repository is damaged; `git fsck` "
            "says what is missing, and a run started once nothing prunes goes on")


def _shown(args: tuple[str, ...]) -> str:
    """A git command as said in an error: its first words, none that spans lines."""
    return " ".join(a for a in args[:3] if "\n" not in a)


def failure(root: Path, args: tuple[str, ...], detail: str,
            git_dir: Path | None = None) -> VcsError:
    """The one error text of a git command that failed, naming the real cause where it is one a
    user can act on (a folder removed from outside, git missing)."""
    missing = folder_gone(root)
    if missing is not None:
        return VcsError(missing)
    shown = _shown(args)
    said = lost(shown, root, args, detail, git_dir)
    if said is None and "index.lock" in detail:  # git's own words run on for three lines
        from agentloop.vcs.git import held_lock

        said = held_lock.stayed(detail)
        said = said and f"`git {shown}` failed in {root}: {said}"
    if said is None and " filter '" in detail:  # your setting, not the agent's work
        said = _filter_failed(detail)
    return VcsError(said or f"`git {shown}` failed in {root}: {detail}")


def _filter_failed(detail: str) -> str | None:
    """The one line for a git command that failed on a required filter of yours (git's own
    words run on for three lines), naming the setting; None when `detail` names none. Your
    config's filters are checked before the first agent (agentloop.vcs.git.required_filter);
    this is a filter that failed on a file all the same."""
    found = re.search(r"(?:clean|smudge) filter '([^']+)' failed", detail)
    if found is None:
        return None
    name = found.group(1)
    return (f"your git's required filter \"{name}\" (filter.{name}.required) failed on a "
            f"file ({found.group(0)}): fix its command (filter.{name}.*), or "
            f"`git config --unset filter.{name}.required`, then run again")


class Git:
    """git in one folder (a checkout, a lane's worktree, or a bare git dir with `git_dir`)."""

    def __init__(self, root: Path, git_dir: Path | None = None) -> None:
        self.root = root
        self.git_dir = git_dir
        self._env: dict[str, str] | None = None  # copied once: copying os.environ costs more
                                                 # than reading HEAD

    def run(self, *args: str, paths: Iterable[str] | None = None, input: str | None = None,
            env: Mapping[str, str] | None = None, codes: tuple[int, ...] | None = (0,),
            timeout: float = TIMEOUT, meanwhile: Callable[[], object] | None = None,
            as_configured: bool = False) -> proc.Completed:
        """Run one git command; VcsError for an exit code not in `codes` (None: any exit code
        is an answer). `env`: variables set on top of the one environment. `paths` go through
        stdin NUL-separated, so no list is ever too long and no file name (not even one that
        is not UTF-8) is mangled. `meanwhile`: proc.run's, called once it has started. A
        refusal for an index lock a git at work holds is tried again once the lock goes, within
        a moment (agentloop.vcs.git.held_lock).
        `as_configured`: without GUARD, for the one question whose answer it changes (where
        the repository's hooks are: `rev-parse --git-path hooks/...`)."""
        data: str | bytes | None = input
        if paths is not None:
            data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        full = self._environment(env)
        for tries in range(LOCK_TRIES):
            try:
                # In its folder by `-C`, started from ours: a process started in another folder
                # (a lane's worktree) takes Popen's fork and its copy of the environment, some
                # times what posix_spawn costs, which cannot change folders (agentloop.proc.spawn).
                done = proc.run(self._argv(args, as_configured), env=full, check=False,
                                input=data, timeout=timeout, meanwhile=meanwhile)
            except (ProgramNotFound, ProcessError) as exc:
                raise self._failed(args, exc) from None
            meanwhile = None  # called once, as the first try started
            # Refused for an index lock a git of yours holds a moment: run again once it goes.
            if not done.returncode or "index.lock" not in (done.stderr or ""):
                break
            from agentloop.vcs.git import held_lock

            if tries + 1 == LOCK_TRIES:
                break
            again = held_lock.gone(done.stderr or "")
            if again is None and codes is not None and done.returncode not in codes:
                # git's own words run on for three lines and do not say why it is not run again
                raise VcsError(f"`git {_shown(args)}` failed in {self.root}: "
                               f"{held_lock.moved(done.stderr or '')}")
            if not again:
                break
        return self._answer(args, done, codes)

    def start(self, *args: str) -> Callable[[], str]:
        """A git command that only reads, started now to run beside what the caller does next;
        the function that waits for it and returns its standard output, as `out` would (the
        function must be called: it reaps the command)."""
        wait = self.begin(*args)
        return lambda: wait().stdout

    def begin(self, *args: str, env: Mapping[str, str] | None = None,
              codes: tuple[int, ...] | None = (0,), as_configured: bool = False,
              timeout: float = TIMEOUT) -> Callable[[], proc.Completed]:
        """`start` with `run`'s answer: the function waits for the command and returns what
        `run` would have (it must be called: it reaps the command; called again, it gives the
        same answer or raises the same error)."""
        full = self._environment(env)
        try:
            wait = proc.start(self._argv(args, as_configured), env=full, timeout=timeout)
        except (ProgramNotFound, ProcessError) as exc:
            raise self._failed(args, exc) from None
        found: list[proc.Completed | VcsError] = []

        def answer() -> proc.Completed:
            if not found:
                try:
                    found.append(self._answer(args, wait(), codes))
                except ProcessError as exc:
                    found.append(self._failed(args, exc))
                except VcsError as exc:
                    found.append(exc)
            if isinstance(found[0], VcsError):
                raise found[0]
            return found[0]
        return answer

    def _argv(self, args: tuple[str, ...], as_configured: bool) -> list[str]:
        return ["git", "-C", str(self.root), *(() if as_configured else GUARD), *args]

    def _environment(self, env: Mapping[str, str] | None) -> Mapping[str, str]:
        if self._env is None:
            self._env = environment({"GIT_DIR": str(self.git_dir)} if self.git_dir else None)
        if not self.root.is_dir():
            raise failure(self.root, (), "")
        return {**self._env, **env} if env else self._env

    def _failed(self, args: tuple[str, ...], exc: ProcessError) -> VcsError:
        if isinstance(exc, ProgramNotFound):
            if not self.root.is_dir():
                return failure(self.root, args, "")
            return VcsError("git is not installed or not on PATH")
        return failure(self.root, args, str(exc), self.git_dir)

    def _answer(self, args: tuple[str, ...], done: proc.Completed,
                codes: tuple[int, ...] | None) -> proc.Completed:
        if codes is not None and done.returncode not in codes:
            detail = (done.stderr or done.stdout).strip().replace("\n", " ")
            raise failure(self.root, args, detail, self.git_dir)
        return done

    def out(self, *args: str, paths: Iterable[str] | None = None, input: str | None = None,
            env: Mapping[str, str] | None = None, codes: tuple[int, ...] | None = (0,),
            timeout: float = TIMEOUT, as_configured: bool = False) -> str:
        """A git command's standard output."""
        return self.run(*args, paths=paths, input=input, env=env, codes=codes,
                        timeout=timeout, as_configured=as_configured).stdout

    def code(self, *args: str, input: str | None = None, env: Mapping[str, str] | None = None,
             codes: tuple[int, ...] = (0,)) -> tuple[int, str]:
        """(exit code, standard output) of a git command whose exit code says something."""
        done = self.run(*args, input=input, env=env, codes=codes)
        return done.returncode, done.stdout

    def ancestor(self, older: str, newer: str) -> bool:
        """Whether `older` is in `newer`'s history (False for a commit git does not have)."""
        return self.code("merge-base", "--is-ancestor", older, newer,
                         codes=(0, 1, 128))[0] == 0

    def sha(self, rev: str) -> str | None:
        """The commit `rev` names, or None when there is none."""
        code, out = self.code("rev-parse", "--verify", "-q", rev + "^{commit}", codes=(0, 1, 128))
        return out.strip() if code == 0 else None
