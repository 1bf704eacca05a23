"""jj: a lane step's check of what its agent did outside its task (agentloop.vcs.breach says
why and how for both backends): the lane's workspace removed or forgotten, an operation undone or
restored, a change the lane landed gone from the main line or stripped of its description,
against what agent-loop recorded after the lane's last step (JjLaneRecord)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING

from agentloop.ondemand import dataclass
from agentloop.vcs.breach import Breach, Kind

if TYPE_CHECKING:
    from agentloop.vcs.jj.oplog import Operation
    from agentloop.vcs.jj.run import Jj


@dataclass(frozen=True)
class JjLaneRecord:
    """What agent-loop recorded about a jj lane after its last step."""

    lane: Path                   # the lane's workspace
    main_root: Path              # the user's workspace
    operation: str               # the repository's operation then
    landed: tuple[str, ...] = ()  # change ids this lane landed
    stamp: str | None = None     # its op heads then, read from files (agentloop.vcs.jj.run)
    # The changes the task's own stood on (its parents) that this lane did not land: an
    # earlier group's task, or your own change, which the agent must not drop either.
    stood_on: tuple[str, ...] = ()


# How jj describes an operation that undid others (`jj undo`, `jj op restore`, `jj op revert`,
# across the versions that named them so), and the command that made it.
UNDOING = {"undo": "jj undo", "restore to operation": "jj op restore",
           "revert operation": "jj op revert"}


def check_jj_lane(record: JjLaneRecord, revived: frozenset[str] = frozenset()
                  ) -> Breach | None:
    """The first thing the agent did outside its task (an undone or restored operation, a
    landed change gone or stripped of its description), or None. `revived`: forget operations
    the run reverted to bring a lane's workspace back (agentloop.vcs.jj.revive), no undo."""
    from agentloop.vcs.jj.run import op_head

    gone = _workspace_gone(record.lane)
    if gone is not None:
        return gone
    if record.stamp is not None and op_head(record.main_root) == record.stamp:
        return None  # no jj command ran since the step began: nothing was undone or lost
    return recheck_jj_lane(record, revived)


def recheck_jj_lane(record: JjLaneRecord, revived: frozenset[str] = frozenset()
                    ) -> Breach | None:
    """check_jj_lane from the operations since the step began, the lane's workspace not
    looked at (read again once every lane has ended, the lane closed: LaneBreach.again). A
    landed change lost, or an undo that takes back more than the lane's own step, is a breach
    of the main line every lane lands on (Breach.everywhere): no other lane lands after it."""
    from agentloop.vcs.jj.run import Jj

    jj = Jj(record.main_root)
    ops = _since(jj, record.operation)
    undone = _undone(jj, ops, revived, record.lane.name)
    if undone is not None:
        return undone
    lost = _lost(jj, record, ops)
    return None if lost is None else dataclasses.replace(lost, everywhere=True)


def _workspace_gone(lane: Path) -> Breach | None:
    """The lane's folder removed, or only its .jj folder; None when both are there."""
    if lane.is_dir() and not (lane / ".jj").is_dir():
        return jj_removed(lane)
    if not lane.is_dir():
        return Breach(Kind.LANE_GONE, f"the lane's workspace {lane} was removed from outside "
                      "(its changes stay in the repository)",
                      ("jj workspace list", "jj log"))
    return None


def _undone(jj: Jj, ops: list[Operation], revived: frozenset[str], lane: str
            ) -> Breach | None:
    """The newest of `ops` that undid or restored others, unless the run's own revival."""
    for undo in ops:
        op, description = undo.id, undo.description
        command = next((c for d, c in UNDOING.items() if description.startswith(d)), None)
        if command is not None and not any(r in description for r in revived):
            # The operation ids jj writes in the description are 128 hex digits: shortened.
            said = re.sub(r"\b([0-9a-f]{12})[0-9a-f]{20,}\b", r"\1", description)
            repair, beyond = _take_back(jj, ops, undo, lane)
            return Breach(Kind.OPERATION_UNDONE, f"`{command}` ran while the lane's agent worked "
                          f"(operation {op[:12]}: {said}), by the agent or by you; jj's "
                          "operation log is the repository's, so it undid work of agent-loop's "
                          "or another lane's; nothing of this step is landed",
                          repair, everywhere=beyond)
    return None


