"""Plans change while they are worked on: a task appended, one reworded, one ticked by the agent.
When the task file's hash changed, the saved records are matched to the new file's tasks instead
of refusing to go on.

- A task is known by its identity: its group and its text with whitespace folded (and the
  boxes of its sub-items read as open: ticking those is no edit). A saved task
  whose identity is in the new file keeps its whole record (status, change, session, costs,
  history, log name), even if it moved; duplicates match in file order. A heading renamed in
  place (the same tasks under it, in the same order) is the same group, and so are two whose
  names were swapped: its tasks match under the new name, those to do too, and run in the run
  that reads the edit. A done (or skipped, or
  unapproved) task left unmatched (its heading renamed, or it moved under another) keeps its
  record by its text alone, where exactly one unmatched done task and one unmatched new task
  have that text; a done one lightly reworded in the same edit stays done as an edit of a
  completed task does (below). From a heading gone to a new one, only where the sections are
  the old ones renamed, merged or split (most of their tasks the same): a section put in
  another's place runs its tasks, its `add tests` too.
- A new task that stands where an unmatched old one of the same group stood is an edit: the same
  slot between the same tasks matched in place (those that kept their order; a moved one marks
  no slot), paired in order within it, as many as can be and those whose words are most alike,
  whatever the counts (a task deleted beside one edited leaves the edit its own old words); a
  completed old task pairs only with a new one whose words are like its own (a task added beside
  it is not it reworded), and never with words that say other work (`lock`/`unlock`, `step
  1`/`step 2`: agentloop.state.rewording). A task deleted in one place and another added
  elsewhere are a removal and an addition: the added one runs (a done one lightly reworded
  aside, above). An edit is a new pending task; the old one's change stays in history and is
  named. An edit of a completed task keeps it done instead, with the new words (a typo fixed is
  no reason to pay for finished work again): it remembers the words it was done with
  (`done_as`), and every run start, --dry-run and --status say so in one line, with the
  `--again` that runs the new words.
- Other new tasks are added, pending; other old ones are removed (their records returned, for
  the archive).
- A task newly ticked `[x]` in the file is skipped; a completed one stays completed; one not
  approved is completed (its change is in the history: the tick approves it); one whose commit
  was kept off the main line (conflicted, held, landing) is skipped, its commit said not landed
  (resolved by hand, or given up). A skipped task no longer ticked (its box taken off, a
  sub-task under it open) is pending again.
- A task the file now reads as folded (Kiro sub-tasks numbered under it, once read as tasks of
  their own) takes over the records of its parts (agentloop.state.folding): their runs, costs
  and sessions stay counted, and it is done when every part was.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections import defaultdict, deque
from collections.abc import Callable

from agentloop.files.shown import typed_path
from agentloop.ondemand import dataclass as on_first_use
from agentloop.plan.boxes import task_key
from agentloop.plan.parse import Task, TaskFile
from agentloop.state.schema import TaskState
from agentloop.state.status import SETTLED, SETTLING, check
from agentloop.state.status import TaskStatus as S


@on_first_use(frozen=True)  # a plain run never makes one (agentloop.ondemand)
class Reconciled:
    """The new records, in file order, and what changed."""

    tasks: list[TaskState]
    added: tuple[int, ...] = ()                    # indices in the new file
    edited: tuple[tuple[int, str], ...] = ()       # (new index, the old change or "")
    removed: tuple[TaskState, ...] = ()
    ticked: tuple[int, ...] = ()
    kept_done: int = 0
    folded: tuple[tuple[int, int], ...] = ()      # (new index, records carried onto it)
    reread: bool = False    # the same file, read by a newer reader (agentloop.plan.source.READER)
    replaced: tuple[TaskState, ...] = ()           # the old records of the edited tasks
    reworded_done: tuple[int, ...] = ()           # completed tasks reworded: kept done
    # The same, with the log name each had (a reworded record takes its new words' name):
    # (old log name, new index), for what names the run's tasks after it (run.names_now).
    reworded_from: tuple[tuple[str, int], ...] = ()
    reopened: tuple[int, ...] = ()                # skipped tasks no longer ticked: to do
    # A task to do whose heading was renamed (or which moved under another): removed and added
    # in the records (not carried across groups), yet the same task: (old log name, new index).
    moved: tuple[tuple[str, int], ...] = ()
    # Of the ticked, those whose change was kept for a person: (index, status it had, change).
    settled: tuple[tuple[int, str, str], ...] = ()

    @property
    def dropped(self) -> tuple[TaskState, ...]:
        """The old records the new file has no place for: removed and edited tasks'."""
        return self.removed + self.replaced

    def news(self) -> bool:
        """Whether any task was added, edited, removed, ticked off or folded."""
        return bool(self.added or self.edited or self.removed or self.ticked or self.folded
                    or self.reworded_done or self.reopened)

    def note(self, name: str, since: str = "") -> str:
        """`tasks.md changed: 1 task added, …`; a re-read says so instead."""
        what = "reads differently with this agent-loop" if self.reread else "changed" + since
        if not self.news():  # not "0 tasks added, 0 edited, 0 removed": as if the edit was lost
            return f"{name} {what}: the same tasks (moved, or the words around them edited); " \
                f"{self.kept_done} completed task{'s' * (self.kept_done != 1)} kept"
        return f"{name} {what}: {self.summary()}"

    def summary(self) -> str:
        """`1 task added, 1 edited, 1 removed; 5 completed tasks kept`, and the old changes."""
        added, removed = len(self.added) - len(self.moved), len(self.removed) - len(self.moved)
        parts = [f"{added} task{'s' * (added != 1)} added", f"{len(self.edited)} edited",
                 f"{removed} removed"]
        if self.moved:
            parts.append(f"{len(self.moved)} to do moved under another heading (it starts "
                         "afresh there)")
        if self.reworded_done:
            parts.append(f"{len(self.reworded_done)} reworded after done")
        if self.ticked:
            parts.append(f"{len(self.ticked)} ticked off")
        if self.reopened:
            parts.append(f"{len(self.reopened)} no longer ticked (to do)")
        if self.folded:
            records = sum(n for _, n in self.folded)
            parts.append(f"{records} records folded into {len(self.folded)} "
                         f"task{'s' * (len(self.folded) != 1)}")
        text = ", ".join(parts) + f"; {self.kept_done} completed task" \
            f"{'s' * (self.kept_done != 1)} kept"
        old = [f"task {i}'s earlier change {c[:12]} stays in history" for i, c in self.edited
               if c] + [_settled_line(*s) for s in self.settled]
        return text + ("" if not old else " (" + "; ".join(old) + ")")


