"""git: putting a lane's task commits onto the main line without touching the user's checkout.

The main line is the branch the main checkout was on when the run began. Each task commit of a
lane is replayed onto it as one new commit (same tree change, author, date and message): `git
merge-tree --write-tree` merges it with the main line in memory, `git commit-tree` makes the
commit, and one `git update-ref --stdin` transaction moves the branch from the commit it was
just read at (compare-and-swap: a branch the user moved meanwhile is read again) and records
`refs/agent-loop/landed/<lane commit>`, so a run killed at any moment never lands a task twice.

The main checkout then follows with `git read-tree -m -u OLD NEW`, which changes only the paths
the commit changed and keeps everything else the user has, staged or not. When the user's own
uncommitted edits (or untracked files) sit on a path the commit changes, the branch does not
move: the lane waits, saying which files once, until the user commits or stashes them. Moving it
would leave the checkout showing the task's change reversed, one commit away from undoing it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from agentloop import proc
from agentloop.errors import ProcessError, VcsError

LANDED = "refs/agent-loop/landed/"
# In the git dir while a landing's checkout has not followed the branch: "<old> <new>".
RECORD = "agent-loop-landing"
POLL_SECONDS = 1.0


class IntegrationConflict(VcsError):
    """A lane's commit does not merge cleanly with the main line."""

    def __init__(self, commit: str, files: tuple[str, ...], onto: str) -> None:
        super().__init__(f"commit {commit[:12]} conflicts with the main line in "
                         f"{', '.join(files) or 'some files'}")
        self.commit = commit
        self.files = files
        self.onto = onto


def git(root: Path, *args: str, codes: tuple[int, ...] = (0,), input: str | None = None,
        env: dict[str, str] | None = None) -> tuple[int, str]:
    """(exit code, stdout) of one git command in `root`; VcsError for any other exit."""
    full = {**os.environ, "GIT_LITERAL_PATHSPECS": "1", **(env or {})}
    try:
        done = proc.run(["git", *args], cwd=root, env=full, check=False, input=input,
                        timeout=600)
    except ProcessError as exc:
        raise VcsError(f"`git {args[0]}` failed: {exc}") from None
    if done.returncode not in codes:
        detail = (done.stderr or done.stdout).strip().replace("\n", " ")
        raise VcsError(f"`git {' '.join(args[:3])}` failed: {detail}")
    return done.returncode, done.stdout


