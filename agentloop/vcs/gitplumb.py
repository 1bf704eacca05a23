"""The git backend's plumbing: git commands through the one process door, where HEAD is, the
paths an attempt changed, and commits of them. agentloop.vcs.gitrecord keeps the open-attempt
record on it; agentloop.vcs.git builds the protocol."""

from __future__ import annotations

import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import git

from agentloop import proc
from agentloop.errors import ProcessError, VcsError
from agentloop.vcs import STATE_DIR, Change, gitrefs, gitstatus
from agentloop.vcs.gitfiles import plain, state_of
from agentloop.vcs.preflight import signs

# A git command that takes longer than this is stuck (a lock, a hook waiting for input).
GIT_TIMEOUT = 600
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# In the git dir while a task is open, so the next run can tell what became of an attempt whose
# run died: committed (the record names the commit), or to be rolled back.
OPEN_ATTEMPT = "agent-loop-attempt.json"
# Where the next run keeps the files of an attempt it rolls back; the reflog keeps earlier ones.
SAVED_REF = "refs/agent-loop/rolled-back"
# Lines the tool itself adds to .gitignore; a .gitignore changed only by them is not "dirty".
OWN_IGNORE_LINES = {".agent-loop", ".agent-loop/", "/.agent-loop", "/.agent-loop/"}
# A task commit: no hooks (as with commit-tree), no gc or maintenance started behind us, the
# message kept byte for byte.
COMMIT_ARGS = ("-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
               "commit", "--quiet", "--no-verify", "--cleanup=verbatim")


@dataclass(frozen=True)
class _Start:
    """What the repository looked like when a task began: the open-attempt record."""

    head: str | None            # None: unborn branch
    ref: str | None             # the branch HEAD pointed to; None when detached
    index_tree: str             # the index as a tree, to restore what the user had staged
    states: dict[str, str]      # path -> state, for paths that differed from HEAD at begin
    task: str | None = None     # the task file then: spared even by a run with another one
    # Set by finish before it commits: a commit with this message on `head` is this task's,
    # should the run die before it could note the commit's sha.
    message: str | None = None
    # Set by finish once the commit object exists, before HEAD moves to it: what the index must
    # hold afterwards (`files` as committed, `touched` as at begin), so the next run can finish.
    commit: str | None = None
    files: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)


def _split(out: str) -> set[str]:
    # Entries ending in "/" are nested repositories; they are never ours to commit or delete.
    return {p for p in out.split("\0") if p and not p.endswith("/")}


def _open(root: Path) -> git.Repo:
    """The repository, with git's objects read and written in-process (GitDB): GitPython's
    default keeps `git cat-file` processes in our process group, where a terminal's Ctrl+C
    would kill them under us. (GitPython calls GitDB deprecated for speed on huge packs; we
    read a few commits and trees a task.)"""
    # A Ctrl+C inside GitPython's constructors leaves half-built config readers whose
    # destructors print a traceback later: the signal waits until the repository is open.
    with warnings.catch_warnings(), proc.deferred():
        warnings.simplefilter("ignore", DeprecationWarning)
        return git.Repo(root, search_parent_directories=True, odbt=git.GitDB)


