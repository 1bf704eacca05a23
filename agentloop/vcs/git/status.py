"""What one `git status` says, read for the git backend: the paths that may differ from HEAD
and whether the index still matches HEAD. One process instead of three per look (`ls-files`,
`diff`, `write-tree`): the git path's cost per task is mostly processes started."""

from __future__ import annotations

from agentloop.ondemand import dataclass_now as dataclass

# Machine-readable, every untracked file by name (never a folder for a whole new tree), no
# rename pairing (a rename is a deletion and an addition to us), no ignored files; and the
# index left as it is (a status refreshes and rewrites it otherwise), so looking at a task's
# changes before its commit (the commit-message writer's diff) keeps the short way to commit
# open (agentloop.vcs.git.quick).
ARGS = ("--no-optional-locks", "status", "--porcelain=v2", "-z", "--untracked-files=all",
        "--no-renames", "--ignored=no")


@dataclass(frozen=True)
class Status:
    """Paths that differ from HEAD in the index or the working tree, or are untracked."""

    paths: frozenset[str]
    untracked: frozenset[str]
    staged_paths: frozenset[str]    # where the index differs from HEAD
    # Paths taken out of the index but left on disk (`git rm --cached`), listed both as
    # deleted and untracked, each with HEAD's "mode:blob" of it.
    unindexed: tuple[tuple[str, str], ...] = ()
    # Paths the index holds unmerged (a conflict git left, with its markers in the file).
    unmerged: frozenset[str] = frozenset()
    # Untracked folders that hold a repository of their own (git's `? app/`), without the "/":
    # git lists none of their files (agentloop.vcs.git.nested).
    nested: frozenset[str] = frozenset()
    # Gitlinks the index holds and HEAD does not: an agent's `git add` of such a folder (an
    # "embedded repository"), or of a submodule it added.
    gitlinks_added: frozenset[str] = frozenset()

    @property
    def staged(self) -> bool:
        """Whether a tree of the index would differ from HEAD's."""
        return bool(self.staged_paths)


def parse_status(out: str) -> Status:
    """Read `git status --porcelain=v2 -z` output. Entries ending in "/" are nested
    repositories: never ours to commit or delete."""
    paths: set[str] = set()
    untracked: set[str] = set()
    staged: set[str] = set()
    heads: dict[str, str] = {}
    unmerged: set[str] = set()
    linked: set[str] = set()
    entries = iter(out.split("\0"))
    for entry in entries:
        kind = entry[:1]
        if kind == "1":  # "1 XY sub mH mI mW hH hI path"
            fields = entry.split(" ", 8)
            if fields[2].startswith("S.") and fields[1][0] == ".":
                # A submodule whose own files changed, on the commit the index records: its
                # edits are its repository's, nothing this one's tree can hold (committed as
                # a change, it would take the submodule out: agentloop.vcs.submodules).
                continue
            paths.add(fields[8])
            if fields[3] == "000000" and fields[4] == "160000":
                linked.add(fields[8])
            if fields[1][0] != ".":
                staged.add(fields[8])
            if fields[1][0] == "D":
                heads[fields[8]] = f"{fields[3]}:{fields[6]}"
        elif kind == "2":  # a rename, should git pair one after all: its old path comes next
            pair = {entry.split(" ", 9)[9], next(entries, "")}
            paths |= pair
            staged |= pair
        elif kind == "u":  # unmerged: "u XY sub m1 m2 m3 mW h1 h2 h3 path"
            unmerged.add(entry.split(" ", 10)[10])
        elif kind == "?":
            paths.add(entry[2:])
            untracked.add(entry[2:])
    paths |= unmerged
    staged |= unmerged
    nested = {p[:-1] for p in untracked if p.endswith("/")}
    paths = {p for p in paths if p and not p.endswith("/")}
    # An unmerged or staged nested repository still means the index is not HEAD's tree.
    return Status(frozenset(paths), frozenset(untracked & paths), frozenset(staged - {""}),
                  tuple(sorted((p, h) for p, h in heads.items() if p in untracked)),
                  frozenset(unmerged), frozenset(nested), frozenset(linked))