class GitMainLine:
    """The branch every lane's tasks land on, and the one lock their landings take in turn."""

    def __init__(self, root: Path, ref: str, on_wait: Callable[[str], None] | None = None,
                 stopping: Callable[[], bool] | None = None) -> None:
        self.root = root
        self.ref = ref
        self.on_wait = on_wait or (lambda text: None)
        self.stopping = stopping or (lambda: False)
        self._lock = threading.Lock()

    @classmethod
    def current(cls, root: Path, **kwargs: Callable[..., object]) -> "GitMainLine":
        """The branch the main checkout is on now."""
        code, out = git(root, "symbolic-ref", "-q", "HEAD", codes=(0, 1))
        if code:
            raise VcsError("--parallel needs the main checkout on a branch (HEAD is detached): "
                           "`git switch <branch>` first")
        return cls(root, out.strip(), **kwargs)  # type: ignore[arg-type]

    def tip(self) -> str:
        """The main line's commit now."""
        return git(self.root, "rev-parse", self.ref)[1].strip()

    def landed(self, commit: str) -> str | None:
        """The main line's copy of lane commit `commit`, if it landed already."""
        code, out = git(self.root, "rev-parse", "--verify", "-q", LANDED + commit, codes=(0, 1))
        return out.strip() if code == 0 else None

    def land(self, commit: str) -> str:
        """Replay lane commit `commit` onto the main line; return the new commit's sha."""
        done = self.landed(commit)
        if done is not None:
            return done
        told = False
        while True:
            with self._lock:
                old = self.tip()
                new, files = self._replay(old, commit)
                busy = self._busy(files)
                if not busy:
                    # Noted until the checkout has followed: a kill in between leaves the
                    # branch ahead of the checkout, which the next run's preflight mends.
                    record = self._git_dir() / RECORD
                    record.write_text(f"{old} {new}\n")
                    swapped = self._swap(old, new, commit)
                    if swapped:
                        self._refresh(old, new, files)
                    record.unlink(missing_ok=True)
                    if swapped:
                        return new
            if busy and not told:
                told = True
                self.on_wait(f"waiting: your uncommitted edits to {', '.join(busy[:5])} in "
                             f"{self.root} overlap a finished task's change; commit or stash "
                             "them and it lands on the branch")
            if self.stopping():
                raise VcsError(f"stopped before commit {commit[:12]} reached {self.ref}")
            time.sleep(POLL_SECONDS if busy else 0)

    def forget(self, commits: list[str]) -> None:
        """Drop the landed records of these lane commits (their tasks are saved as done)."""
        for commit in commits:
            git(self.root, "update-ref", "-d", LANDED + commit, codes=(0, 1))

    def forget_all(self) -> None:
        """Drop every landed record (no task is left whose landing is in doubt)."""
        out = git(self.root, "for-each-ref", "--format=%(refname)", LANDED)[1]
        for ref in out.split():
            git(self.root, "update-ref", "-d", ref, codes=(0, 1))

    def _replay(self, old: str, commit: str) -> tuple[str, list[str]]:
        code, out = git(self.root, "merge-tree", "--write-tree", "--name-only", "--no-messages",
                        old, commit, codes=(0, 1))
        lines = out.splitlines()
        if code == 1:
            raise IntegrationConflict(commit, tuple(dict.fromkeys(l for l in lines[1:] if l)),
                                      old)
        new = copy_commit(self.root, commit, lines[0].strip(), old)
        return new, changed_files(self.root, old, new)

    def _busy(self, files: list[str]) -> list[str]:
        """Which of `files` the user has edited, staged or left untracked in the checkout."""
        if not files or not self._checked_out():
            return []
        out = git(self.root, "status", "--porcelain", "-z", "--untracked-files=all",
                  "--ignored=no", "--", *files)[1]
        return sorted({entry[3:] for entry in out.split("\0") if len(entry) > 3})

    def _swap(self, old: str, new: str, commit: str) -> bool:
        """Move the branch from `old` to `new`; False when it is no longer at `old`."""
        script = (f"start\nupdate {self.ref} {new} {old}\ncreate {LANDED}{commit} {new}\n"
                  "prepare\ncommit\n")
        args = ("update-ref", "--stdin", "-m", f"agent-loop: landed {commit[:12]}")
        code, _ = git(self.root, *args, input=script, codes=(0, 128))
        if code == 0:
            return True
        if self.tip() != old:
            return False  # moved meanwhile: read it again
        git(self.root, *args, input=script)  # not moved: a lock, say; its error, never a loop
        return True

    def _git_dir(self) -> Path:
        return Path(git(self.root, "rev-parse", "--absolute-git-dir")[1].strip())

    def _checked_out(self) -> bool:
        code, out = git(self.root, "symbolic-ref", "-q", "HEAD", codes=(0, 1))
        return code == 0 and out.strip() == self.ref

    def _refresh(self, old: str, new: str, files: list[str]) -> None:
        if not self._checked_out():
            return  # the user switched branches: their checkout is theirs
        code, _ = git(self.root, "read-tree", "-m", "-u", old, new, codes=(0, 128))
        if code:
            self.on_wait(f"{self.ref} moved to {new[:12]}, but the checkout could not follow "
                         f"(a file of {', '.join(files[:5])} changed meanwhile); your files are "
                         "as you left them: `git status` shows the difference")


def copy_commit(root: Path, commit: str, tree: str, parent: str) -> str:
    """A commit of `tree` on `parent` with `commit`'s author, date and message, byte for byte."""
    raw = git(root, "cat-file", "commit", commit)[1]
    head, _, message = raw.partition("\n\n")
    author = next(line for line in head.splitlines() if line.startswith("author "))
    who, _, when = author[len("author "):].rpartition("> ")
    name, _, email = who.partition(" <")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when}
    return git(root, "commit-tree", tree, "-p", parent, input=message, env=env)[1].strip()


def changed_files(root: Path, old: str, new: str) -> list[str]:
    """The paths that differ between two commits."""
    out = git(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", old, new)[1]
    return [f for f in out.split("\0") if f]


def finish_landing(root: Path, git_dir: Path) -> str | None:
    """A landing a kill cut short after the branch moved and before the checkout followed: the
    checkout follows now (the files the commit changed, nothing else). A note, or None."""
    record = git_dir / RECORD
    try:
        old, new = record.read_text().split()
    except (OSError, ValueError):
        return None
    note = None
    head = git(root, "rev-parse", "-q", "--verify", "HEAD", codes=(0, 1))[1].strip()
    if head == new and git(root, "diff", "--cached", "--quiet", old, codes=(0, 1))[0] == 0:
        code, _ = git(root, "read-tree", "-m", "-u", old, new, codes=(0, 128))
        if code:  # cut short halfway through its files: they are the commit's, set them so
            for path in changed_files(root, old, new):
                there = git(root, "cat-file", "-e", f"{new}:{path}", codes=(0, 1, 128))[0] == 0
                if there:
                    git(root, "checkout", new, "--", path)
                else:
                    git(root, "rm", "-q", "-f", "--ignore-unmatch", "--", path)
        note = (f"a landing was cut short before the checkout followed the branch; it follows "
                f"now ({new[:12]})")
    record.unlink(missing_ok=True)
    return note


MARKERS = ("<<<<<<< ", ">>>>>>> ")  # git's and jj's alike, at the start of a line


def markers_left(root: Path, files: Iterable[str]) -> list[str]:
    """Which of `files` (relative to `root`) still hold a conflict marker at a line's start."""
    left = []
    for name in files:
        try:
            text = (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if any(line.startswith(MARKERS) for line in text.splitlines()):
            left.append(name)
    return left
