"""git backend: one commit per task, holding exactly the paths the task changed.

The working tree is the truth. `begin` records HEAD, the index (as a tree) and the state of every
path that already differed from HEAD: the user's dirty and untracked files, stored as blobs so
`abandon` can put them back byte for byte. A path belongs to the task when its state differs from
that record. The commit is git's own `commit --only` of exactly those paths (or, where git
declines, one built in a temporary index), so nothing the user staged is swept in and no hooks
run; the task file and `.agent-loop/` are never candidates.

The record is also written to the git dir (OPEN_ATTEMPT) until the task has ended, so the next run
can deal with an attempt whose run died (SIGKILL, power loss): `finish` adds the commit's message
(or, building the commit by hand, its sha) to it before HEAD moves, and it stays until the next
task begins. The next `prepare` then keeps a commit that landed (nothing is committed twice,
nothing finished is lost), and rolls back an attempt that never got that far, after saving its
files in a commit under SAVED_REF: a roll-back nobody asked for must not be the only copy of
anything.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterable

import git

from agentloop.errors import VcsError
from agentloop.vcs import Change, plan_files, relative_to
from agentloop.vcs.gitfiles import MISSING, put_back, state_of
from agentloop.vcs.gitplumb import EMPTY_TREE, OWN_IGNORE_LINES, _open, _split, _Start, index_seen
from agentloop.vcs.gitquick import GitQuick
from agentloop.vcs.history import missing


class GitVcs(GitQuick):
    """Tasks as commits on the current branch, through GitPython and the git it drives."""

    name = "git"
    lost_hint = ("`git reflog` shows where the branch was; `git reset --hard <that sha>` (or "
                 "`git cherry-pick <sha>`) brings the commit back")

    # -- plumbing -------------------------------------------------------------------------------

    # -- the protocol ---------------------------------------------------------------------------

    def prepare(self) -> list[str]:
        """Open (or `git init`) the repository; refuse a dirty tree unless allowed."""
        notes: list[str] = [self.note] if self.note else []
        created = False
        try:
            self._repo = _open(self.root)
        except git.InvalidGitRepositoryError:
            self._git("init", "-q")
            self._repo = _open(self.root)
            created = True
            notes.append(f"initialized a git repository in {self.root}")
        except git.NoSuchPathError as exc:
            raise VcsError(f"{self.root} does not exist") from exc
        if self.repo.working_tree_dir is None:
            raise VcsError(f"{self.repo.git_dir} is a bare repository: there is no working tree")
        self.root = Path(self.repo.working_tree_dir).resolve()
        self._task_rel = relative_to(self.task_file, self.root)
        self._plans = plan_files(self.root)
        notes += self._roll_back_leftover()
        head = self._head()
        dirty = self._dirty(head)
        if created and head is None and dirty:
            # A folder we just put under git: its files become the base, so reverting a task
            # never deletes a file that was there before agent-loop came.
            message = "Files present before agent-loop's first task"
            sha = self._commit(None, set(dirty), message)
            if sha is not None:
                self._land(None, sha, message)
            self._reset_index(sha or EMPTY_TREE, set(dirty))
            notes.append(f"committed the {len(dirty)} files already there as the starting point")
        elif dirty and not self.allow_dirty:
            raise VcsError(self._dirty_message(dirty))
        elif dirty:
            # The limit of allow_dirty: a dirty file the task edits further is committed whole,
            # the user's edit with it (an untracked one as a new file, which a revert deletes).
            notes.append(f"{len(dirty)} uncommitted file(s) stay out of task commits unless a "
                         "task edits them")
        return notes

    def uncommitted(self) -> str | None:
        """prepare()'s refusal of a dirty tree, found without changing anything (for
        --dry-run): its message, or None when the run would not refuse."""
        try:
            self._repo = _open(self.root)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return None  # the run makes the repository; nothing of the user's is in the way
        if self.repo.working_tree_dir is None or self.allow_dirty:
            return None
        self.root = Path(self.repo.working_tree_dir).resolve()
        self._task_rel = relative_to(self.task_file, self.root)
        self._plans = plan_files(self.root)
        dirty = self._dirty(self._head())
        return self._dirty_message(dirty) if dirty else None

    def _dirty(self, head: str | None) -> list[str]:
        return sorted(p for p in self._candidates(head)
                      if not (p == ".gitignore" and self._only_own_ignore_lines(head)))

    def _dirty_message(self, dirty: list[str]) -> str:
        return (f"{len(dirty)} uncommitted file(s) in {self.root} (e.g. {dirty[0]}): commit or "
                "stash them, or pass --allow-dirty to leave them out of task commits")

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
        start = self._carried()
        if start is not None:
            self._remember(dataclasses.replace(start, message=message), fresh=True)
            return Change(change_id="", base=start.head or "")
        head = self._head()
        status = self._status()
        if not status.staged:
            index_tree = self._tree(head)
        else:
            try:
                index_tree = self._git("write-tree").strip()
            except VcsError:
                index_tree = head or EMPTY_TREE  # unmerged entries: the best we can put back
        states = {p: state_of(self.root, p, self.repo.odb)
                  for p in self._candidates(head, status)}
        self._index_seen = None if status.staged or states else index_seen(self.repo.git_dir)
        self._remember(_Start(head, self._ref(), index_tree, states, self._task_rel, message),
                       fresh=True)
        return Change(change_id="", base=head or "")

    def finish(self, change: Change, message: str) -> Change:
        """Commit the task's paths; fold any commits the agent made itself into that one commit.

        Folding keeps one commit per task, so one `git revert` undoes the task, and it applies the
        same filters to the agent's commits (a `git commit -a` would have taken the task file).
        """
        start = self._started()
        quick = self._quick_finish(start, message)
        if quick is not None:
            return quick
        self._refuse_rewound(start)
        agent_subjects = ""
        if self._head() != start.head:
            agent_subjects = self._git("log", "--reverse", "--format=- %s",
                                       f"{start.head}..HEAD" if start.head else "HEAD").strip()
        touched = self._move_head_back(start)
        status = self._status()
        changed = self._changed(start, status)
        if agent_subjects:
            message += "\n\nIncludes the commits the agent made itself:\n" + agent_subjects
        # Recorded before HEAD moves, forgotten only once the index is settled: a run killed
        # in between leaves a record naming the commit (or its message on HEAD's parent), and
        # the next run keeps that commit instead of rolling it back or committing the task a
        # second time.
        start = dataclasses.replace(start, message=message, files=sorted(changed),
                                    touched=sorted(touched - changed))
        sha, new = None, set(status.untracked) & changed
        if changed:
            self._remember(start)
            sha = self._commit_here(changed, new, message)
        if sha is not None:
            self._reset_index(start.index_tree, set(start.touched))
            self._carry(start, sha, status.staged_paths)
        else:
            sha = self._commit(start.head, changed, message) if changed else None
            if sha is None:
                # What add --intent-to-add left in the index goes with the rest.
                self._reset_index(start.index_tree, touched | new)
                self._forget()
                return Change(change_id="", base=start.head or "", empty=True)
            start = dataclasses.replace(start, commit=sha)
            self._remember(start)
            self._land(start.head, sha, message)
            self._settle(start)
        return self._committed(start, sha, changed)

    def _refuse_rewound(self, start: _Start) -> None:
        """The agent moved the branch back (`git reset --hard HEAD~1`): committing now would
        record the earlier tasks' files as deleted. Nothing is committed; the run stops."""
        if self._ref() != start.ref:
            raise VcsError(f"the agent switched HEAD from {start.ref or 'a detached HEAD'} to "
                           f"{self._ref() or 'a detached HEAD'}; nothing was committed for this "
                           f"task: switch back (`git switch {(start.ref or '').split('/')[-1]}`) "
                           "and run agent-loop again")
        head = self._head()
        if start.head is None or head in (None, start.head):
            return
        if head is not None and self._ancestor(head, start.head):
            raise VcsError(f"the agent moved the branch back to {head[:12]}, so earlier "
                           f"tasks' commits (up to {start.head[:12]}) are no longer on it; "
                           "nothing was committed for this task. Get them back with "
                           f"`git reset --hard {start.head[:12]}` (`git reflog` lists every "
                           "position), then run agent-loop again")

    def missing(self, change_ids: Iterable[str]) -> set[str]:
        """Which of these task commits are no longer in the current branch's history. Once
        known whole, the history stays so while HEAD is where this run last put it: the check
        costs a process only when something else moved the branch."""
        now = self._where()
        if now == self._sound:
            return set()
        lost = missing("git", self.root, change_ids)
        if not lost:
            self._sound = now
        return lost

    def recovered(self) -> Change | None:
        """The commit an earlier run made for its last task and may not have recorded (once)."""
        found, self._recovered = self._recovered, None
        return found

    def abandon(self, change: Change) -> None:
        """Put every path the attempt changed back as it was at begin, commits included.

        Without an open attempt (abandoned already, or never begun) there is nothing to do.
        """
        start = self._start
        if start is None:
            return
        if self._missing(start):
            self._forget()  # nothing left to put the files back from: they stay as they are
            return
        touched = self._move_head_back(start)
        changed = self._changed(start)
        from_head: set[str] = set()
        back: dict[str, str] = {}
        for rel in changed:
            if rel in start.states:
                back[rel] = start.states[rel]
            elif start.head is not None and self._in_tree(start.head, rel):
                from_head.add(rel)
            else:
                back[rel] = MISSING
        # An ignored file is never the attempt's to delete, even one it force-added.
        for rel in self._ignored({r for r, state in back.items() if state == MISSING}):
            del back[rel]
        # Deletions first, deepest first: a folder that took a file's place is emptied before
        # the file returns, a symlink that took a folder's place is gone before its files do.
        for rel in sorted((r for r, state in back.items() if state == MISSING), reverse=True):
            put_back(self.root, rel, MISSING, self.repo.odb)
        for rel in sorted(r for r, state in back.items() if state != MISSING):
            put_back(self.root, rel, back[rel], self.repo.odb)
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
        """Nothing to leave: the next edits are uncommitted, in no task's commit. The record of
        an attempt that is still open (the run stopped on an error inside it) stays: the next
        run needs it to roll that attempt back."""
        if self._start is None and self._repo is not None:
            self._forget()
        if self._repo is not None:
            self._repo.close()

    # -- helpers --------------------------------------------------------------------------------