# A ticked task whose change the run kept for a person: the tick is that person's word. Kept
# off the main line (conflicted, held, or its landing cut short), it is skipped: its commit stays
# where it was kept, not landed (the person resolved it by hand, or dropped it). Not approved,
# its change is in the history already: ticked, it is taken as approved.
_SETTLED_BY_HAND: dict[str, S] = {**dict.fromkeys(SETTLING, S.SKIPPED), S.UNAPPROVED: S.COMPLETED}


def identity(group: str, text: str) -> tuple[str, str]:
    """What a task is, whatever its position: its group and its text, whitespace folded and
    the boxes of its sub-items read as open (agentloop.plan.boxes.task_key)."""
    return group, task_key(text)


def _settled_line(index: int, status: str, change: str) -> str:
    """What a tick did to a task whose change was kept for a person."""
    commit = f" {change[:12]}" if change else ""
    if status == S.UNAPPROVED:
        return f"task {index} was unapproved: ticked, it is completed, its change{commit} " \
            "taken as approved"
    return f"task {index} was {status}: ticked, it is skipped, its kept commit{commit} not " \
        "landed"


def reconcile(old: list[TaskState], new: TaskFile) -> Reconciled:
    """Match the saved records to the re-read file by the rules in the module doc. A completed
    task reworded stays done whenever the words changed: after its run, or while its own
    attempt ran (the run re-reads the plan only before a task starts), so saving a minute
    sooner never costs its work again; a task still pending when reworded runs its new words."""
    saved: dict[tuple[str, str], deque[TaskState]] = defaultdict(deque)
    renamed_to = _renamed_headings(old, new)
    for record in old:
        saved[identity(renamed_to.get(record.group, record.group), record.task)].append(record)
    fresh = [TaskState.from_task(t) for t in new.tasks]
    result: list[TaskState | None] = []
    came: list[list[int]] = [[] for _ in fresh]  # the old indices each new slot's record had
    ticked, reopened, settled = [], [], []
    for task, record in zip(new.tasks, fresh):
        match = saved.get(identity(task.group, task.text))
        if not match:
            result.append(None)
            continue
        came[len(result)].append(match[0].index)
        kept = _placed(match.popleft(), task, record)
        if task.checked and kept.status not in (S.COMPLETED, S.SKIPPED):
            if kept.status in _SETTLED_BY_HAND:
                settled.append((task.index, str(kept.status), kept.change_id or ""))
                # What it waited for (a conflict to resolve, your edits) is settled: --status
                # no longer says to resolve and land it.
                kept.error = kept.waiting = None
            kept.status = check(kept.status, _SETTLED_BY_HAND.get(kept.status, S.SKIPPED),
                                kept.index)
            ticked.append(task.index)
        elif not task.checked and kept.status == S.SKIPPED:
            # Its box taken off, or a sub-task under it opened (agentloop.plan.markdown): to
            # do again; a task done by a run stays done.
            kept.status = check(kept.status, S.PENDING, kept.index)
            reopened.append(task.index)
        result.append(kept)
    folded, renamed = [], set()
    for i, task in enumerate(new.tasks):
        # After every whole match: a part never takes a record a task of its own wants.
        parts = [saved[identity(task.group, p)].popleft() for p in task.parts
                 if result[i] is None and saved.get(identity(task.group, p))]
        if parts:
            # Only a plan that joined tasks into one folds their records: rarely.
            from agentloop.state.folding import carry

            came[i].extend(p.index for p in parts)
            carried = result[i] = carry(parts, task, fresh[i])
            folded.append((task.index, len(parts)))
            if carried.status != S.COMPLETED:   # a new log name: see agentloop.state.folding
                renamed.add(i)
    may = _across(old, fresh)
    _regrouped(new, fresh, result, saved, came, may)
    leftover = [r for queue in saved.values() for r in queue]
    slots = _slots(came, leftover)
    return dataclasses.replace(_fill(result, fresh, leftover, ticked, renamed, slots, may),
                               folded=tuple(folded), reopened=tuple(reopened),
                               settled=tuple(settled))