def _lost(jj: Jj, record: JjLaneRecord, ops: list[Operation]) -> Breach | None:
    """A change the lane landed gone from the main line or stripped of its description, or
    one its task stood on abandoned, since `ops` began; not one you took back yourself."""
    from agentloop.vcs.jj.takenback import taken_back
    from agentloop.vcs.jj.workspaces import lane_of

    lane = record.lane
    # The agent's own jj commands ran in its lane's workspace: jj records where each ran.
    # What the task stood on is checked only where the agent ran jj: your own rewrite of it
    # (a `jj squash` from your workspace) is the history check's to say, after the landing.
    agents = [o for o in ops if lane_of(o.workspace) == lane.name]
    stood_on = record.stood_on if agents else ()
    if not record.landed and not stood_on:
        return None
    found = _present(jj, record.landed, stood_on)
    gone = [c for c in (*record.landed, *stood_on)
            if not any(f.startswith(c) or c.startswith(f) for f in found)]
    yours = taken_back(jj, gone) if gone else set()  # you took it back: no breach
    for change in stood_on:
        if change in gone and change not in yours:
            return Breach(Kind.LANDED_LOST, f"change {change[:12]}, which this lane's "
                          "task stood on (a task landed before, or a change of yours), was "
                          "abandoned while the lane's agent worked; nothing of this step "
                          "is landed", _way_back(jj, ops, lane.name, "jj op log"))
    for change in record.landed:
        if change in yours:
            continue
        short = next((c for c in found if c.startswith(change) or change.startswith(c)), None)
        if short is None or not found[short].strip():
            what = "is no longer on the main line" if short is None else \
                "lost its description"
            return Breach(Kind.LANDED_LOST, f"change {change[:12]}, which this lane landed, "
                          f"{what}", _way_back(jj, ops, lane.name, f"jj log -r {change[:12]}"))
    return None


def _present(jj: Jj, landed: tuple[str, ...], stood_on: tuple[str, ...]) -> dict[str, str]:
    """Change id -> the first line of its description, of the `landed` changes still on the
    main line and the `stood_on` ones still in the repository (a change of the lane's own
    below one is no one's loss)."""
    wanted = [f"::@- & ({' | '.join(f'present({c})' for c in landed)})"] if landed else []
    wanted += [f"present({c})" for c in stood_on]
    out = jj.out("--ignore-working-copy", "log", "--no-graph", "-r", " | ".join(wanted),
                 "-T", 'change_id ++ "\\t" ++ description.first_line() ++ "\\n"')
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


def _way_back(jj: Jj, ops: list[Operation], lane: str, look: str) -> tuple[str, ...]:
    """The commands that take back the lane's newest abandon (`ops`, newest first), run as
    printed from your workspace (_take_back). No abandon: `jj op log`, then `look`."""
    from agentloop.vcs.jj.workspaces import lane_of

    for op in ops:
        if lane_of(op.workspace) == lane and op.description.startswith("abandon "):
            return _take_back(jj, ops, op, lane)[0]
    return tuple(dict.fromkeys(("jj op log", look)))


