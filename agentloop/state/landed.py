"""Which tasks of a plan are done, read from the history of the current branch (git) or of `@`
(jj): progress that survives the loss of `.agent-loop/` (`git clean -fdx`, a second clone).

Every task's commit (git) or change description (jj) ends with two trailers, the format the
fleet's job commits use (agentloop.vcs.trailers spells them):

    Agent-Loop-Plan: tasks
    Agent-Loop-Task: 3 5d41402abc4b

the plan (its file's name as a slug) and the task: its number, then a short hash of its text, so
a task is still known after the plan was edited and its number moved. Every such pair in a message
counts: a squash merge (GitHub's "Squash and merge", `git merge --squash`) lists the messages of
the commits it squashed, each with its trailers, in one commit. A commit from before the
trailers is matched by its subject (`agent-loop: <group> / <summary>`, commit_message). A revert
of a task's commit (`git revert`: `This reverts commit <sha>.`; jj's `This backs out commit
<id>.`) makes the task not done again, and a revert of that revert done again.

Pure: the caller reads the history (agentloop.vcs.branch_log) and the plan.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Iterable, Sequence

from agentloop.files.digest import sha256
from agentloop.ondemand import dataclass as on_first_use
from agentloop.plan.boxes import task_key
from agentloop.plan.groups import UNGROUPED
from agentloop.vcs.trailers import PLAN_KEY, TASK_KEY, task_lines

if TYPE_CHECKING:
    from agentloop.state.schema import TaskState

HASH_LENGTH = 12


@cache
def _reverts() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A revert's body line and its subject, compiled when history is first read for them (a
    fresh run's history and an unmoved one's --status have no commit to read), not at import."""
    return (re.compile(r"^This (?:reverts|backs out) commit ([0-9a-f]{7,64})\b"),
            re.compile(r'^(?:Revert|Back out) "(.*)"\s*$'))


@on_first_use(frozen=True)  # a plain run never makes one (agentloop.ondemand)
class PlannedTask:
    """A task of the plan as history can name it."""

    index: int
    text: str       # the task's text, as the plan gives it
    subject: str    # its commit message's first line, before trailers (commit_message)


@on_first_use(frozen=True)  # a plain run never makes one (agentloop.ondemand)
class Commit:
    """One commit (git) or change (jj) of the branch's history, oldest first."""

    commit_id: str
    description: str


def task_hash(text: str) -> str:
    """A short hash of a task's text, blind to how its lines are wrapped or indented and to the
    marks in its sub-items' boxes."""
    return sha256(task_key(text).encode("utf-8")).hexdigest()[:HASH_LENGTH]


def commit_message(task: TaskState, title: str | None = None) -> str:
    """The description of a task's change: filed under its group, or the plan's title when
    it is in none."""
    return f"agent-loop: {filed_under(task, title)} / {task.summary}"


def filed_under(task: TaskState, title: str | None) -> str:
    """The task's group as history names it: a task outside any group goes by the plan's
    `#` title, where it has one."""
    return title if task.group == UNGROUPED and title else task.group


def trailers(plan: str, index: int, text: str) -> str:
    """The lines that end a task's commit message, naming its plan and the task."""
    return task_lines(plan, f"{index} {task_hash(text)}")


def _paragraphs(description: str) -> list[list[str]]:
    """The description's paragraphs, each line without its indentation (`git merge --squash`
    indents the messages it quotes)."""
    found: list[list[str]] = [[]]
    for line in description.splitlines():
        line = line.strip()
        if line:
            found[-1].append(line)
        elif found[-1]:
            found.append([])
    return [p for p in found if p]


def _values(lines: list[str], key: str) -> list[str]:
    """The values of trailer `key` among `lines`."""
    prefix = key.casefold() + ":"
    return [line.split(":", 1)[1].strip() for line in lines if line.casefold().startswith(prefix)]


@on_first_use(frozen=True)  # a plain run never makes one (agentloop.ondemand)
class _Names:
    """What a commit's message can name the plan's tasks by, each task's text hashed once: a
    long history is read in one pass, each trailer looked up, never compared with every task."""

    by_hash: dict[str, list[int]]   # a task's text's hash -> the tasks of that text
    by_subject: dict[str, int]      # a commit subject -> the first task it names
    numbers: frozenset[int]


def _names(tasks: Sequence[PlannedTask]) -> _Names:
    by_hash: dict[str, list[int]] = {}
    by_subject: dict[str, int] = {}
    for task in tasks:
        by_hash.setdefault(task_hash(task.text), []).append(task.index)
        by_subject.setdefault(task.subject, task.index)
    return _Names(by_hash, by_subject, frozenset(t.index for t in tasks))


