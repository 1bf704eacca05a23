"""What a run makes of the open-attempt record an earlier run left (agentloop.vcs.git.record): the
commit it finished is kept; an attempt whose agent had committed goes on, its commits and files
as they are, when its task begins again (its agent had not finished: rolling back would throw
away work it recorded, and running the task again would pay for it twice); any other attempt it
never finished is rolled back, after its files are saved in a commit under SAVED_REF: a
roll-back nobody asked for must not be the only copy of anything."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from agentloop.errors import VcsError
from agentloop.vcs.git import aside
from agentloop.vcs.git.files import MISSING, put_back
from agentloop.vcs.git.record import AttemptRecord, Start
from agentloop.vcs.git.repo import GitRepo, split
from agentloop.vcs.git.run import EMPTY_TREE
from agentloop.vcs.protocol import Change

STOPPED = "an earlier run stopped inside a task"


@dataclass(frozen=True)
class Leftover:
    """What an earlier run's record calls for: notes to show, a finished commit to hand over,
    or an attempt (`undo`) the caller rolls back, and the note to add once it has."""

    notes: list[str] = field(default_factory=list)
    recovered: Change | None = None
    undo: Start | None = None
    # An attempt whose agent committed: the next begin of its task goes on from it (the
    # backend's begin), anything else rolls it back (examine again, with resume=False).
    resume: Start | None = None


def examine(repo: GitRepo, record: AttemptRecord, lane: bool = False,
            resume: bool = True, keep_or_stop: bool = False) -> Leftover:
    """An earlier run died inside a task: keep the commit it made; an attempt whose agent
    committed on its branch goes on (`resume`: the caller decides once it knows which task
    begins); else have its edits undone. Without `resume`, in a `lane` (only agents work
    there) commits made on its branch since the attempt began are the attempt's: they are
    undone with it, and kept aside like its files. `keep_or_stop`: files no copy could be
    kept of stop the run in your checkout too (a run that may not leave them as yours:
    no --allow-dirty), as they always do in a lane (_roll_back_or_leave)."""
    try:
        leftover = record.read()
    except ValueError:
        record.forget()
        return Leftover([f"{STOPPED}, but its record could not be read; its files are left as "
                         "they are"])
    if leftover is None:
        return Leftover()
    head = repo.head()
    if leftover.commit is None and ours(repo, leftover, head):
        leftover = dataclasses.replace(leftover, commit=head)  # died before noting the sha
    if leftover.commit is not None and head == leftover.commit:
        return _keep_the_commit(repo, leftover, head)
    head, leftover = _agent_commits_back(repo, leftover, head)
    if resume and leftover.commit is None and head != leftover.head and \
            _agent_commits(repo, leftover, head) and not missing_objects(repo, leftover):
        return _go_on(repo, leftover, head)
    if lane and head != leftover.head and _agent_commits(repo, leftover, head):
        head = _set_commits_aside(repo, leftover, head)
    elif lane and _rewritten(repo, leftover, head):
        # The agent rewrote the lane's history (an amend of your commit, a squash, a rebase):
        # no task may build on a base your branch does not hold, so the rewrite is undone with
        # the attempt, its files kept aside like the attempt's.
        rewrite, head = head, _set_commits_aside(repo, leftover, head)
        found = _roll_back_or_leave(repo, record, leftover, head, lane, keep_or_stop)
        assert rewrite is not None and leftover.head is not None
        line = (f"the agent had rewritten its lane's history to {rewrite[:12]}, off the commit "
                f"{leftover.head[:12]} its task began on: the lane is back on that commit")
        return dataclasses.replace(found, notes=[f"{line}; {n}" for n in found.notes])
    return _roll_back_or_leave(repo, record, leftover, head, lane, keep_or_stop)


def _keep_the_commit(repo: GitRepo, leftover: Start, head: str) -> Leftover:
    """It died after finish moved HEAD to the task's commit, before the runner saved the task
    as done. Rolling back would throw finished work away and committing again would make a
    second commit for the task: keep the commit and settle the index as finish would have.
    The runner begins the task again and finds its work done. The record stays until the next
    begin or close: killed again before the runner has saved the task, the run after still
    finds the commit."""
    repo.settle(leftover)
    files = leftover.files or sorted(split(repo.git.out(
        "diff-tree", "-r", "--root", "--name-only", "-z", "--no-renames",
        "--no-commit-id", head)))  # committed the short way: no list kept
    return Leftover([f"an earlier run stopped right after committing {head[:12]}; the "
                     "commit is kept"],
                    recovered=Change(change_id=head, commit_id=head,
                                     base=leftover.head or "", files=tuple(files)))


def _agent_commits_back(repo: GitRepo, leftover: Start,
                        head: str | None) -> tuple[str | None, Start]:
    """Killed inside finish after HEAD moved back over the agent's commits, before the task's
    commit was on the branch: HEAD goes where they were (the files are as then). The HEAD and
    the attempt to go on with (unchanged when that is not what happened)."""
    if leftover.agent_head is None or head != leftover.head or \
            not _agent_commits(repo, leftover, leftover.agent_head):
        return head, leftover
    assert head is not None
    repo.git.out("update-ref", "-m", "agent-loop: the agent's commits back after a kill",
                 "HEAD", leftover.agent_head, head)
    # A task commit built but never put on the branch holds nothing more than they and the
    # files do: the task goes on, and its finish folds them again.
    return leftover.agent_head, dataclasses.replace(leftover, commit=None)


def _go_on(repo: GitRepo, leftover: Start, head: str | None) -> Leftover:
    """The agent committed, so it was at work and had not finished. Its commits and files
    stay; the same task begun again takes them up, and finish folds the commits into the
    task's one commit. In the user's checkout the commits since are taken as the attempt's,
    as finish takes the ones made while the agent runs."""
    assert head is not None and leftover.head is not None
    count = len(repo.git.out("rev-list", f"{leftover.head}..{head}").split())
    return Leftover([f"{STOPPED} after its agent made {count} commit(s); they and its "
                     "files are kept, and the task goes on from them"], resume=leftover)


def _set_commits_aside(repo: GitRepo, leftover: Start, head: str | None) -> str:
    """In a lane: HEAD goes back to where the attempt began, the files staying, so the agent's
    commits become the attempt's edits, saved aside and rolled back with the rest of it."""
    assert leftover.head is not None and head is not None
    repo.git.out("update-ref", "-m", "agent-loop: set aside a killed attempt's commits",
                 "HEAD", leftover.head, head)
    return leftover.head