def _take_back(jj: Jj, ops: list[Operation], op: Operation, lane: str
               ) -> tuple[tuple[str, ...], bool]:
    """The commands that take back `op` (an abandon of the lane's agent, or an undo or
    restore), run as printed from your workspace, and whether they act on more than the
    lane's own step (a restore or revert from the lane's side: the main line every lane lands
    on is not as they left it, Breach.everywhere). Such an operation rewrites or moves your
    working-copy change as often as not (the abandon rebases it; an undo or a restore to before
    a landing puts it back where it was), so your workspace is stale and every plain jj command
    there fails; `jj workspace update-stale` then snapshots the old files as a divergent change
    and removes what is not in the new one (tasks.md). With --ignore-working-copy jj does not
    look at your files, and restored or reverted, your change is the one they were checked out
    from: not stale. A restore to the operation before `op` when only the lane ran jj since
    (its step's own operations, nothing of this step is landed) or agent-loop let another
    group's finished lane go (the next run lets it go again); a revert otherwise, which keeps
    another lane's or your later work (the lane's change, rewritten since, is divergent then).
    No restore when it would take back nothing but the lane's own step (every other
    workspace's working-copy change the one it was before `op`, the main line below yours
    with it): your workspace is not stale then, so a `jj st` of yours may come before the
    line, whose snapshot the restore would drop (your workspace stale, and `jj workspace
    update-stale` deleting your edits from the disk); the next run does the step again."""
    from agentloop.vcs.jj.workspaces import lane_of
    from agentloop.vcs.lanes import JJ_PREFIX

    # What agent-loop does from your workspace while lanes work, taking nothing of anyone's:
    # another group's finished lane let go, and jj's merge of operations run at once.
    bookkeeping = (f"forget workspace {JJ_PREFIX}", "reconcile divergent operations")
    before = _ancestors(ops, op.parents)
    yours = lane_of(op.workspace) is None
    # Whose steps a restore may take back besides: run in your workspace, `op` came to every
    # lane alike, and each lane's check (--parallel) must name the same repair: any lane's.
    alone = len(op.parents) == 1 and all(
        o.id in before or o is op or o.description.startswith(bookkeeping)
        or (lane_of(o.workspace) is not None if yours else lane_of(o.workspace) == lane)
        for o in ops)
    if yours:
        # Run in your workspace: jj updated your files with it, so your workspace is fresh,
        # and a restore or a revert that ignores the working copy would leave it stale. A
        # revert brings your undone snapshot back beside the one taken since (your change
        # divergent, jj 0.45.1): the restore, when only the lanes' steps came after (each
        # lane's workspace stale then, its step done again by the next run).
        undo = f"op restore {op.parents[0][:12]}" if alone else f"op revert {op.id[:12]}"
        return ("jj op log", f"jj {undo}"), False
    if alone and _only_the_lanes(jj, op.parents[0], lane):
        return ("jj op log", "jj log"), False
    if alone:
        return (f"jj --ignore-working-copy op restore {op.parents[0][:12]}", "jj log"), True
    # The revert brings back the version before `op` of every change `op` rewrote; one
    # rewritten again since (the lane's own change, snapshotted as its group stopped) would
    # be divergent then: that old version goes again, the newer one stays.
    again = _rewritten_again(jj, op)
    return (f"jj --ignore-working-copy op revert {op.id[:12]}",
            *([f"jj abandon {' '.join(c[:12] for c in again)}"] if again else ()), "jj log"), True


def _rewritten_again(jj: Jj, op: Operation) -> list[str]:
    """The commits before `op` of the changes `op` rewrote and something rewrote again
    since (none that is a workspace's working-copy commit now, yours among them): what a
    revert of `op` would make divergent."""
    from agentloop.errors import VcsError

    def commits(*at: str, revset: str = "mutable()") -> dict[str, set[str]]:
        out = jj.out("--ignore-working-copy", *at, "log", "--no-graph", "-r", revset, "-T",
                     'change_id ++ " " ++ commit_id ++ "\\n"')
        found: dict[str, set[str]] = {}
        for line in out.splitlines():
            change, _, commit = line.partition(" ")
            found.setdefault(change, set()).add(commit)
        return found

    try:
        before, after = commits("--at-op", op.parents[0]), commits("--at-op", op.id)
        now = commits(revset="mutable() ~ working_copies()")  # yours is not rewritten
    except VcsError:
        return []
    return sorted(c for change, old in before.items()
                  if change in after and after[change] != old
                  and change in now and now[change] != after[change]
                  for c in old - now[change])


