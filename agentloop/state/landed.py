"""Which tasks of a plan are done, read from the history of the current branch (git) or of `@`
(jj): progress that survives the loss of `.agent-loop/` (`git clean -fdx`, a second clone).

Every task's commit (git) or change description (jj) ends with two trailers, the format the
fleet's job commits use:

    Agent-Loop-Plan: tasks
    Agent-Loop-Task: 3 5d41402abc4b

the plan (its file's name as a slug) and the task: its number, then a short hash of its text, so
a task is still known after the plan was edited and its number moved. A commit from before the
trailers is matched by its subject (`agent-loop: <group> / <summary>`). A revert of a task's
commit (`git revert`: `This reverts commit <sha>.`; jj's `This backs out commit <id>.`) makes
the task not done again, and a revert of that revert done again.

Pure: the caller reads the history (agentloop.vcs.branch_log) and the plan.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from agentloop.plan.boxes import task_key

PLAN_KEY, TASK_KEY = "Agent-Loop-Plan", "Agent-Loop-Task"
HASH_LENGTH = 12
_REVERTS = re.compile(r"^This (?:reverts|backs out) commit ([0-9a-f]{7,64})\b", re.M)
_REVERT_SUBJECT = re.compile(r'^(?:Revert|Back out) "(.*)"\s*$')


@dataclass(frozen=True)
class PlannedTask:
    """A task of the plan as history can name it."""

    index: int
    text: str       # the task's text, as the plan gives it
    subject: str    # its commit message's first line, before trailers (selection.commit_message)


@dataclass(frozen=True)
class Commit:
    """One commit (git) or change (jj) of the branch's history, oldest first."""

    commit_id: str
    description: str


def task_hash(text: str) -> str:
    """A short hash of a task's text, blind to how its lines are wrapped or indented and to the
    marks in its sub-items' boxes."""
    return hashlib.sha256(task_key(text).encode("utf-8")).hexdigest()[:HASH_LENGTH]


def trailers(plan: str, index: int, text: str) -> str:
    """The lines that end a task's commit message, naming its plan and the task."""
    return f"{PLAN_KEY}: {plan}\n{TASK_KEY}: {index} {task_hash(text)}"


def _trailer_values(description: str, key: str) -> list[str]:
    """The values of `key` in the description's last paragraph (where trailers are)."""
    last = description.strip().rsplit("\n\n", 1)[-1]
    prefix = key.casefold() + ":"
    return [line.split(":", 1)[1].strip() for line in last.splitlines()
            if line.casefold().startswith(prefix)]


def _named_task(description: str, plan: str, tasks: Sequence[PlannedTask]) -> int | None:
    """The task a commit names by its trailers: by the hash of its text (numbers move when the
    plan is edited), by its number where the trailer has no hash (the fleet's older commits)."""
    if plan not in _trailer_values(description, PLAN_KEY):
        return None
    for value in _trailer_values(description, TASK_KEY):
        number, _, digest = value.partition(" ")
        digest = digest.strip()
        if digest:
            same = [t.index for t in tasks if task_hash(t.text) == digest]
            if same:
                return number_first(same, number)
            continue
        if number.isdigit() and any(t.index == int(number) for t in tasks):
            return int(number)
    return None


def number_first(indexes: list[int], number: str) -> int:
    """Of tasks with the same text, the one with the commit's number, else the first."""
    return int(number) if number.isdigit() and int(number) in indexes else indexes[0]


def done_tasks(plan: str, tasks: Sequence[PlannedTask], history: Iterable[Commit]
               ) -> dict[int, str]:
    """The plan's tasks whose change is in `history` and was not reverted: {number: the id of
    the commit that landed it}."""
    by_subject: dict[str, int] = {}
    for task in tasks:
        by_subject.setdefault(task.subject, task.index)
    done: dict[int, str | None] = {}          # task -> its landing commit; None: reverted
    effect: dict[str, tuple[int, bool]] = {}   # commit id -> (task, done after it)
    for commit in history:
        subject = commit.description.split("\n", 1)[0].strip()
        reverted = _REVERTS.search(commit.description)
        if reverted is not None:
            target = _effect_of(reverted.group(1), effect)
            if target is None:  # an id we do not know: by the subject it quotes
                quoted = _REVERT_SUBJECT.match(subject)
                named = by_subject.get(quoted.group(1)) if quoted else None
                target = (named, True) if named is not None else None
            if target is not None:
                effect[commit.commit_id] = (target[0], not target[1])
                done[target[0]] = commit.commit_id if not target[1] else None
            continue
        index = _named_task(commit.description, plan, tasks)
        if index is None and not _trailer_values(commit.description, PLAN_KEY):
            index = by_subject.get(subject)  # from before the trailers (another plan's: never)
        if index is not None:
            effect[commit.commit_id] = (index, True)
            done[index] = commit.commit_id
    return {i: commit for i, commit in sorted(done.items()) if commit is not None}


def _effect_of(commit_id: str, effect: dict[str, tuple[int, bool]]) -> tuple[int, bool] | None:
    """What the commit `commit_id` (maybe abbreviated) did to a task."""
    if commit_id in effect:
        return effect[commit_id]
    return next((e for c, e in effect.items() if c.startswith(commit_id)), None)