def index_seen(git_dir: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """Who the index file is now: git replaces it whole on every write (a new inode)."""
    if "GIT_INDEX_FILE" in os.environ:
        return None  # an index elsewhere: we would be watching the wrong file
    try:
        found = os.stat(Path(git_dir) / "index")
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns


class GitPlumbing:
    """What the git backend does with git, below the protocol."""

    def __init__(self, root: Path, task_file: Path, allow_dirty: bool = False,
                 note: str = "") -> None:
        self.root = root.resolve()
        self.task_file = task_file
        self.allow_dirty = allow_dirty
        self.note = note  # why git was chosen, when `auto` fell back to it
        self._repo: git.Repo | None = None
        self._task_rel: str | None = None
        self._plans: set[str] = set()   # other plans' task files: never a task's either
        self._start: _Start | None = None
        self._recovered: Change | None = None
        # (branch, HEAD) at which every finished task's commit was last seen in the history.
        self._sound: tuple[str | None, str | None] | None = None
        # What the next begin would find, known at the end of finish; trusted while no
        # process has been started since, for a moment (see _carried).
        self._next: tuple[int, float, _Start] | None = None
        # Who the index file was when it last held HEAD's tree and nothing else was dirty
        # (agentloop.vcs.gitquick): unchanged at finish, `git add -A` finds only the task's.
        self._index_seen: tuple[int, ...] | None = None
        self._dirs: tuple[str, str] | None = None   # the git dir and the common dir, as text
        self._env: dict[str, str] | None = None     # what every git command runs with

    @property
    def repo(self) -> git.Repo:
        if self._repo is None:
            raise VcsError("git backend used before prepare()")
        return self._repo

    def _git(self, *args: str, paths: Iterable[str] | None = None,
             env: dict[str, str] | None = None, codes: tuple[int, ...] = (0,)) -> str:
        """Run git through the one process door; `paths` go through stdin NUL-separated, so no
        list is ever too long and no file name (not even one that is not UTF-8) is mangled."""
        data = None if paths is None else b"".join(
            p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        if self._env is None:  # once per run: copying os.environ costs more than reading HEAD
            # Pathspecs are file names to us, never globs.
            self._env = {**os.environ, "GIT_LITERAL_PATHSPECS": "1"}
        full = {**self._env, **env} if env else self._env
        try:
            done = proc.run(["git", *args], cwd=self.root, env=full, check=False, input=data,
                            timeout=GIT_TIMEOUT)
        except ProcessError as exc:
            raise VcsError(f"`git {' '.join(args)}` failed: {exc}") from None
        if done.returncode not in codes:
            detail = (done.stderr or done.stdout).strip().replace("\n", " ")
            raise VcsError(f"`git {' '.join(args)}` failed: {detail}")
        return done.stdout

    def _where(self) -> tuple[str | None, str | None]:
        """(the branch HEAD names, None when detached; its commit, None when unborn). Read
        afresh every time: the user may commit while the loop pauses between tasks."""
        if self._dirs is None:
            self._dirs = (str(self.repo.git_dir), str(self.repo.common_dir))
        found = gitrefs.where(*self._dirs)
        if found is not None:
            return found
        ref = None if self.repo.head.is_detached else str(self.repo.head.reference.path)
        try:
            return ref, str(self.repo.head.commit.hexsha)
        except ValueError:
            return ref, None

    def _head(self) -> str | None:
        return self._where()[1]

    def _tree(self, commit: str | None) -> str:
        """The tree of `commit` (the empty tree for none): read straight from its loose object
        when it is one, as a commit just made is, else through GitPython."""
        if commit is None:
            return EMPTY_TREE
        if self._dirs is None:
            self._dirs = (str(self.repo.git_dir), str(self.repo.common_dir))
        return gitrefs.tree_of(Path(self._dirs[1]), commit) or \
            str(self.repo.commit(commit).tree.hexsha)

    def _ref(self) -> str | None:
        return self._where()[0]

    def _kept_out(self, rel: str) -> bool:
        return (rel == self._task_rel or rel in self._plans or rel == STATE_DIR
                or rel.startswith(STATE_DIR + "/"))

    def _status(self) -> gitstatus.Status:
        return gitstatus.parse(self._git(*gitstatus.ARGS))

    def _candidates(self, base: str | None, status: gitstatus.Status | None = None) -> set[str]:
        """Paths that may differ from `base`: untracked, or tracked and different."""
        if base == self._head():  # the common case: one `git status` says it all
            return {p for p in (status or self._status()).paths if not self._kept_out(p)}
        paths = _split(self._git("ls-files", "-z", "--others", "--exclude-standard"))
        if base is None:
            paths |= _split(self._git("ls-files", "-z", "--cached"))
        else:
            paths |= _split(self._git("diff", "--name-only", "-z", "--no-renames", base))
        return {p for p in paths if not self._kept_out(p)}

    def _changed(self, start: _Start, status: gitstatus.Status | None = None) -> set[str]:
        """Paths whose content differs from what they held at begin."""
        changed = set()
        for rel in self._candidates(start.head, status) | set(start.states):
            if self._kept_out(rel) or rel == start.task or not plain(rel):
                continue
            if rel not in start.states:
                changed.add(rel)  # clean at begin, and git now lists it: the attempt changed it
            elif state_of(self.root, rel) != start.states[rel]:
                changed.add(rel)  # already dirty at begin, and changed further since
        return changed

    def _build_tree(self, base: str | None, paths: set[str]) -> str:
        """The tree of `base` with `paths` taken from the working tree, via a scratch index."""
        with tempfile.TemporaryDirectory(dir=self.repo.git_dir) as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self._git("read-tree", base or "--empty", env=env)
            # A folder where a file was: its files are paths of their own, the file goes.
            folders = {p for p in paths if (self.root / p).is_dir()
                       and not (self.root / p).is_symlink()}
            if folders:
                self._git("update-index", "--force-remove", "-z", "--stdin",
                          paths=sorted(folders), env=env)
            self._git("update-index", "--add", "--remove", "-z", "--stdin",
                      paths=sorted(paths - folders), env=env)
            return self._git("write-tree", env=env).strip()

    def _commit(self, base: str | None, paths: set[str], message: str) -> str | None:
        """A commit of `paths` on top of `base`, HEAD left alone; None when it changes nothing."""
        tree = self._build_tree(base, paths)
        if tree == self._tree(base):
            return None  # e.g. the task undid the user's own uncommitted edit
        parents = ["-p", base] if base else []
        # commit-tree signs only when asked: the user's commit.gpgsign asks for every commit.
        sign = ["-S"] if signs(self.root) else []
        return self._git("commit-tree", *sign, tree, *parents, "-m", message).strip()

    def _commit_here(self, paths: set[str], untracked: set[str], message: str) -> str | None:
        """Commit `paths` from the working tree onto HEAD with git's own `commit --only`: what
        is staged for other paths stays out and staged, the index ends up holding the commit
        for these, all in one process (new files are first made known to the index). None
        when git declines (nothing to commit after all, a case it will not do): the caller
        then builds the commit by hand."""
        before = self._head()
        try:
            if untracked:
                self._git("add", "--intent-to-add", "--pathspec-from-file=-",
                          "--pathspec-file-nul", paths=sorted(untracked))
            self._git(*COMMIT_ARGS, "--only", "-m", message, "--pathspec-from-file=-",
                      "--pathspec-file-nul", paths=sorted(paths))
        except VcsError:
            return None
        after = self._head()
        return after if after != before else None

    def _land(self, base: str | None, sha: str, message: str) -> None:
        # The old value guards against a concurrent change of the branch.
        self._git("update-ref", "-m", f"agent-loop: {message.splitlines()[0]}", "HEAD", sha,
                  base or "0" * 40)

    def _reset_index(self, tree: str, paths: set[str]) -> None:
        if paths:
            self._git("reset", "-q", tree, "--pathspec-from-file=-", "--pathspec-file-nul",
                      paths=sorted(paths))

    def _move_head_back(self, start: _Start) -> set[str]:
        """Undo commits the agent made since begin; return the paths they touched."""
        head = self._head()
        if head == start.head:
            return set()
        if self._ref() != start.ref:
            raise VcsError(f"the agent switched HEAD from {start.ref or 'a detached HEAD'} to "
                           f"{self._ref() or 'a detached HEAD'}; switch back and retry")
        assert head is not None
        touched = _split(self._git("diff", "--name-only", "-z", "--no-renames",
                                   start.head or EMPTY_TREE, head))
        if start.head is None:
            self._git("update-ref", "-d", "HEAD", head)
        else:
            self._git("update-ref", "-m", "agent-loop: set aside the agent's commits", "HEAD",
                      start.head, head)
        return touched

    def _in_tree(self, commit: str, rel: str) -> bool:
        try:
            self.repo.commit(commit).tree / rel
        except KeyError:
            return False
        return True

    def _ignored(self, paths: set[str]) -> set[str]:
        """The paths git's ignore rules match, tracked or not."""
        if not paths:
            return set()
        # It takes paths, never patterns, and refuses the literal-pathspec switch; exit
        # status 1 means none of them is ignored.
        return _split(self._git("check-ignore", "--no-index", "-z", "--stdin",
                                paths=sorted(paths), env={"GIT_LITERAL_PATHSPECS": "0"},
                                codes=(0, 1)))

    def _ancestor(self, older: str, newer: str) -> bool:
        try:
            self._git("merge-base", "--is-ancestor", older, newer)
        except VcsError:
            return False
        return True