def _renamed_headings(old: list[TaskState], new: TaskFile) -> dict[str, str]:
    """Headings renamed in place, old name to new: a heading whose tasks are no longer under
    its name and one whose name has other tasks now, with the same tasks in the same order (the
    name the only change), each the only such pair. A person who renames `## Backend` to
    `## Server` means the same group: its tasks keep their records, those to do their sessions
    too, and run in the run that reads the edit, not left as moved under another heading. So
    do two headings whose names were swapped (or passed round), each name's tasks now another
    renamed heading's: not one name's tasks taken as the other's reworded. A name kept with
    other tasks is renamed only when another renamed heading took it and its own went on."""
    was: dict[str, list[str]] = defaultdict(list)
    for record in sorted(old, key=lambda r: r.index):
        was[record.group].append(task_key(record.task))
    now: dict[str, list[str]] = defaultdict(list)
    for task in new.tasks:
        now[task.group].append(task_key(task.text))
    gone = {group: tuple(keys) for group, keys in was.items() if now.get(group) != keys}
    came = {group: tuple(keys) for group, keys in now.items() if was.get(group) != keys}
    if not gone or not came:
        return {}
    by_tasks: dict[tuple[str, ...], tuple[list[str], list[str]]] = defaultdict(
        lambda: ([], []))
    for group, keys in gone.items():
        by_tasks[keys][0].append(group)
    for group, keys in came.items():
        by_tasks[keys][1].append(group)
    renamed = {olds[0]: news[0] for olds, news in by_tasks.values()
               if len(olds) == 1 and len(news) == 1}
    # A name still in the plan (`## A` whose task was deleted, `## B` renamed `## A`): its
    # old tasks must have gone under another name, and the name's new tasks come from another.
    while True:
        kept = {a: b for a, b in renamed.items()
                if (b not in was or b in renamed) and (a not in now or a in renamed.values())}
        if kept == renamed:
            return renamed
        renamed = kept


def _across(old: list[TaskState], fresh: list[TaskState]) -> Callable[[TaskState, TaskState],
                                                                      bool]:
    """Whether a saved record may be carried to a new task under another heading: always where
    its heading stays in the plan or the new one was there before (a task moved from one
    section to another); from a heading gone to a new one, only where the gone section lives on
    under the new headings, renamed, merged or split (agentloop.state.rewording.mostly_among:
    most of its tasks are there), not another section put in its place (its `add tests` is
    other work than the old one's). A renamed heading may gain many tasks in the same edit:
    the new heading's own tasks are not asked to be mostly old ones."""
    was, now = {r.group for r in old}, {r.group for r in fresh}
    arrived = [r for r in fresh if r.group not in was]
    known: dict[str, bool] = {}

    def may(record: TaskState, task: TaskState) -> bool:
        if record.group in now or task.group in was:
            return True
        from agentloop.state.rewording import mostly_among  # a heading gone: rarely

        if record.group not in known:
            known[record.group] = mostly_among([r for r in old if r.group == record.group],
                                               arrived)
        return known[record.group]

    return may


