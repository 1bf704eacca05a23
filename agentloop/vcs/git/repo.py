"""A repository as the git backend sees it: where HEAD is, the paths an attempt changed, and
commits of exactly those paths; the protocol (agentloop.vcs.git.backend) is built on it."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from agentloop import proc
from agentloop.errors import ConflictLeft, VcsError
from agentloop.files.shown import typed
from agentloop.vcs import STATE_DIR
from agentloop.vcs.git import first_look, reflog, refs
from agentloop.vcs.git.files import plain, state_of
from agentloop.vcs.git.record import Start
from agentloop.vcs.git.run import EMPTY_TREE, Git, failure
from agentloop.vcs.git.status import ARGS as STATUS_ARGS
from agentloop.vcs.git.status import Status, parse_status
from agentloop.vcs.githooks import HOOK_PATHS, found_with
from agentloop.vcs.preflight import signs

# GitPython (about 50 ms to import, and a `git version` or two) is opened when the backend
# first needs what only it reads (packed refs, a packed commit's tree, blobs of dirty files):
# a task on a clean tree never does (GitRepo.locate finds the repository).
if TYPE_CHECKING:
    import git

# A task commit: no hooks (as with commit-tree; the door's GUARD too), no gc or maintenance
# started behind us, the message kept byte for byte.
COMMIT_ARGS = ("-c", "gc.auto=0", "-c", "maintenance.auto=false",
               "commit", "--quiet", "--no-verify", "--cleanup=verbatim")


def split(out: str) -> set[str]:
    # Entries ending in "/" are nested repositories; they are never ours to commit or delete.
    return {p for p in out.split("\0") if p and not p.endswith("/")}


def open_repo(root: Path) -> git.Repo:
    """The repository, with git's objects read and written in-process (GitDB): GitPython's
    default keeps `git cat-file` processes in our process group, where a terminal's Ctrl+C
    would kill them under us. (GitPython calls GitDB deprecated for speed on huge packs; we
    read a few commits and trees a task.)"""
    # A Ctrl+C inside GitPython's constructors leaves half-built config readers whose
    # destructors print a traceback later: the signal waits until the repository is open.
    with warnings.catch_warnings(), proc.deferred():
        import git

        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return git.Repo(root, search_parent_directories=True, odbt=git.GitDB)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as error:
            # Was one a moment ago: its `.git` file, or the registration it names under
            # .git/worktrees/, changed since (an agent's `rm`, a prune, a rewritten commondir).
            raise VcsError(f"git no longer takes {root} for a repository: its `.git` "
                           "file or its worktree registration was damaged (by an agent, or "
                           "from outside)") from error


class GitRepo:
    """One repository for the git backend: the git runner, GitPython's view of it, and which
    paths are never any task's (the task file, other plans' task files, `.agent-loop/`)."""

    def __init__(self, git_: Git) -> None:
        self.git = git_
        self._repo: git.Repo | None = None
        self.task_rel: str | None = None
        self.plans: set[str] = set()   # other plans' task files: never a task's either
        self._dirs: tuple[str, str] | None = None   # the git dir and the common dir, as text
        # Every path the last `git status` listed (what `check.dirty` would say); None before
        # the first, or when it listed a nested repository (which Status leaves out).
        self.listed: list[str] | None = None
        # The first look's status, started before locate() (agentloop.vcs.git.first_look):
        # the next status() takes it, unless this repository is written to first.
        self._looked: Callable[[], str | None] | None = None
        # The repositories inside this one that the last `git status` listed (Status.nested).
        self.nested_seen: frozenset[str] = frozenset()

    @property
    def root(self) -> Path:
        """The working tree."""
        return self.git.root

    @property
    def repo(self) -> git.Repo:
        """GitPython's repository, opened on first use."""
        if self._dirs is None:
            raise VcsError("git backend used before prepare()")
        if self._repo is None:
            self._repo = open_repo(self.root)
        return self._repo

    @property
    def git_dir(self) -> Path:
        """The repository's git dir (a worktree's own, for a lane)."""
        if self._dirs is None:
            raise VcsError("git backend used before prepare()")
        return Path(self._dirs[0])

    def locate(self) -> bool:
        """Find the repository around the root with one `git rev-parse` (its working tree
        becomes the runner's folder); False when there is none. A bare repository, or a root
        inside a git dir, has no working tree for tasks: VcsError."""
        if not self.root.is_dir():
            raise VcsError(f"{self.root} does not exist")
        # Where the repository's hooks are, in the same process: the run's first lines say
        # whether its commits skip them (agentloop.vcs.githooks.hooks, a moment later). Asked
        # at the run's start when it could be (agentloop.vcs.git.first_look).
        root = self.root
        ahead = first_look.where(root)
        done = ahead or self.git.run(*first_look.WHERE, codes=None, env=first_look.WHERE_ENV,
                                     as_configured=True)
        lines = done.stdout.splitlines()
        if done.returncode != 0 and not lines:
            if "not a git repository" in done.stderr:
                return False
            raise failure(self.root, ("rev-parse",), done.stderr.strip().replace("\n", " "))
        if len(lines) != 4 + len(HOOK_PATHS) // 2 or lines[0] == "true":
            where = lines[1] if len(lines) > 1 else self.root
            raise VcsError(f"{where} is a bare repository: there is no working tree")
        # The common dir comes relative to the folder git ran in.
        self._dirs = (lines[1], os.path.normpath(os.path.join(self.root, lines[2])))
        found_with(self.root, lines[4:])
        self.git.root = Path(lines[3]).resolve()
        self.close()
        self._repo = None
        # The status asked with it, in the folder whose paths it names, stands for the first
        # look (status) if nothing runs before that look but reads.
        self._looked = first_look.status(root, Path(lines[1])) \
            if ahead is not None and self.git.root == root.resolve() else None
        return True

    def place(self, git_dir: Path, common_dir: Path) -> None:
        """Told where the repository is (a lane's worktree, whose `.git` file names its git
        dir): what locate() would ask, without a `git rev-parse`."""
        self._dirs = (str(git_dir), str(common_dir))
        self.git.root = self.root.resolve()
        self.close()
        self._repo = None

    def close(self) -> None:
        """Let GitPython go."""
        if self._repo is not None:
            self._repo.close()

    def where(self) -> tuple[str | None, str | None]:
        """(the branch HEAD names, None when detached; its commit, None when unborn). Read
        afresh every time: the user may commit while the loop pauses between tasks."""
        if self._dirs is None:
            raise VcsError("git backend used before prepare()")
        found = refs.where(*self._dirs)
        if found is not None:
            return found
        ref = None if self.repo.head.is_detached else str(self.repo.head.reference.path)
        try:
            return ref, str(self.repo.head.commit.hexsha)
        except ValueError:
            return ref, None

    def dirs(self) -> tuple[Path, Path]:
        """(this working tree's git dir, the repository's common git dir)."""
        if self._dirs is None:
            self._dirs = (str(self.repo.git_dir), str(self.repo.common_dir))
        return Path(self._dirs[0]), Path(self._dirs[1])

    def head(self) -> str | None:
        """HEAD's commit, None on an unborn branch."""
        return self.where()[1]

    def tree(self, commit: str | None) -> str:
        """The tree of `commit` (the empty tree for none): read straight from its loose object
        when it is one, as a commit just made is, else through GitPython."""
        if commit is None:
            return EMPTY_TREE
        if self._dirs is None:
            raise VcsError("git backend used before prepare()")
        return refs.tree_of(Path(self._dirs[1]), commit) or \
            str(self.repo.commit(commit).tree.hexsha)

    def ref(self) -> str | None:
        """The branch HEAD names, None when detached."""
        return self.where()[0]

    def kept_out(self, rel: str) -> bool:
        """Whether `rel` is never any task's: a task file, or agent-loop's own folder."""
        return (rel == self.task_rel or rel in self.plans or rel == STATE_DIR
                or rel.startswith(STATE_DIR + "/"))

    def status(self) -> Status:
        """What one `git status` says."""
        looked, self._looked = self._looked, None
        out = looked() if looked is not None else None
        if out is None:
            out = self.git.out(*STATUS_ARGS)
        status = parse_status(out)
        self.nested_seen = status.nested
        self.listed = None if any(e.endswith("/") for e in out.split("\0")) else \
            sorted(status.paths)
        return status

    def candidates(self, base: str | None, status: Status | None = None) -> set[str]:
        """Paths that may differ from `base`: untracked, or tracked and different."""
        if base == self.head():  # the common case: one `git status` says it all
            return {p for p in (status or self.status()).paths if not self.kept_out(p)}
        self._looked = None  # HEAD moved since: the first look is not what the tree holds
        paths = split(self.git.out("ls-files", "-z", "--others", "--exclude-standard"))
        if base is None:
            paths |= split(self.git.out("ls-files", "-z", "--cached"))
        else:
            paths |= split(self.git.out("diff", "--name-only", "-z", "--no-renames", base))
        return {p for p in paths if not self.kept_out(p)}

    def changed(self, start: Start, status: Status | None = None) -> set[str]:
        """Paths whose content differs from what they held at begin."""
        changed = set()
        for rel in self.candidates(start.head, status) | set(start.states):
            if self.kept_out(rel) or rel == start.task or rel in start.kept_out or \
                    not plain(rel):
                continue
            if rel not in start.states:
                changed.add(rel)  # clean at begin, and git now lists it: the attempt changed it
            elif state_of(self.root, rel) != start.states[rel]:
                changed.add(rel)  # already dirty at begin, and changed further since
        return changed

    def only_unindexed(self, status: Status) -> set[str]:
        """The paths the index lost (`git rm --cached`) that stand on disk as HEAD holds them:
        nothing of them changed, so no task's change; their index entries are to come back."""
        return {p for p, head in status.unindexed if state_of(self.root, p) == head}

    def build_tree(self, base: str | None, paths: set[str]) -> str:
        """The tree of `base` with `paths` taken from the working tree, via a scratch index."""
        import tempfile  # where used: off every run's way to its first agent

        with tempfile.TemporaryDirectory(dir=self.git_dir) as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self.git.out("read-tree", base or "--empty", env=env)
            # A folder where a file was: its files are paths of their own, the file goes. A
            # file where a folder was: the folder's files go first, or git refuses the file.
            # A submodule's folder is no such folder: `update-index --add` records its commit.
            folders = {p for p in paths if (self.root / p).is_dir()
                       and not (self.root / p).is_symlink()
                       and not os.path.lexists(self.root / p / ".git")}
            gone = {p for p in paths - folders if not os.path.lexists(self.root / p)}
            if folders | gone:
                self.git.out("update-index", "--force-remove", "-z", "--stdin",
                          paths=sorted(folders | gone), env=env)
            self.git.out("update-index", "--add", "--remove", "-z", "--stdin",
                      paths=sorted(paths - folders - gone), env=env)
            return self.git.out("write-tree", env=env).strip()

    def commit(self, base: str | None, paths: set[str], message: str) -> str | None:
        """A commit of `paths` on top of `base`, HEAD left alone; None when it changes nothing."""
        self._looked = None  # what the first look saw changes now
        tree = self.build_tree(base, paths)
        if tree == self.tree(base):
            return None  # e.g. the task undid the user's own uncommitted edit
        parents = ["-p", base] if base else []
        # commit-tree signs only when asked: the user's commit.gpgsign asks for every commit.
        sign = ["-S"] if signs(self.root) else []
        return self.git.out("commit-tree", *sign, tree, *parents, "-m", message).strip()

    def commit_here(self, paths: set[str], untracked: set[str], message: str) -> str | None:
        """Commit `paths` from the working tree onto HEAD with git's own `commit --only`: what
        is staged for other paths stays out and staged, the index ends up holding the commit
        for these, all in one process (new files are first made known to the index). None
        when git declines (nothing to commit after all, a case it will not do): the caller
        then builds the commit by hand."""
        self._looked = None  # what the first look saw changes now
        before = self.head()
        try:
            if untracked:
                self.git.out("add", "--intent-to-add", "--pathspec-from-file=-",
                          "--pathspec-file-nul", paths=sorted(untracked))
            self.git.out(*COMMIT_ARGS, "--only", "-m", message, "--pathspec-from-file=-",
                      "--pathspec-file-nul", paths=sorted(paths))
        except VcsError:
            return None
        after = self.head()
        return after if after != before else None

    def land(self, base: str | None, sha: str, message: str) -> None:
        """Move HEAD's branch from `base` to `sha`."""
        self._looked = None  # what the first look saw changes now
        # The old value guards against a concurrent change of the branch.
        self.git.out("update-ref", "-m", f"agent-loop: {message.splitlines()[0]}", "HEAD", sha,
                  base or "0" * 40)

    def reset_index(self, tree: str, paths: set[str]) -> None:
        """The index entries of `paths` as `tree` has them."""
        self._looked = None  # what the first look saw changes now
        if paths:
            self.git.out("reset", "-q", tree, "--pathspec-from-file=-", "--pathspec-file-nul",
                      paths=sorted(paths))

    def settle(self, start: Start) -> None:
        """The index after the task commit `start` names: its files as committed, the agent's
        others as before (finish's last step, and the next run's where a kill came first)."""
        assert start.commit is not None
        self.reset_index(start.commit, set(start.files))
        self.reset_index(start.index_tree, set(start.touched))

    def yours_since(self, old: str | None, new: str, begun_by: str) -> bool:
        """Whether the commits from `old` to `new` were all made by you beside the agent (your
        terminal, `--workplace checkout`), none by the agent: HEAD's reflog names each commit
        the agent's git made with this run's mark, or `begun_by`'s, the mark of the killed run
        whose attempt this one goes on from (agentloop.vcs.git.reflog)."""
        made = set(self.git.out("rev-list", f"{old}..{new}" if old else new).split())
        entries = self.git.out("reflog", "show", "--format=%H%x09%gs", f"-n{len(made) + 64}",
                               "HEAD", codes=(0, 128)).splitlines()
        seen = False
        for sha, _, subject in (entry.partition("\t") for entry in entries):
            if sha in made:
                if reflog.marked(subject) or reflog.marked(subject, begun_by):
                    return False
                seen = True
        return seen

    def move_head_back(self, start: Start) -> set[str]:
        """Undo commits the agent made since begin; return the paths they touched."""
        self._looked = None  # what the first look saw changes now
        head = self.head()
        if head == start.head:
            return set()
        if self.ref() != start.ref:
            raise VcsError(f"the agent switched HEAD from {start.ref or 'a detached HEAD'} to "
                           f"{self.ref() or 'a detached HEAD'}; switch back and retry")
        assert head is not None
        touched = split(self.git.out("diff", "--name-only", "-z", "--no-renames",
                                   start.head or EMPTY_TREE, head))
        if start.head is None:
            self.git.out("update-ref", "-d", "HEAD", head)
        else:
            self.git.out("update-ref", "-m", "agent-loop: set aside the agent's commits", "HEAD",
                      start.head, head)
        return touched

    def in_tree(self, commit: str, rel: str) -> bool:
        """Whether `commit` holds `rel`."""
        try:
            self.repo.commit(commit).tree / rel
        except KeyError:
            return False
        return True

    def ignored(self, paths: set[str]) -> set[str]:
        """The paths git's ignore rules match, tracked or not."""
        if not paths:
            return set()
        # It takes paths, never patterns, and refuses the literal-pathspec switch; exit
        # status 1 means none of them is ignored.
        return split(self.git.out("check-ignore", "--no-index", "-z", "--stdin",
                                paths=sorted(paths), env={"GIT_LITERAL_PATHSPECS": "0"},
                                codes=(0, 1)))

    def ancestor(self, older: str, newer: str) -> bool:
        """Whether `older` is in `newer`'s history."""
        return self.git.ancestor(older, newer)

    def refuse_unmerged(self, before: Iterable[str], files: Iterable[str] | None = None
                        ) -> None:
        """ConflictLeft when the agent left files unmerged (`files`; None: git is asked), git's
        conflict markers in them (a `git stash pop` that conflicted, or a merge it left
        stopped: said as what it is): a commit now would land the markers as the task's.
        `before`: the paths dirty as the task began (yours, unmerged then too, are never the
        agent's doing)."""
        from agentloop.vcs.git.in_the_way import left_in_checkout, unmerged

        found = sorted(set(files if files is not None else unmerged(self.git)) - set(before))
        if found:
            raise ConflictLeft(left_in_checkout(self.root, self.git_dir, found))

    def refuse_rewound(self, start: Start) -> None:
        """The agent moved the branch back (`git reset --hard HEAD~1`): committing now would
        record the earlier tasks' files as deleted. Nothing is committed; the run stops."""
        if self.ref() != start.ref:
            branch = (start.ref or "").removeprefix("refs/heads/")
            raise VcsError(f"the agent switched HEAD from {start.ref or 'a detached HEAD'} to "
                           f"{self.ref() or 'a detached HEAD'}; nothing was committed for "
                           f"this task: switch back (`git -C {typed(self.root)} switch "
                           f"{typed(branch)}`) and run agent-loop again")
        head = self.head()
        if start.head is None or head in (None, start.head):
            return
        if head is not None and self.ancestor(head, start.head):
            raise VcsError(f"the agent moved the branch back to {head[:12]}, so earlier "
                           f"tasks' commits (up to {start.head[:12]}) are no longer on it; "
                           "nothing was committed for this task. Get them back with "
                           f"`git reset --hard {start.head[:12]}` (`git reflog` lists every "
                           "position), then run agent-loop again")
