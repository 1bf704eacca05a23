"""Which new task is an old one reworded: an edited plan's tasks that matched no saved record
are paired, slot by slot, with the old ones that matched none (agentloop.state.reconcile), by
how alike their words are. A completed task pairs only with words like its own: a pair keeps it
done, and a new task that is not it reworded would never run.
"""

from __future__ import annotations

import re
from collections import deque

from agentloop.plan.boxes import task_key
from agentloop.state.schema import TaskState
from agentloop.state.status import TaskStatus as S

_ALIKE_AT_MOST = 400  # new times old tasks of one slot compared by their words; more pair in order
_AHEAD = 16           # how far a large slot's walk looks ahead for a task's partner
# How alike a new task's words must be to a completed one's to be it reworded and stay done
# (_likeness: "fix the parser" and "fix the parsers" 0.97, "c" and "c, better" 0.67, "two"
# and "three!" 0.44);
# the cut-off difflib's own get_close_matches uses.
_DONE_ALIKE = 0.6


def pair(places: list[int], fresh: list[TaskState],
         olds: deque[TaskState]) -> list[tuple[int, TaskState]]:
    """The new tasks of one slot (their places) paired with its unmatched old ones (taken out
    of `olds`), in order, by one rule whatever the counts: as many pairs as can be, and among
    those ways the one whose paired words are most alike. A completed old task pairs only with
    a new one whose words are like its own (`_done_alike`): a pair keeps it done, and a new
    task that is not it reworded would never run. So with a done task deleted beside a typo
    fixed and a task added, the fix pairs with its own old words and the added task runs.
    A pending old task pairs whatever the words (an edit runs anyway; it names the old
    change). A slot of more new times old tasks than `_ALIKE_AT_MOST` pairs by a walk in order
    (`_pair_ahead`: each new task's words would be compared with each old one's), a done one
    still only when alike."""
    old = list(olds)
    n, m = len(places), len(old)
    pairs: list[tuple[int, int]] = []
    if min(n, m) == 0:
        pass
    elif n == m and all(o.status != S.COMPLETED or
                        _likeness(fresh[places[k]], o) >= _DONE_ALIKE for k, o in enumerate(old)):
        pairs = [(k, k) for k in range(n)]   # all paired in order: the only way to pair them all
    elif n * m > _ALIKE_AT_MOST:
        pairs = _pair_ahead(places, fresh, old)
    else:
        like = [[_likeness(fresh[i], o) for o in old] for i in places]
        never = -1.0
        allowed = [[never if o.status == S.COMPLETED and like[j][k] < _DONE_ALIKE
                    else like[j][k] for k, o in enumerate(old)] for j in range(n)]
        # best[j][k]: the most pairs, then the most alike, of the first j new and k old.
        best = [[(0, 0.0)] * (m + 1) for _ in range(n + 1)]
        for j in range(1, n + 1):
            for k in range(1, m + 1):
                took = best[j - 1][k - 1]
                best[j][k] = max(best[j - 1][k], best[j][k - 1])
                if allowed[j - 1][k - 1] != never:
                    best[j][k] = max(best[j][k],
                                     (took[0] + 1, took[1] + allowed[j - 1][k - 1]))
        j, k = n, m
        while j and k:      # ties left to the later ones unpaired: the first old pairs first
            if best[j][k] == best[j][k - 1]:
                k -= 1
            elif best[j][k] == best[j - 1][k]:
                j -= 1
            else:
                pairs.append((j - 1, k - 1))
                j, k = j - 1, k - 1
        pairs.reverse()
    taken = {k for _, k in pairs}
    olds.clear()
    olds.extend(o for k, o in enumerate(old) if k not in taken)
    return [(places[j], old[k]) for j, k in pairs]


def _pair_ahead(places: list[int], fresh: list[TaskState],
                old: list[TaskState]) -> list[tuple[int, int]]:
    """A large slot's pairs, walked in order as a diff walks two files: where the next new
    task cannot pair with the next old one, whichever of the two finds a partner sooner within
    `_AHEAD` tasks is kept for it (the tasks passed over are added, or removed), else both are
    passed over. A task added at the top of a reworded plan is an addition; the done tasks
    after it pair with their own new words, not one later each."""
    def allowed(j: int, k: int) -> bool:
        return old[k].status != S.COMPLETED or \
            _likeness(fresh[places[j]], old[k]) >= _DONE_ALIKE

    pairs: list[tuple[int, int]] = []
    j, k, n, m = 0, 0, len(places), len(old)
    while j < n and k < m:
        if allowed(j, k):
            pairs.append((j, k))
            j, k = j + 1, k + 1
            continue
        new_ahead = next((y for y in range(j + 1, min(n, j + _AHEAD)) if allowed(y, k)), None)
        old_ahead = next((x for x in range(k + 1, min(m, k + _AHEAD)) if allowed(j, x)), None)
        if new_ahead is not None and (old_ahead is None or new_ahead - j <= old_ahead - k):
            j = new_ahead
        elif old_ahead is not None:
            k = old_ahead
        else:
            j, k = j + 1, k + 1
    return pairs


def alike(new: TaskState, old: TaskState) -> bool:
    """Whether `new` reads as `old` reworded, not another task put where it stood (it deleted,
    one added there): its first line alike (as a done task's words must be to stay done), or
    saying the other's words at length, or the lines under it unchanged. The whole texts are
    not compared: tasks of one plan often share the lines under them (a command, a check),
    which would make any two alike. Words only: the pairing never asks."""
    first, _, rest = new.task.partition("\n")
    was, _, had = old.task.partition("\n")
    first, was = task_key(first), task_key(was)
    return _texts_alike(first, was) >= _DONE_ALIKE or _said_at_length(first, was) or \
        task_key(rest) == task_key(had) != ""


def _said_at_length(a: str, b: str) -> bool:
    """Whether one of two short texts holds every word of the other, in order, words added
    between and after: "Add login page" said again as "Add a login page with OAuth and
    remember-me" (its likeness 0.5: most of the longer one's words are new). Two words at
    least, so that a one-word task does not make every task that mentions it a reword."""
    words = sorted((_words(a), _words(b)), key=len)
    short, long = words
    if len(short) < 2:
        return False
    rest = iter(long)
    return all(word in rest for word in short)   # `in` moves on through `rest`: in order


def _likeness(new: TaskState, old: TaskState) -> float:
    """How alike two tasks' words are, 0 to 1 (_texts_alike)."""
    return _texts_alike(task_key(new.task), task_key(old.task))


def _texts_alike(a: str, b: str) -> float:
    """How alike two texts are, 0 to 1: difflib's ratio of the folded texts, or of their lists
    of words where that is higher (a typo fixed changes letters; a word added to a short task
    changes most of its letters and few of its words)."""
    from difflib import SequenceMatcher  # a slot whose words are compared only

    return max(SequenceMatcher(None, a, b).ratio(),
               SequenceMatcher(None, _words(a), _words(b)).ratio())


def _words(text: str) -> list[str]:
    """The words of `text`, case folded."""
    return re.findall(r"\w+", text.casefold())