def _regrouped(new: TaskFile, fresh: list[TaskState], result: list[TaskState | None],
               saved: dict[tuple[str, str], deque[TaskState]], came: list[list[int]],
               may: Callable[[TaskState, TaskState], bool]) -> None:
    """A done task whose heading was renamed, or which moved under another one, keeps its
    record (in `result`, taken from `saved`), under its new group: matched by its text alone,
    where that text is one unmatched done task's and one unmatched new task's, so no work done
    is paid for again (nor a skipped one run, nor one not approved: its change is in the
    history). A task still to do is not carried across groups: its session is its old
    group's."""
    done: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key, queue in saved.items():
        if queue and queue[0].status in SETTLED:
            done[key[1]].extend([key] * len(queue))
    if not done:
        return
    wanted: dict[str, list[int]] = defaultdict(list)
    for i, task in enumerate(new.tasks):
        if result[i] is None:
            wanted[task_key(task.text)].append(i)
    for text, places in wanted.items():
        if len(places) != 1 or len(done.get(text, ())) != 1:
            continue
        (i,), (key,) = places, done[text]
        if not may(saved[key][0], fresh[i]):
            continue
        task = new.tasks[i]
        record = saved[key].popleft()
        came[i].append(record.index)
        result[i] = _placed(record, task, fresh[i])


def _moved_reworded(by_group: dict[tuple[int, str], deque[TaskState]], places: list[int],
                    fresh: list[TaskState],
                    may: Callable[[TaskState, TaskState], bool]) -> dict[int, TaskState]:
    """Done tasks moved under another heading and lightly reworded in the same edit, taken out
    of `by_group`: the new places they stand at now (agentloop.state.rewording.moved)."""
    done = sorted((r for queue in by_group.values() for r in queue if r.status == S.COMPLETED),
                  key=lambda r: r.index)
    if not done or not places:
        return {}
    from agentloop.state.rewording import listed, moved

    places = sorted(places)
    numbered = listed(fresh, places)
    found = {places[j]: done[k] for j, k in moved(done, [fresh[i] for i in places], may,
                                                  frozenset(j for j, i in enumerate(places)
                                                            if i in numbered))}
    taken = {id(r) for r in found.values()}
    for key, queue in by_group.items():
        by_group[key] = deque(r for r in queue if id(r) not in taken)
    return found


def _placed(record: TaskState, task: Task, fresh: TaskState) -> TaskState:
    """A saved record at the place `task` has in the file now (its index, line and group),
    with the checks and the optional mark the file gives it (`fresh`, its new record)."""
    return dataclasses.replace(record, index=task.index, line=task.line, group=task.group,
                               checks=fresh.checks, optional=fresh.optional)


def _slots(came: list[list[int]], leftover: list[TaskState]) -> tuple[list[int], dict[int, int]]:
    """The slot of each new position and of each unmatched old task (by its old index): how
    many matched records that kept their order stand before it. A new task and an old one in
    the same slot stand between the same such neighbours: one may be the other reworded.
    Those that kept their order are the longest run of matches in order in both files (a
    folded task's parts share its new place: in order too)."""
    pairs = sorted((o, i) for i, olds in enumerate(came) for o in olds)
    # Longest non-decreasing run of new places, in old order (patience sorting).
    tails: list[int] = []           # the smallest last new place of a run of each length
    ends: list[int] = []            # the pair that ends it
    back: list[int] = []
    for k, (_, i) in enumerate(pairs):
        at = bisect_right(tails, i)
        back.append(ends[at - 1] if at else -1)
        if at == len(tails):
            tails.append(i)
            ends.append(k)
        else:
            tails[at], ends[at] = i, k
    kept: list[tuple[int, int]] = []
    k = ends[-1] if ends else -1
    while k >= 0:
        kept.append(pairs[k])
        k = back[k]
    kept.reverse()
    olds, news = [o for o, _ in kept], [i for _, i in kept]
    return ([bisect_left(news, i) for i in range(len(came))],
            {r.index: bisect_left(olds, r.index) for r in leftover})