def _roll_back_or_leave(repo: GitRepo, record: AttemptRecord, leftover: Start,
                        head: str | None, lane: bool = False, stop: bool = False
                        ) -> Leftover:
    """An unfinished attempt: have it rolled back once its files are saved aside, or, when
    that cannot be done safely, leave its files as they are and say why. In a `lane`, files
    no copy could be kept of stop the run before any agent (VcsError), the record kept for
    the next: left, they would pass for yours, and a finished agent's work be paid again; in
    your checkout too with `stop` (the run would refuse them as your uncommitted files)."""
    if head != leftover.head:
        # Commits were made since; they may be the user's, so nothing is undone.
        record.forget()
        return Leftover([f"{STOPPED}; HEAD has moved since, so its files are left as they are"])
    if missing_objects(repo, leftover):
        record.forget()
        return Leftover([f"{STOPPED}, but the copies kept to roll it back are gone (git gc?); "
                         "its files are left as they are"])
    # Whatever the attempt left may be all there is of it, and the user's own edits since
    # the run died look just the same: no roll-back without a copy of what it undoes.
    try:
        saved = _save_aside(repo, leftover)
    except VcsError as exc:
        if lane or stop:
            raise unkept(repo.root, exc, lane) from None
        record.forget()
        return Leftover([f"{STOPPED}, and keeping a copy of its files failed ({exc}); they are "
                         "left as they are"])
    note = "rolled back the unfinished task attempt an earlier run left behind"
    if saved:
        note += f"; its files are kept in commit {saved[:12]} (`git show {saved[:12]}`)"
    return Leftover([note], undo=leftover)


def unkept(root: Path, exc: VcsError, lane: bool = False) -> VcsError:
    """The stop on an unfinished attempt's files no copy could be kept of (for `exc`)."""
    where = f"in its lane {root}" if lane else f"in {root}"
    mine = "" if lane else " (--allow-dirty leaves its files as they are, as yours)"
    return VcsError(f"{STOPPED} {where}, and no copy of its files could be kept{mine}: {exc}")


def rolled_back(repo: GitRepo, record: AttemptRecord) -> Start | None:
    """The attempt `examine` would keep a copy of and roll back, found without changing
    anything (for --dry-run, whose word on a dirty tree must be the run's); None for none."""
    try:
        leftover = record.read()
    except ValueError:
        return None
    head = repo.head()
    if leftover is None or head is None or head != leftover.head or head == leftover.commit:
        return None
    if leftover.agent_head is not None and _agent_commits(repo, leftover, leftover.agent_head):
        return None  # examine puts the agent's commits back: nothing is rolled back
    return None if missing_objects(repo, leftover) else leftover


def keepable(repo: GitRepo, start: Start) -> None:
    """VcsError, as aside.keep would raise it, when no copy of the files rolling back `start`
    undoes could be kept (a required filter of yours failing on one), nothing written: each is
    hashed through your filters as keeping it would, without storing it."""
    files = [rel for rel in sorted(repo.changed(start)) if "\n" not in rel
             and (repo.root / rel).is_file() and not (repo.root / rel).is_symlink()]
    if files:
        repo.git.out("hash-object", "--stdin-paths", input="".join(f"{f}\n" for f in files))