def _named(values: list[str], names: _Names) -> list[int]:
    """The tasks `Agent-Loop-Task` values name: by the hash of its text (numbers move when the
    plan is edited), by its number where the value has no hash (the fleet's commits)."""
    named = []
    for value in values:
        number, _, digest = value.partition(" ")
        digest = digest.strip()
        if digest:
            same = names.by_hash.get(digest)
            if same:
                named.append(number_first(same, number))
        elif number.isdigit() and int(number) in names.numbers:
            named.append(int(number))
    return named


def number_first(indexes: list[int], number: str) -> int:
    """Of tasks with the same text, the one with the commit's number, else the first."""
    return int(number) if number.isdigit() and int(number) in indexes else indexes[0]


def done_tasks(plan: str, tasks: Sequence[PlannedTask], history: Iterable[Commit]
               ) -> dict[int, str]:
    """The plan's tasks whose change is in `history` and was not reverted: {number: the id of
    the commit that landed it}."""
    return {i: commit for i, (commit, done) in last_word(plan, tasks, history).items() if done}


def landings(plan: str, tasks: Sequence[PlannedTask], history: Iterable[Commit]
             ) -> dict[int, tuple[str, str | None]]:
    """Every task `history` landed at some point: the last commit that landed it, and the
    commit that reverts it since (None: it is done). A fresh state's run keeps a reverted task
    done, as the checkout that ran it does (agentloop.run.rebuilt)."""
    landed: dict[int, tuple[str, str | None]] = {}
    for commit_id, did in _walk(plan, tasks, history):
        for index, done in did:
            if done:
                landed[index] = (commit_id, None)
            elif index in landed:
                landed[index] = (landed[index][0], commit_id)
    return dict(sorted(landed.items()))


def last_word(plan: str, tasks: Sequence[PlannedTask], history: Iterable[Commit]
              ) -> dict[int, tuple[str, bool]]:
    """For each task `history` names: the last commit that did something to it, and whether the
    task is done after it (False: that commit reverts it)."""
    said: dict[int, tuple[str, bool]] = {}
    for commit_id, did in _walk(plan, tasks, history):
        for index, done in did:
            said[index] = (commit_id, done)
    return dict(sorted(said.items()))


def _walk(plan: str, tasks: Sequence[PlannedTask], history: Iterable[Commit]
          ) -> Iterable[tuple[str, list[tuple[int, bool]]]]:
    """Each commit that does something to the plan's tasks, with what it does, oldest first."""
    names = _names(tasks)
    effect: dict[str, list[tuple[int, bool]]] = {}   # commit id -> [(task, done after it)]
    for commit in history:
        did = _effects(commit.description, plan, names, effect)
        if did:
            effect[commit.commit_id] = did
            yield commit.commit_id, did


def _effects(description: str, plan: str, names: _Names,
             effect: dict[str, list[tuple[int, bool]]]) -> list[tuple[int, bool]]:
    """What one commit does to the plan's tasks, in the order its message says it: every
    trailer block names a task it lands (a squash merge holds many, one per squashed commit),
    every `This reverts commit` line undoes what that commit did."""
    did: list[tuple[int, bool]] = []
    quoted, trailed = None, False
    reverts, revert_subject = _reverts()
    for lines in _paragraphs(description):
        plans = _values(lines, PLAN_KEY)
        trailed = trailed or bool(plans)
        if plan in plans:
            did += [(index, True) for index in _named(_values(lines, TASK_KEY), names)]
        for line in lines:
            quote = revert_subject.match(line.lstrip("*- "))
            quoted = quote.group(1) if quote else quoted
            reverted = reverts.match(line)
            if reverted is None:
                continue
            undone = _effect_of(reverted.group(1), effect)
            if undone is None:  # an id we do not know: by the subject it quotes
                named = names.by_subject.get(quoted) if quoted is not None else None
                undone = [(named, True)] if named is not None else []
            did += [(index, not done) for index, done in undone]
    if not did and not trailed:  # from before the trailers (another plan's: never)
        index = names.by_subject.get(description.split("\n", 1)[0].strip())
        did = [(index, True)] if index is not None else []
    return did


def _effect_of(commit_id: str, effect: dict[str, list[tuple[int, bool]]]
               ) -> list[tuple[int, bool]] | None:
    """What the commit `commit_id` (maybe abbreviated) did to the plan's tasks."""
    if commit_id in effect:
        return effect[commit_id]
    return next((e for c, e in effect.items() if c.startswith(commit_id)), None)