def _fill(result: list[TaskState | None], fresh: list[TaskState], leftover: list[TaskState],
          ticked: list[int], renamed: set[int], slots: tuple[list[int], dict[int, int]],
          may: Callable[[TaskState, TaskState], bool]) -> Reconciled:
    """New records where nothing matched: an edit of an unmatched old task of the same group
    in the same slot (in order), else a done task moved under another heading and reworded
    (`may` allowing it), else an addition; the old ones nothing matched are removed; each new
    record's log name one no other record holds (agentloop.state.log_names)."""
    from agentloop.state.log_names import LogNames  # an edited plan only

    new_slot, old_slot = slots
    by_group: dict[tuple[int, str], deque[TaskState]] = defaultdict(deque)
    for record in sorted(leftover, key=lambda r: r.index):
        by_group[old_slot[record.index], record.group].append(record)
    added, edited, replaced, reworded = [], [], [], []
    reworded_from: list[tuple[str, int]] = []
    # An old task kept its log name; a new one never shares it (a folded one that is still to
    # do has a new one: see agentloop.state.folding), nor one an edited or removed task had:
    # its attempts count from 1 again, and their logs would write over that task's, which its
    # archived record names.
    new = [i for i, r in enumerate(result) if r is None or i in renamed]
    names = LogNames({r.log_name for i, r in enumerate(result) if r is not None and i not in new}
                     | {r.log_name for r in leftover})
    unmatched: dict[tuple[int, str], list[int]] = defaultdict(list)
    for i in new:
        if result[i] is None:
            unmatched[new_slot[i], fresh[i].group].append(i)
    paired: dict[int, TaskState] = {}
    if unmatched:
        from agentloop.state.rewording import pair  # an edited plan's unmatched tasks only

        paired = {i: was for key, places in unmatched.items()
                  for i, was in pair(places, fresh, by_group[key])}
        paired.update(_moved_reworded(by_group, [i for places in unmatched.values()
                                                 for i in places if i not in paired],
                                      fresh, may))
    for i in new:
        record, own = result[i] or fresh[i], ""
        was = paired.get(i)
        if was is not None and was.status == S.COMPLETED:
            own = was.log_name  # its attempts go on counting: its own
            record = _reworded(was, record)
            reworded.append(record.index)
            reworded_from.append((was.log_name, record.index))
        elif was is not None:
            replaced.append(was)
            edited.append((record.index, was.change_id or ""))
        elif result[i] is None:
            added.append(record.index)
        name = names.give(record.log_name, was.log_name if was is not None else None, own)
        result[i] = dataclasses.replace(record, log_name=name)
    removed = tuple(r for queue in by_group.values() for r in queue)
    tasks = [r for r in result if r is not None]
    kept_done = sum(1 for r in tasks if r.status == S.COMPLETED)
    return Reconciled(tasks, tuple(added), tuple(edited), removed, tuple(ticked), kept_done,
                      replaced=tuple(replaced), reworded_done=tuple(reworded),
                      reworded_from=tuple(reworded_from),
                      moved=_moved(removed, [tasks[i - 1] for i in added]))


def _moved(removed: tuple[TaskState, ...], added: list[TaskState]) -> tuple[tuple[str, int], ...]:
    """Tasks to do that a renamed heading (or a move under another) removed and added again:
    the same words, one removed and one added, under another group. Still the plan's task."""
    gone: dict[str, list[TaskState]] = defaultdict(list)
    for record in removed:
        if record.status not in (S.COMPLETED, S.SKIPPED):
            gone[task_key(record.task)].append(record)
    new: dict[str, list[TaskState]] = defaultdict(list)
    for record in added:
        new[task_key(record.task)].append(record)
    return tuple((old[0].log_name, now[0].index) for key, old in gone.items()
                 if len(old) == 1 and len(now := new.get(key, [])) == 1
                 and old[0].group != now[0].group)


def _reworded(done: TaskState, new: TaskState) -> TaskState:
    """A completed task's record, with the words the plan gives it now: still done, and what it
    was done as remembered (forgotten when the words are those again). Its next attempt (run
    `--again`) is logged under the new words' name; the earlier ones' logs keep theirs."""
    was = done.done_as or done.task
    return dataclasses.replace(done, index=new.index, line=new.line, group=new.group,
                               task=new.task,
                               summary=new.summary, checks=new.checks, optional=new.optional,
                               log_name=new.log_name,
                               done_as=None if identity("", was) == identity("", new.task)
                               else was)


def reworded_lines(tasks: list[TaskState], plan: str) -> list[str]:
    """One line for each completed task the plan has reworded since it was done."""
    return [f"task {t.index}'s words changed after it was done: it stays done (not paid for "
            f"again); `agent-loop {typed_path(plan)} --task {t.index} --again` runs the new words"
            for t in tasks if t.done_as is not None and t.status == S.COMPLETED]
