"""The git backend's careful way to commit a task: `git status`, then a commit of exactly the paths
the task changed, for when the short way (agentloop.vcs.git.quick) cannot be sure that `git add -A`
takes only the task's.

It is the way for every task whose tree was not clean at begin, whose agent touched the index or
moved HEAD, or whose `git add -A` took what a task commit never holds (quick.stage_all): the
agent's own commits are folded into the task's one commit (one `git revert` undoes the task,
and the same filters apply to them), yours made beside it and your branch's that it brought into
a lane stay out; the files of the repositories an agent made inside yours go in as plain files
(agentloop.vcs.git.nested); an uncommitted file of yours the agent took is said, never counted as
the task's. The open attempt's record is written before HEAD moves (the backend's `remember`), so a
run killed in between finds the commit instead of making it twice.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

from agentloop.ondemand import dataclass
from agentloop.vcs.git.repo import GitRepo, split
from agentloop.vcs.git.your_checkout import gone_as

if TYPE_CHECKING:
    from agentloop.vcs.git.quick import NextBegin
    from agentloop.vcs.git.record import Start
    from agentloop.vcs.git.status import Status


@dataclass(frozen=True)
class Finished:
    """What the careful way did, for the backend to end its finish with: the task's commit `sha`
    of `files` for `start` (None: nothing changed, the attempt forgotten already), whether the
    index now holds that commit's tree and nothing else (its file worth watching:
    quick.index_seen), and the line to say about it ("" for none)."""

    start: Start
    sha: str | None
    files: frozenset[str]
    watch_index: bool
    note: str


def finish(tree: GitRepo, start: Start, message: str, *, lane: bool,
           mainline: Callable[[], str] | None, yours_nested: set[str],
           remember: Callable[[Start], None], forget: Callable[[], None],
           next_begin: NextBegin) -> Finished:
    """Commit the task's paths, the agent's commits folded in. `lane`: the worktree is a lane's
    (only agents commit there); `mainline`: that lane's main line, read when asked;
    `yours_nested`: the repositories inside this one that are not an agent's; `remember` and
    `forget` keep the open attempt's record; `next_begin` is told what the next begin finds."""
    tree.refuse_rewound(start)
    if not lane and tree.head() != start.head:
        # Asked while the agent's commits are still where it left them (a lane's check
        # asked already, and stopped its group).
        tree.refuse_unmerged(start.states)
    start, agent_subjects = _agents_commits(tree, start, lane, mainline, remember)
    touched = tree.move_head_back(start)
    status, made, inner = with_nested(tree, tree.status(), yours_nested)
    # A repository's gitlink the agent's `git add` staged, left out (one of yours, or one
    # with no file to take): its index entry goes back as the task began. One whose files
    # are taken gives way to theirs as the index takes the commit's.
    touched = (touched | status.gitlinks_added) - {
        g for g in status.gitlinks_added if any(f.startswith(g + "/") for f in inner)}
    if status.unmerged:
        tree.refuse_unmerged(start.states, status.unmerged)
    changed = tree.changed(start, status)
    # The agent's `git rm --cached`: the file is on disk as it was, only the index lost it
    # (the commit would hold it unchanged): no change of the task's, its entry put back.
    same = tree.only_unindexed(status) & changed if status.unindexed else set()
    changed -= same
    touched |= same
    # Uncommitted at begin and listed by git no longer: the agent's `reset --hard`, `stash`,
    # `clean` or `rm` took your edit or file. Nothing of it is in the commit: said, not
    # counted as the task's.
    lost = sorted(p for p in changed if p in start.states and p not in status.paths)
    changed -= set(lost)
    if agent_subjects:
        message += "\n\nIncludes the commits the agent made itself:\n" + agent_subjects
    # Recorded before HEAD moves, forgotten only once the index is settled: a run killed
    # in between leaves a record naming the commit (or its message on HEAD's parent), and
    # the next run keeps that commit instead of rolling it back or committing the task a
    # second time.
    start = dataclasses.replace(start, message=message, files=sorted(changed),
                                touched=sorted(touched - changed))
    start, sha, watch = _commit(tree, start, message, status, changed, touched, remember,
                                forget, next_begin)
    note = ""
    if sha is not None and inner & changed:
        from agentloop.vcs.git import nested

        note = nested.said(made, tree.root, lane)
    if lost:
        # Said first, beside the line above: your work gone, then where the agent's files went.
        said = ", ".join(p + gone_as(tree.root, p) for p in lost[:5])
        note = "; ".join(filter(None, (
            f"{said}: what you had uncommitted there is gone (the agent's doing, or yours) "
            "and not in this task's change", note)))
    return Finished(start, sha, frozenset(changed) if sha is not None else frozenset(), watch,
                    note)


