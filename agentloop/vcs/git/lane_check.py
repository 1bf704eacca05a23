"""git: a lane step's check of what its agent did (LaneGit.check), trusting nothing the agent
could touch: the record of the lane as the step began, the stash entries it made, a stop that
ends the group, the step's commit with its look at your checkout beside it, your checkout's HEAD
it moved, and what is said of it. The lane's state is read and written through lane_state."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from functools import partial
from typing import Callable, NoReturn

from agentloop.vcs.breach import Breach, Kind, LaneBreach
from agentloop.vcs.git import planted, reflog, stash
from agentloop.vcs.git.agent_in_checkout import agent_moved_head
from agentloop.vcs.git.backend import GitVcs
from agentloop.vcs.git.lane_as_recorded import check_git_lane
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.lane_state import LaneState, Stamps
from agentloop.vcs.git.mainline import GitMainLine
from agentloop.vcs.git.run import Git
from agentloop.vcs.git.your_checkout import Listed, dirty, dirty_beside, stamp, written
from agentloop.vcs.protocol import Change

# The step's commit in the lane, given what to call once its first git command has started.
Commit = Callable[[Callable[[], None]], Change]


def _raise(exc: Exception) -> Listed:
    raise exc


def _nothing() -> None:
    pass


def step_record(state: LaneState, seen: Stamps | None, work: GitVcs, branch: str,
                main: GitMainLine) -> GitLaneRecord:
    """What the lane looks like as its step begins (`seen`: your uncommitted paths as the last
    check saw them, if it did)."""
    logs = reflog.logs(main.git_dir, main.common_dir, main.ref)
    return GitLaneRecord(work.root, branch, work.tree.head(), main.root, main.ref,
                         tuple(state.landed), seen if seen is not None else main.stamps(),
                         work.tree.dirs(), _main_at(state, main),
                         tuple(zip(logs, reflog.ends(logs))), planted.look(main.common_dir),
                         work.index_at_begin)


def _main_at(state: LaneState, main: GitMainLine) -> tuple[str, ...]:
    """The main line's commit now, which the step's check finds it still holds, then the
    commit a landing beside the step moves it to (read from files: no process here, but
    where they cannot tell); none when the branch is gone (its landing says so)."""
    tip = main.tip_now() or main.git.sha(main.ref)
    if tip is None:
        return ()
    pending = state.beside
    return (tip, pending.done.change_id) if pending is not None else (tip,)


def check(state: LaneState, main: GitMainLine, git: Git, branch: str,
          record: GitLaneRecord | None, commit: Commit | None,
          unlocked: Callable[[], str | None],
          stopped: Callable[..., LaneBreach]) -> Change | None:
    """LaneGit.check: LaneBreach when the agent did something outside its task that stops the
    group; what only needs saying is said, or goes as the note of the commit `commit` made.
    `unlocked`: the locks the agent left in the lane removed, the line that says so;
    `stopped`: the stop for a breach (whether the step's agent had finished)."""
    state.not_looked()
    before = state.take_stash()
    said = [_stashed(git, main, branch, before), _planted(main, record), unlocked()]
    breach = check_git_lane(record) if record is not None else None
    if breach is not None and breach.stops:
        _stop(main, record, breach, said, partial(stopped, finished=commit is not None))
    done, now = None, None
    if breach is None and record is not None and record.head:
        done, seen = _commit_looking(main, commit)
        now = main.yours(seen.paths)
        state.looked_at(now, {p: stamp(main.root / p) for p in now})
        breach = written(record.main_root, record.checkout, now, seen)
    elif commit is not None:
        done = commit(_nothing)
    if record is not None:
        said.append(_moved_head(main, record, now, before))
    return _said(main, breach, said, done)


def _stashed(git: Git, main: GitMainLine, branch: str, before: str | None) -> str | None:
    """The entries the agent's `git stash` put in the stash list your checkout shares since
    its newest was `before`, moved out of it; the line that says so."""
    kept = stash.take_out(git, main.common_dir, branch, before)
    if not kept:
        return None
    return (f"the agent ran `git stash` in its lane {git.root}: what it set aside is not "
            f"in this task's change, and its {len(kept)} "
            f"entr{'y' if len(kept) == 1 else 'ies'} left the stash list your checkout "
            f"shares (`git stash list`) for {', '.join(kept)}; `git stash apply {kept[0]}` "
            "brings it back")


def _planted(main: GitMainLine, record: GitLaneRecord | None) -> str | None:
    """What changed in your repository's config or hooks folder while the agent ran
    (agentloop.vcs.git.planted): said, kept with the step's commit; no process."""
    if record is None or record.settings is None:
        return None
    found = planted.changed(main.common_dir, main.root, record.settings)
    return found.text() if found is not None else None


def _stop(main: GitMainLine, record: GitLaneRecord | None, breach: Breach,
          said: list[str | None], stop: Callable[[Breach], LaneBreach]) -> NoReturn:
    """The group stops: what was said so far said at once, then the LaneBreach `stop` makes
    of the breach."""
    if breach.kind in (Kind.MAIN_REWOUND, Kind.AGENT_MOVED_MAIN) and record is not None:
        # A `reset --hard` takes your uncommitted edits with it: said in the stop.
        lost = written(record.main_root, record.checkout, dirty(main.git))
        if lost is not None:
            breach = dataclasses.replace(  # the branch's repair the last command
                breach, line=f"{breach.line}; {lost.line}",
                commands=lost.commands + breach.commands)
    for line in said:
        if line:
            main.on_wait(line)
    raise stop(breach)


def _commit_looking(main: GitMainLine, commit: Commit | None) -> tuple[Change | None, Listed]:
    """The step's commit, and what the user has uncommitted now: one look for this step's
    check and the next step's record (the landing in between only writes paths nobody had
    dirty). The look is a `git status` of another working tree than the lane's `add` and
    `commit`: it runs beside them, not after them, started once the `add` has (a start holds
    every thread of ours until its child runs: the add goes first)."""
    looks: list[Callable[[], Listed]] = []

    def look_beside() -> None:
        try:
            looks.append(dirty_beside(main.git))
        except Exception as exc:  # noqa: BLE001 - said once its answer is asked
            looks.append(partial(_raise, exc))
    try:
        done = commit(look_beside) if commit is not None else None
    except BaseException:
        for look in looks:  # waited for, its answer dropped: the stop goes on up
            with contextlib.suppress(Exception):
                look()
        raise
    return done, looks[0]() if looks else Listed(dirty(main.git))


def _moved_head(main: GitMainLine, record: GitLaneRecord, now: list[str] | None,
                stash_before: str | None) -> str | None:
    """What says the agent moved your checkout's HEAD (agent_moved_head), if it did."""
    root, left = record.main_root, set(now or ())
    # Files of yours the look found written back as committed: what its reset did.
    reverted = tuple(p for p in record.checkout if now is not None and p not in left
                     and os.path.lexists(root / p)
                     and stamp(root / p) != record.checkout[p])
    moved = agent_moved_head(record, (main.git_dir, main.common_dir),
                             stash_before is not None and
                             stash.top(main.common_dir) != stash_before, reverted)
    return moved.text() if moved is not None else None


def _said(main: GitMainLine, breach: Breach | None, said: list[str | None],
          done: Change | None) -> Change | None:
    """What the check found, said: as the note of the commit it made (its task's record keeps
    it, for the closing lines and `--status`), else at once; a write to your checkout is always
    said at once, as found (the agent's or yours, time alone cannot tell: you may be editing
    beside the run), never kept in a task's record."""
    if breach is not None and breach.kind is Kind.CHECKOUT_WRITTEN:
        main.on_wait(breach.text())
    elif breach is not None:
        said.append(breach.text())
    lines = [line for line in said if line]
    if lines and done is not None:
        note = "; ".join(([done.note] if done.note else []) + lines)
        return dataclasses.replace(done, note=note)
    for line in lines:
        main.on_wait(line)
    return done
