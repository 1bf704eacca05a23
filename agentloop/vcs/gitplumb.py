"""The git backend's plumbing: git commands through the one process door, the open-attempt
record in the git dir, and the paths an attempt changed. agentloop.vcs.git builds the protocol
on it."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import git
from gitdb.exc import BadName, BadObject
from gitdb.util import hex_to_bin

from agentloop import proc
from agentloop.errors import ProcessError, VcsError
from agentloop.vcs import STATE_DIR, Change
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


@dataclass(frozen=True)
class _Start:
    """What the repository looked like when a task began: the open-attempt record."""

    head: str | None            # None: unborn branch
    ref: str | None             # the branch HEAD pointed to; None when detached
    index_tree: str             # the index as a tree, to restore what the user had staged
    states: dict[str, str]      # path -> state, for paths that differed from HEAD at begin
    task: str | None = None     # the task file then: spared even by a run with another one
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return git.Repo(root, search_parent_directories=True, odbt=git.GitDB)


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
        # Pathspecs are file names to us, never globs.
        full = {**os.environ, "GIT_LITERAL_PATHSPECS": "1", **(env or {})}
        try:
            done = proc.run(["git", *args], cwd=self.root, env=full, check=False, input=data,
                            timeout=GIT_TIMEOUT)
        except ProcessError as exc:
            raise VcsError(f"`git {' '.join(args)}` failed: {exc}") from None
        if done.returncode not in codes:
            detail = (done.stderr or done.stdout).strip().replace("\n", " ")
            raise VcsError(f"`git {' '.join(args)}` failed: {detail}")
        return done.stdout

    def _head(self) -> str | None:
        try:
            return str(self.repo.head.commit.hexsha)
        except ValueError:
            return None

    def _ref(self) -> str | None:
        return None if self.repo.head.is_detached else str(self.repo.head.reference.path)

    def _kept_out(self, rel: str) -> bool:
        return (rel == self._task_rel or rel in self._plans or rel == STATE_DIR
                or rel.startswith(STATE_DIR + "/"))

    def _candidates(self, base: str | None) -> set[str]:
        """Paths that may differ from `base`: untracked, or tracked and different."""
        paths = _split(self._git("ls-files", "-z", "--others", "--exclude-standard"))
        if base is None:
            paths |= _split(self._git("ls-files", "-z", "--cached"))
        else:
            paths |= _split(self._git("diff", "--name-only", "-z", "--no-renames", base))
        return {p for p in paths if not self._kept_out(p)}

    def _changed(self, start: _Start) -> set[str]:
        """Paths whose content differs from what they held at begin."""
        changed = set()
        for rel in self._candidates(start.head) | set(start.states):
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
        if tree == (self.repo.commit(base).tree.hexsha if base else EMPTY_TREE):
            return None  # e.g. the task undid the user's own uncommitted edit
        parents = ["-p", base] if base else []
        # commit-tree signs only when asked: the user's commit.gpgsign asks for every commit.
        sign = ["-S"] if signs(self.root) else []
        return self._git("commit-tree", *sign, tree, *parents, "-m", message).strip()

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

    def _missing(self, start: _Start) -> bool:
        """Whether an object the roll-back needs is gone (say, `git gc` pruned a stored blob)."""
        shas = [start.index_tree, *([start.head] if start.head else [])]
        shas += [s.split(":", 1)[1] for s in start.states.values() if s.startswith("100")]
        for sha in shas:
            try:
                self.repo.odb.info(hex_to_bin(sha))
            except (ValueError, BadName, BadObject):
                return True
        return False

    def _record(self) -> Path:
        return Path(self.repo.git_dir) / OPEN_ATTEMPT

    def _remember(self, start: _Start) -> None:
        self._start = start
        record = self._record()
        record.with_suffix(".tmp").write_text(json.dumps(dataclasses.asdict(start)))
        os.replace(record.with_suffix(".tmp"), record)

    def _forget(self) -> None:
        self._start = None
        self._record().unlink(missing_ok=True)

    def _settle(self, start: _Start) -> None:
        """The index after a task commit: its files as committed, the agent's others as before."""
        assert start.commit is not None
        self._reset_index(start.commit, set(start.files))
        self._reset_index(start.index_tree, set(start.touched))

    def _started(self) -> _Start:
        if self._start is None:
            raise VcsError("no task change is open: begin() was not called")
        return self._start

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