def _only_the_lanes(jj: Jj, before: str, lane: str) -> bool:
    """Whether every workspace but `lane`'s has the working-copy commit now that it had at
    operation `before` (each read without a snapshot); False when jj cannot say, so that the
    line keeps the restore and the stop is said all the same."""
    from agentloop.errors import VcsError
    from agentloop.vcs.jj.workspaces import lane_of

    def targets(*at: str) -> set[str]:
        out = jj.out("--ignore-working-copy", *at, "workspace", "list", "-T",
                     'name ++ " " ++ target.commit_id() ++ "\\n"')
        return {line for line in out.splitlines() if lane_of(line.split(" ", 1)[0]) != lane}

    try:
        return targets("--at-op", before) == targets()
    except VcsError:
        return False


def _ancestors(ops: list[Operation], parents: tuple[str, ...]) -> set[str]:
    """The ids of `ops` that `parents` stand on, themselves included."""
    by_id = {o.id: o for o in ops}
    found: set[str] = set()
    todo = list(parents)
    while todo:
        at = todo.pop()
        if at not in found:
            found.add(at)
            todo.extend(by_id[at].parents if at in by_id else ())
    return found


def jj_removed(lane: Path) -> Breach:
    """The lane's folder is there, its .jj folder is not: removed by its agent (or from
    outside). Its commands name the lane with -R (agentloop.vcs.jj.run.Jj), so none of them
    went on in the checkout around it."""
    return Breach(Kind.JJ_REMOVED, f"the lane's jj workspace was removed ({lane / '.jj'} is "
                  "gone, by its agent or from outside); no jj command of agent-loop's ran "
                  "in your checkout for it, and the lane's changes stay in the repository",
                  ("jj workspace list", "jj log"))


def jj_forgotten(lane: Path) -> Breach:
    """The lane's folder and its .jj are there, but the repository no longer knows the
    workspace (`jj workspace forget`, by its agent or from outside): jj has no working-copy
    commit for it, so nothing of the step can be snapshotted or landed. The next run's lane is
    made afresh (agentloop.vcs.jj.workspaces.open_jj adds the workspace again)."""
    return Breach(Kind.JJ_FORGOTTEN, f"the lane's jj workspace in {lane} was forgotten (`jj "
                  "workspace forget`, by its agent or from outside), so jj no longer snapshots "
                  "its files and nothing of this step is landed; the lane's changes stay in "
                  "the repository, and the next run adds the lane's workspace afresh, its "
                  "task's agent running again",
                  ("jj workspace list", "jj log"))


def operations_since(jj: Jj, operation: str) -> list[tuple[str, str]]:
    """(id, description) of the operations after `operation`, newest first (one `jj op log`,
    none when the repository is where the last read found it: agentloop.vcs.jj.oplog)."""
    return [(op.id, op.description) for op in _since(jj, operation)]


def _since(jj: Jj, operation: str) -> list[Operation]:
    """The operations after `operation`, newest first: every one it does not stand on. Not
    only those the log lists before it: a command begun before `operation` and ended after
    it (yours, such as a `jj describe` whose editor was open meanwhile, or a snapshot of
    your workspace taken at that moment) stands beside it, merged in by jj ("reconcile
    divergent operations"), and the log lists it after `operation`."""
    from agentloop.vcs.jj.oplog import operations

    ops = operations(jj)
    at = next((o for o in ops if o.id.startswith(operation) or operation.startswith(o.id)),
              None)
    older = _ancestors(list(ops), (at.id,)) if at is not None else set()
    return [o for o in ops if o.id not in older]


def operation(jj: Jj) -> str:
    """The repository's current operation id (its op heads' one file name, when it is one)."""
    from agentloop.vcs.jj.run import op_id

    found = op_id(jj.root)
    if found is not None:
        return found
    return jj.out("--ignore-working-copy", "op", "log", "--no-graph", "-n", "1", "-T",
                  'id ++ "\\n"').strip()