def with_nested(tree: GitRepo, status: Status, yours: set[str]
                ) -> tuple[Status, set[str], set[str]]:
    """`status` with the files of the repositories an agent made inside this one among its
    untracked paths (agentloop.vcs.git.nested), those repositories and those files; `yours`
    (and every other repository that was there before an agent ran) stay out."""
    linked = set(status.gitlinks_added)
    if linked:
        # The agent's `git add` of such a folder records a gitlink to a commit that only
        # the folder holds (gone with a lane): never a task's. A submodule it added
        # (`git submodule add`: .gitmodules names it) stays one.
        from agentloop.vcs.submodule_folders import paths as submodules

        linked -= set(submodules(tree.root))
        status = dataclasses.replace(status, paths=status.paths - linked,
                                     gitlinks_added=frozenset(linked))
    made = (set(status.nested) | linked) - yours
    if not made:
        return status, set(), set()
    from agentloop.vcs.git.nested import files_in

    files, repos = files_in(tree.git, made, tree.git_dir)
    files = {f for f in files if not tree.kept_out(f)}
    return dataclasses.replace(status, paths=status.paths | files,
                               untracked=status.untracked | files), repos, files


def _agents_commits(tree: GitRepo, start: Start, lane: bool,
                    mainline: Callable[[], str] | None, remember: Callable[[Start], None]
                    ) -> tuple[Start, str]:
    """The commits on the branch since the task began: in your checkout one of yours moves
    the start past it (_after_yours); the agent's are recorded (agent_head), to be folded
    into the task's commit, and listed, a line each, for its message ("" for none)."""
    head = tree.head()
    # In your checkout (never in a lane, where only agents work) a commit may be yours.
    if head is not None and head != start.head and not lane and \
            tree.yours_since(start.head, head, start.mark):
        start = _after_yours(tree, start, head, remember)
    elif head is not None and head != start.head and mainline is not None:
        start = _after_main(tree, start, head, mainline, remember)
    if head == start.head:
        return start, ""
    agent_subjects = tree.git.out("log", "--reverse", "--format=- %s",
                                  f"{start.head}..HEAD" if start.head else "HEAD").strip()
    start = dataclasses.replace(start, agent_head=head)
    remember(start)
    return start, agent_subjects


def _after_yours(tree: GitRepo, start: Start, head: str, remember: Callable[[Start], None]
                 ) -> Start:
    """The task's start moved up to the commits you made beside the agent (`head`): they
    stay yours, as you made them, and the task's commit goes on top of them."""
    staged = start.index_tree != tree.tree(start.head)
    moved = dataclasses.replace(start, head=head,
                                index_tree=start.index_tree if staged else tree.tree(head))
    remember(moved)
    return moved


def _after_main(tree: GitRepo, start: Start, head: str, mainline: Callable[[], str],
                remember: Callable[[Start], None]) -> Start:
    """In a lane whose agent brought your branch in since the task began (its `git merge
    main`, `git pull --rebase . main`, `git reset --keep main`): the task's start moved up
    to the newest commit of your branch that HEAD holds, so the task's commit holds its
    own change only. Folded in, those commits (another group's landings, yours) would be
    the task's change too, and its landing would meet whatever came after them on your
    branch as a conflict, or put back what a revert there took out.

    Only when nothing of your branch was undone on the way: the start stays where it was
    when the agent's commits since that commit change a path your branch changed since the
    task began (its `git merge -X ours main`, a conflict resolved keeping the lane's side),
    so the landing meets it as a conflict instead of overwriting the other group's work.
    Any failure to tell (your branch renamed or gone) keeps the start too."""
    ref = mainline()
    if start.head is None or not ref.startswith("refs/heads/"):
        return start  # never HEAD: in the lane that names the lane's own commit
    done = tree.git.run("merge-base", head, ref, codes=None)
    base = done.stdout.strip()
    if done.returncode != 0 or not base or base == start.head or \
            not tree.ancestor(start.head, base):
        return start
    theirs = split(tree.git.out("diff-tree", "--no-commit-id", "--name-only", "-r", "-z",
                                start.head, base))
    if theirs and base != head and theirs & split(tree.git.out(
            "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", base, head)):
        return start
    return _after_yours(tree, start, base, remember)


def _commit(tree: GitRepo, start: Start, message: str, status: Status, changed: set[str],
            touched: set[str], remember: Callable[[Start], None], forget: Callable[[], None],
            next_begin: NextBegin) -> tuple[Start, str | None, bool]:
    """The commit, its record written before HEAD moves: in the index where git can
    (commit_here), else made aside and landed; (the start, the commit or None when nothing
    changed, whether the index file is worth watching from here)."""
    sha, new = None, set(status.untracked) & changed
    if changed:
        remember(start)
        sha = tree.commit_here(changed, new, message)
    if sha is not None:
        tree.reset_index(start.index_tree, set(start.touched))
        return start, sha, next_begin.foresee(tree, start, sha, status.staged_paths)
    sha = tree.commit(start.head, changed, message) if changed else None
    if sha is None:
        # What add --intent-to-add left in the index goes with the rest.
        tree.reset_index(start.index_tree, touched | new)
        forget()
        return start, None, False
    start = dataclasses.replace(start, commit=sha)
    remember(start)
    tree.land(start.head, sha, message)
    tree.settle(start)
    return start, sha, False