def missing_objects(repo: GitRepo, start: Start) -> bool:
    """Whether an object the roll-back needs is gone (say, `git gc` pruned a stored blob)."""
    # git knows the empty tree without storing it.
    shas = [*([start.index_tree] if start.index_tree != EMPTY_TREE else []),
            *([start.head] if start.head else [])]
    shas += [s.split(":", 1)[1] for s in start.states.values() if s.startswith("100")]
    from gitdb.exc import BadName, BadObject  # GitPython's, imported when first needed
    from gitdb.util import hex_to_bin

    for sha in shas:
        try:
            repo.repo.odb.info(hex_to_bin(sha))
        except (ValueError, BadName, BadObject):
            return True
    return False


def resumable(repo: GitRepo, record: AttemptRecord) -> Start | None:
    """The attempt `examine` would have its task go on from, found without changing anything
    (for --dry-run, whose refusal of a dirty tree must be the run's)."""
    try:
        leftover = record.read()
    except ValueError:
        return None
    head = repo.head()
    if leftover is None or leftover.commit is not None or ours(repo, leftover, head):
        return None
    if leftover.agent_head is not None and head == leftover.head:
        head = leftover.agent_head  # examine puts the agent's commits back first
    if head != leftover.head and _agent_commits(repo, leftover, head) and \
            not missing_objects(repo, leftover):
        return leftover
    return None


def continues(repo: GitRepo, start: Start) -> bool:
    """Whether the attempt `start` can still go on: its branch moved on from where it began."""
    head = repo.head()
    return head != start.head and _agent_commits(repo, start, head)


def _agent_commits(repo: GitRepo, start: Start, head: str | None) -> bool:
    """Whether HEAD moved on from `start` along its own branch (commits on top, nothing lost)."""
    return (head is not None and start.head is not None and repo.ref() == start.ref
            and repo.ancestor(start.head, head))


def _rewritten(repo: GitRepo, start: Start, head: str | None) -> bool:
    """Whether HEAD, on the attempt's own branch, no longer holds the commit it began on."""
    return (head is not None and start.head is not None and head != start.head
            and repo.ref() == start.ref and not repo.ancestor(start.head, head)
            and not missing_objects(repo, start))


def ours(repo: GitRepo, start: Start, head: str | None) -> bool:
    """Whether `head` is the commit finish was making for `start` when its run died."""
    if start.message is None or head is None or head == start.head:
        return False
    from gitdb.exc import BadName, BadObject  # GitPython's, imported when first needed

    try:
        commit = repo.repo.commit(head)
        parents = [p.hexsha for p in commit.parents]
    except (ValueError, BadName, BadObject):  # not a commit we can read: not ours to keep
        return False
    return (parents == ([start.head] if start.head else [])
            and str(commit.message).rstrip("\n") == start.message.rstrip("\n"))


def _save_aside(repo: GitRepo, start: Start) -> str | None:
    """Commit what a roll-back would undo under SAVED_REF; None when there is nothing."""
    kept = aside.keep(repo, start, "an unfinished task attempt, rolled back by the next run")
    return kept[0] if kept is not None else None


def roll_back(repo: GitRepo, start: Start) -> None:
    """Put every path the attempt `start` began changed back as it was, commits included."""
    touched = repo.move_head_back(start)
    changed = repo.changed(start)
    from_head: set[str] = set()
    back: dict[str, str] = {}
    for rel in changed:
        if rel in start.states:
            back[rel] = start.states[rel]
        elif start.head is not None and repo.in_tree(start.head, rel):
            from_head.add(rel)
        else:
            back[rel] = MISSING
    # An ignored file is never the attempt's to delete, even one it force-added.
    for rel in repo.ignored({r for r, state in back.items() if state == MISSING}):
        del back[rel]
    # Deletions first, deepest first: a folder that took a file's place is emptied before
    # the file returns, a symlink that took a folder's place is gone before its files do.
    for rel in sorted((r for r, state in back.items() if state == MISSING), reverse=True):
        put_back(repo.root, rel, MISSING, repo.repo.odb)
    for rel in sorted(r for r, state in back.items() if state != MISSING):
        put_back(repo.root, rel, back[rel], repo.repo.odb)
    if from_head:
        repo.git.out("restore", f"--source={start.head}", "--worktree",
                     "--pathspec-from-file=-", "--pathspec-file-nul", paths=sorted(from_head))
    staged = split(repo.git.out("diff-index", "--cached", "--name-only", "-z",
                                start.index_tree))
    repo.reset_index(start.index_tree, {p for p in changed | touched | staged
                                        if not repo.kept_out(p)})
