"""git backend: one commit per task, holding exactly the paths the task changed.

The working tree is the truth. `begin` records HEAD, the index (as a tree) and the state of every
path that already differed from HEAD: the user's dirty and untracked files, stored as blobs so
`abandon` can put them back byte for byte. A path belongs to the task when its state differs from
that record. The commit is built in a temporary index, so nothing the user staged is swept in and
no hooks run; the task file and `.agent-loop/` are never candidates. The record is also written to
the git dir until the task ends, so the next run can roll back an attempt whose run died.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import git
from gitdb import IStream
from gitdb.util import hex_to_bin

from agentloop.errors import VcsError
from agentloop.vcs import STATE_DIR, Change, relative_to

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
MISSING = "missing"
# In the git dir while a task is open, so a run that died mid-task can be rolled back by the next.
OPEN_ATTEMPT = "agent-loop-attempt.json"
# Lines the tool itself adds to .gitignore; a .gitignore changed only by them is not "dirty".
OWN_IGNORE_LINES = {".agent-loop", ".agent-loop/", "/.agent-loop", "/.agent-loop/"}


@dataclass(frozen=True)
class _Start:
    """What the repository looked like when a task began."""

    head: str | None            # None: unborn branch
    ref: str | None             # the branch HEAD pointed to; None when detached
    index_tree: str             # the index as a tree, to restore what the user had staged
    states: dict[str, str]      # path -> state, for paths that differed from HEAD at begin


def _split(out: str) -> set[str]:
    # Entries ending in "/" are nested repositories; they are never ours to commit or delete.
    return {p for p in out.split("\0") if p and not p.endswith("/")}


class GitVcs:
    """Tasks as commits on the current branch, through GitPython and the git it drives."""

    name = "git"

    def __init__(self, root: Path, task_file: Path, allow_dirty: bool = False) -> None:
        self.root = root.resolve()
        self.task_file = task_file
        self.allow_dirty = allow_dirty
        self._repo: git.Repo | None = None
        self._task_rel: str | None = None
        self._start: _Start | None = None

    @property
    def repo(self) -> git.Repo:
        if self._repo is None:
            raise VcsError("git backend used before prepare()")
        return self._repo

    # -- plumbing -------------------------------------------------------------------------------

    def _git(self, *args: str, paths: Iterable[str] | None = None,
             env: dict[str, str] | None = None) -> str:
        """Run git; `paths` go through stdin NUL-separated, so no list is ever too long."""
        stdin = None
        if paths is not None:
            stdin = tempfile.TemporaryFile()
            stdin.write(b"".join(p.encode() + b"\0" for p in paths))
            stdin.seek(0)
        try:
            out = self.repo.git.execute(["git", *args], istream=stdin, env=env,
                                        strip_newline_in_stdout=False)
        except git.GitCommandError as exc:
            # GitPython wraps stderr as "\n  stderr: '...'"; show git's own words only.
            detail = (exc.stderr or exc.stdout or "").strip().removeprefix("stderr: '")
            detail = detail.removesuffix("'").strip().replace("\n", " ")
            raise VcsError(f"`git {' '.join(args)}` failed: {detail}") from exc
        finally:
            if stdin is not None:
                stdin.close()
        return str(out)

    def _head(self) -> str | None:
        try:
            return str(self.repo.head.commit.hexsha)
        except ValueError:
            return None

    def _ref(self) -> str | None:
        return None if self.repo.head.is_detached else str(self.repo.head.reference.path)

    def _kept_out(self, rel: str) -> bool:
        return rel == self._task_rel or rel == STATE_DIR or rel.startswith(STATE_DIR + "/")

    def _candidates(self, base: str | None) -> set[str]:
        """Paths that may differ from `base`: untracked, or tracked and different."""
        paths = _split(self._git("ls-files", "-z", "--others", "--exclude-standard"))
        if base is None:
            paths |= _split(self._git("ls-files", "-z", "--cached"))
        else:
            paths |= _split(self._git("diff", "--name-only", "-z", "--no-renames", base))
        return {p for p in paths if not self._kept_out(p)}

    def _state(self, rel: str, keep: bool = False) -> str:
        """A path's content as one string; with `keep` the bytes are stored as a blob."""
        full = self.root / rel
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return MISSING
        if stat.S_ISLNK(st.st_mode):
            return "link:" + os.readlink(full)
        if not stat.S_ISREG(st.st_mode):
            return "other"
        mode = "100755" if st.st_mode & 0o111 else "100644"
        data = full.read_bytes()
        if keep:
            sha = self.repo.odb.store(IStream("blob", len(data), io.BytesIO(data))).hexsha.decode()
        else:
            sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        return f"{mode}:{sha}"

    def _changed(self, start: _Start) -> set[str]:
        """Paths whose content differs from what they held at begin."""
        changed = set()
        for rel in self._candidates(start.head) | set(start.states):
            if rel not in start.states:
                changed.add(rel)  # clean at begin, and git now lists it: the attempt changed it
            elif self._state(rel) != start.states[rel]:
                changed.add(rel)  # already dirty at begin, and changed further since
        return changed

    def _build_tree(self, base: str | None, paths: set[str]) -> str:
        """The tree of `base` with `paths` taken from the working tree, via a scratch index."""
        with tempfile.TemporaryDirectory(dir=self.repo.git_dir) as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self._git("read-tree", base or "--empty", env=env)
            self._git("update-index", "--add", "--remove", "-z", "--stdin", paths=sorted(paths),
                      env=env)
            return self._git("write-tree", env=env).strip()

    def _commit(self, base: str | None, paths: set[str], message: str) -> str | None:
        """Commit `paths` on top of `base` and move HEAD there; None when that changes nothing."""
        tree = self._build_tree(base, paths)
        if tree == (self.repo.commit(base).tree.hexsha if base else EMPTY_TREE):
            return None  # e.g. the task undid the user's own uncommitted edit
        parents = ["-p", base] if base else []
        sha = self._git("commit-tree", tree, *parents, "-m", message).strip()
        # The old value guards against a concurrent change of the branch.
        self._git("update-ref", "-m", f"agent-loop: {message.splitlines()[0]}", "HEAD", sha,
                  base or "0" * 40)
        return sha

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

    # -- the protocol ---------------------------------------------------------------------------

    def prepare(self) -> list[str]:
        """Open (or `git init`) the repository; refuse a dirty tree unless allowed."""
        notes: list[str] = []
        try:
            self._repo = git.Repo(self.root, search_parent_directories=True)
        except git.InvalidGitRepositoryError:
            self._repo = git.Repo.init(self.root)
            notes.append(f"initialized a git repository in {self.root}")
        except git.NoSuchPathError as exc:
            raise VcsError(f"{self.root} does not exist") from exc
        # Pathspecs are file names to us, never globs.
        self.repo.git.update_environment(GIT_LITERAL_PATHSPECS="1")
        if self.repo.working_tree_dir is None:
            raise VcsError(f"{self.repo.git_dir} is a bare repository: there is no working tree")
        self.root = Path(self.repo.working_tree_dir).resolve()
        self._task_rel = relative_to(self.task_file, self.root)
        notes += self._roll_back_leftover()
        head = self._head()
        dirty = sorted(p for p in self._candidates(head)
                       if not (p == ".gitignore" and self._only_own_ignore_lines(head)))
        if notes and head is None and dirty:
            # A folder we just put under git: its files become the base, so reverting a task
            # never deletes a file that was there before agent-loop came.
            sha = self._commit(None, set(dirty), "Files present before agent-loop's first task")
            self._reset_index(sha or EMPTY_TREE, set(dirty))
            notes.append(f"committed the {len(dirty)} files already there as the starting point")
        elif dirty and not self.allow_dirty:
            raise VcsError(f"{len(dirty)} uncommitted file(s) in {self.root} (e.g. {dirty[0]}): "
                           "commit or stash them, or pass --allow-dirty to leave them out of "
                           "task commits")
        elif dirty:
            # The limit of allow_dirty: a dirty file the task edits further is committed whole,
            # the user's edit with it (an untracked one as a new file, which a revert deletes).
            notes.append(f"{len(dirty)} uncommitted file(s) stay out of task commits unless a "
                         "task edits them")
        return notes

    def _roll_back_leftover(self) -> list[str]:
        """An earlier run died inside a task: put its files back, as abandon would have."""
        try:
            leftover = _Start(**json.loads((Path(self.repo.git_dir) / OPEN_ATTEMPT).read_text()))
        except FileNotFoundError:
            return []
        self._start = leftover
        if leftover.head != self._head():
            # Commits were made since; they may be the user's, so nothing is undone.
            self._forget()
            return ["an earlier run stopped inside a task; HEAD has moved since, so its files "
                    "are left as they are"]
        self.abandon(Change(change_id=""))
        return ["rolled back the unfinished task attempt an earlier run left behind"]

    def _forget(self) -> None:
        self._start = None
        (Path(self.repo.git_dir) / OPEN_ATTEMPT).unlink(missing_ok=True)

    def _only_own_ignore_lines(self, head: str | None) -> bool:
        def strip(text: str) -> list[str]:
            return [line for line in text.splitlines() if line.strip() not in OWN_IGNORE_LINES]
        try:
            now = (self.root / ".gitignore").read_text()
        except (FileNotFoundError, UnicodeDecodeError):
            return False
        try:
            assert head is not None
            before = (self.repo.commit(head).tree / ".gitignore").data_stream.read().decode()
        except (AssertionError, KeyError, UnicodeDecodeError):
            before = ""
        return strip(now) == strip(before)

    def begin(self, message: str) -> Change:
        """Record HEAD, the index and the state of every already-dirty path."""
        head = self._head()
        try:
            index_tree = self._git("write-tree").strip()
        except VcsError:
            index_tree = head or EMPTY_TREE  # unmerged entries: the best we can put back is HEAD
        states = {p: self._state(p, keep=True) for p in self._candidates(head)}
        self._start = _Start(head, self._ref(), index_tree, states)
        record = Path(self.repo.git_dir) / OPEN_ATTEMPT
        record.with_suffix(".tmp").write_text(json.dumps(dataclasses.asdict(self._start)))
        os.replace(record.with_suffix(".tmp"), record)
        return Change(change_id="", base=head or "")

    def finish(self, change: Change, message: str) -> Change:
        """Commit the task's paths; fold any commits the agent made itself into that one commit.

        Folding keeps one commit per task, so one `git revert` undoes the task, and it applies the
        same filters to the agent's commits (a `git commit -a` would have taken the task file).
        """
        start = self._started()
        agent_subjects = ""
        if self._head() != start.head:
            agent_subjects = self._git("log", "--reverse", "--format=- %s",
                                       f"{start.head}..HEAD" if start.head else "HEAD").strip()
        touched = self._move_head_back(start)
        changed = self._changed(start)
        self._forget()
        if agent_subjects:
            message += "\n\nIncludes the commits the agent made itself:\n" + agent_subjects
        sha = self._commit(start.head, changed, message) if changed else None
        if sha is None:
            self._reset_index(start.index_tree, touched)
            return Change(change_id="", base=start.head or "", empty=True)
        self._reset_index(sha, changed)
        self._reset_index(start.index_tree, touched - changed)
        return Change(change_id=sha, commit_id=sha, base=start.head or "",
                      files=tuple(sorted(changed)))

    def abandon(self, change: Change) -> None:
        """Put every path the attempt changed back as it was at begin, commits included."""
        start = self._started()
        touched = self._move_head_back(start)
        changed = self._changed(start)
        from_head: set[str] = set()
        for rel in sorted(changed):
            if rel in start.states:
                self._put_back(rel, start.states[rel])
            elif start.head is not None and self._in_tree(start.head, rel):
                from_head.add(rel)
            else:
                self._put_back(rel, MISSING)
        if from_head:
            self._git("restore", f"--source={start.head}", "--worktree",
                      "--pathspec-from-file=-", "--pathspec-file-nul", paths=sorted(from_head))
        staged = _split(self._git("diff-index", "--cached", "--name-only", "-z",
                                  start.index_tree))
        self._reset_index(start.index_tree, {p for p in changed | touched | staged
                                             if not self._kept_out(p)})
        self._forget()

    def diff(self, change: Change) -> str:
        """The task commit's patch; before finish, what the task would commit now."""
        if change.change_id:
            return self._git("show", "--format=", "--patch", "--no-color", "--no-ext-diff",
                             change.change_id)
        start = self._started()
        tree = self._build_tree(start.head, self._changed(start))
        return self._git("diff-tree", "--patch", "--no-color", start.head or EMPTY_TREE, tree)

    def close(self) -> None:
        """Nothing to leave: the next edits are uncommitted, in no task's commit."""
        if self._repo is not None:
            self._repo.close()

    # -- helpers --------------------------------------------------------------------------------

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

    def _put_back(self, rel: str, state: str) -> None:
        full = self.root / rel
        if full.is_dir() and not full.is_symlink():
            shutil.rmtree(full)
        elif full.exists() or full.is_symlink():
            full.unlink()
        if state == MISSING:
            # Folders the attempt created for its files go too; git does not keep empty ones.
            for parent in full.parents:
                if parent == self.root or not parent.is_dir() or any(parent.iterdir()):
                    break
                parent.rmdir()
            return
        full.parent.mkdir(parents=True, exist_ok=True)
        if state.startswith("link:"):
            os.symlink(state[len("link:"):], full)
        elif state != "other":
            mode, sha = state.split(":")
            full.write_bytes(self.repo.odb.stream(hex_to_bin(sha)).read())
            os.chmod(full, 0o755 if mode == "100755" else 0o644)
