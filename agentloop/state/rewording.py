"""Which new task is an old one reworded: an edited plan's tasks that matched no saved record
are paired, slot by slot, with the old ones that matched none (agentloop.state.reconcile), by
how alike their words are. A completed task pairs only with words like its own: a pair keeps it
done, and a new task that is not it reworded would never run. Words alike in letters that say
other work (an opposite, another number) are not alike. A done task moved under another heading
and lightly reworded in the same edit is paired across the plan (`moved`), where its old
heading, if gone, was renamed (merged, split), not replaced by another section
(`mostly_among`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from functools import lru_cache

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
# A done task moved under another heading is matched across the plan, not in its own place: only
# a light reword ("add the login form", "add a login form": 0.88) keeps it done there.
_MOVED_ALIKE = 0.8
# Words alike in letters that say other work (_other_work): each pair either way round, found
# inside a word too ("login", "logout"); and prefixes that turn a word into its opposite.
_OPPOSITES = (("get", "set"), ("in", "out"), ("up", "down"), ("add", "remove"),
              ("show", "hide"), ("open", "close"), ("start", "stop"), ("en", "dis"),
              ("en", "de"), ("im", "ex"), ("in", "ex"), ("in", "de"), ("push", "pull"),
              ("min", "max"), ("before", "after"), ("read", "write"), ("on", "off"),
              ("true", "false"), ("left", "right"), ("first", "last"), ("client", "server"),
              ("allow", "deny"), ("accept", "reject"), ("upper", "lower"), ("asc", "desc"),
              ("inc", "dec"), ("grant", "revoke"), ("attach", "detach"))
_NEGATING = ("un", "de", "dis", "non", "anti", "in", "im", "ir", "il")
_NEGATIONS = frozenset({"not", "no", "never", "without", "dont", "don", "nor"})
# Words that give the words around them a direction: swapped around one, the work is another.
_DIRECTED = frozenset({"to", "into", "from", "than", "vs", "versus", "over", "onto"})
# Numbers spelt out, read as digits where a task's digits differ (_other_work).
_SPELT = {w: str(n) for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}
# A first line's own numbering: `1.`, `1.2.`, `2)`, `T003` (spec-kit's task ids); not `o2` nor
# `v2`, which name what the task is about, nor a bare `3` (`3 retries`), which counts something.
_NUMBERING = re.compile(r"^\s*(?:\d+(?:\.\d+)*[.)]|T\d+)(?=\s|$)")
# The same, or a bare dotted number: Kiro's `1.2 Write the client`, or a quantity (`1.5 second
# timeout`, `10.0.0.1 blocked`). The list's numbering only in a numbered list (`listed`): alone
# among its neighbours it says what the task is about.
_OUTLINE = re.compile(r"^\s*(?:\d+(?:\.\d+)+[.)]?|\d+[.)]|T\d+)(?=\s|$)")


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
    numbered = listed(fresh, places) if min(n, m) else frozenset()
    if min(n, m) == 0:
        pass
    elif n == m and all(o.status != S.COMPLETED or
                        _likeness(fresh[places[k]], o, places[k] in numbered) >= _DONE_ALIKE
                        for k, o in enumerate(old)):
        pairs = [(k, k) for k in range(n)]   # all paired in order: the only way to pair them all
    elif n * m > _ALIKE_AT_MOST:
        pairs = _pair_ahead(places, fresh, old, numbered)
    else:
        like = [[_likeness(fresh[i], o, i in numbered) for o in old] for i in places]
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


def _pair_ahead(places: list[int], fresh: list[TaskState], old: list[TaskState],
                numbered: frozenset[int]) -> list[tuple[int, int]]:
    """A large slot's pairs, walked in order (_walk), a done task only with words alike."""
    def allowed(j: int, k: int) -> bool:
        return old[k].status != S.COMPLETED or \
            _likeness(fresh[places[j]], old[k], places[j] in numbered) >= _DONE_ALIKE

    return _walk(len(places), len(old), allowed)


def _walk(n: int, m: int, allowed: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """Pairs of n new and m old tasks, walked in order as a diff walks two files: where the
    next new task cannot pair with the next old one, whichever of the two finds a partner
    sooner within `_AHEAD` tasks is kept for it (the tasks passed over are added, or removed),
    else both are passed over. A task added at the top of a reworded plan is an addition; the
    done tasks after it pair with their own new words, not one later each."""
    pairs: list[tuple[int, int]] = []
    j, k = 0, 0
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


def moved(olds: list[TaskState], news: list[TaskState],
          may: Callable[[TaskState, TaskState], bool],
          numbered: frozenset[int] = frozenset()) -> list[tuple[int, int]]:
    """Done tasks (`olds`, in their old order) moved under another heading and reworded in the
    same edit, paired with the new tasks nothing else took (`news`, in file order): (new, old)
    positions in those lists. Only a light reword (`_MOVED_ALIKE`), never words that say other
    work (`_other_work`), and where `may` allows the two groups: a task deleted in one place
    and another added elsewhere are a removal and an addition, and the added one runs. Walked
    in order (a renamed heading keeps its tasks' order), then, for a few left over, each with
    each, the most alike first. `numbered`: the positions in `news` of the tasks that open with
    their list's numbering (`listed`)."""
    def allowed(j: int, k: int) -> bool:
        new, old = news[j], olds[k]
        return new.group != old.group and \
            _likeness(new, old, j in numbered) >= _MOVED_ALIKE and may(old, new)

    pairs = _walk(len(news), len(olds), allowed)
    took_new, took_old = {j for j, _ in pairs}, {k for _, k in pairs}
    free_new = [j for j in range(len(news)) if j not in took_new]
    free_old = [k for k in range(len(olds)) if k not in took_old]
    if free_new and free_old and len(free_new) * len(free_old) <= _ALIKE_AT_MOST:
        scored = sorted(((_likeness(news[j], olds[k], j in numbered), j, k)
                         for j in free_new for k in free_old
                         if allowed(j, k)), key=lambda t: -t[0])
        for _, j, k in scored:
            if j not in took_new and k not in took_old:
                pairs.append((j, k))
                took_new.add(j)
                took_old.add(k)
    return pairs


def mostly_among(these: list[TaskState], those: list[TaskState]) -> bool:
    """Whether most of `these` tasks are among `those`, the same or lightly reworded: a gone
    heading's tasks among the new headings' (renamed, merged or split, not another section put
    in its place). A new section's `add tests` is not the old one's because both had one."""
    def same(j: int, k: int) -> bool:
        return task_key(these[j].task) == task_key(those[k].task) or \
            _likeness(these[j], those[k]) >= _MOVED_ALIKE

    return 2 * len(_walk(len(these), len(those), same)) > len(these)


def alike(new: TaskState, old: TaskState) -> bool:
    """Whether `new` reads as `old` reworded, not another task put where it stood (it deleted,
    one added there): its first line alike (as a done task's words must be to stay done), or
    saying the other's words at length, or the lines under it unchanged. The whole texts are
    not compared: tasks of one plan often share the lines under them (a command, a check),
    which would make any two alike. Words only: the pairing never asks."""
    first, _, rest = new.task.partition("\n")
    was, _, had = old.task.partition("\n")
    first, was = task_key(first), task_key(was)
    if _other_work(first, was):
        return False
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


def _likeness(new: TaskState, old: TaskState, numbered: bool = True) -> float:
    """How alike two tasks' words are, 0 to 1 (_texts_alike); 0 where they say other work.
    `numbered`: whether a bare dotted number opening `new` is its list's numbering (listed)."""
    a, b = sorted((new.task, old.task))   # either way round: one remembered likeness
    return _alike(a, b, numbered)


@lru_cache(maxsize=1024)
def _alike(a: str, b: str, numbered: bool = True) -> float:
    """_texts_alike of two tasks' texts, 0 where their first lines say other work (the lines
    under a task hold commands and file names, whose numbers change with any detail);
    remembered: a renamed heading's tasks are compared once to tell the section renamed, then
    again to pair them."""
    score = _texts_alike(task_key(a), task_key(b))
    if score < min(_DONE_ALIKE, _MOVED_ALIKE):
        return score
    return 0.0 if _other_work(task_key(a.partition("\n")[0]),
                              task_key(b.partition("\n")[0]), numbered) else score


def listed(fresh: list[TaskState], places: list[int]) -> frozenset[int]:
    """The `places` in `fresh` (a plan's tasks in order) whose first line opens with a bare
    dotted number (`1.2`) that is their list's numbering: a task next to it under the same
    heading opens with a number too (`1.1`, `2.`, `T003`). One alone among tasks that have none
    (`1.5 second timeout`) names a quantity: changed, it is other work."""
    def opens(i: int, group: str) -> bool:
        return 0 <= i < len(fresh) and fresh[i].group == group and \
            bool(_OUTLINE.match(fresh[i].task))

    return frozenset(i for i in places if not _NUMBERING.match(fresh[i].task) and
                     _OUTLINE.match(fresh[i].task) and
                     (opens(i - 1, fresh[i].group) or opens(i + 1, fresh[i].group)))


def _other_work(a: str, b: str, numbered: bool = True) -> bool:
    """Whether two texts alike in letters say other work: an opposite put for a word (`lock`
    and `unlock`, `getter` and `setter`, `test_login` and `test_logout`), a `not` added, the
    two ends of a conversion swapped (`json to yaml`, `yaml to json`), another number (`step
    1`, `step 2`; a list's own numbering aside, which an inserted task shifts; a bare dotted
    number opening a line is that numbering when `numbered`, else a quantity: listed)."""
    # A number spelt out only ever makes two the same (`2 tests`, `two tests`), never other
    # work: `two` is a name as often as a count (`task eight`, `task eight, reworded`).
    if _numbers(a, numbered=numbered) != _numbers(b, numbered=numbered) and \
            _numbers(a, True, numbered) != _numbers(b, True, numbered):
        return True
    from difflib import SequenceMatcher

    x, y = _parts(a), _parts(b)
    if x != y and sorted(x) == sorted(y) and _DIRECTED & set(x):
        return True
    for op, i1, i2, j1, j2 in SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if op == "equal" or "".join(x[i1:i2]) == "".join(y[j1:j2]):
            continue   # the same letters split another way: `noop`, `no-op`
        # Whether a negation is there, not which: `don't` and `do not` are one.
        if bool(_NEGATIONS & set(x[i1:i2])) != bool(_NEGATIONS & set(y[j1:j2])):
            return True
        if op == "replace" and any(_opposite(v, w) for v in x[i1:i2] for w in y[j1:j2]):
            return True
    return False


def _opposite(a: str, b: str) -> bool:
    """Whether word `b` is `a` said the other way round: one of `_OPPOSITES` put for the
    other in it, or a negating prefix added."""
    for one, other in _OPPOSITES:
        for x, y in ((one, other), (other, one)):
            at = a.find(x)
            while at >= 0:
                if a[:at] + y + a[at + len(x):] == b:
                    return True
                at = a.find(x, at + 1)
    return any(b == p + a or a == p + b for p in _NEGATING)


def _numbers(text: str, spelt: bool = False, numbered: bool = True) -> list[str]:
    """The numbers a task's words name, the list numbering of its first line aside (`2.`,
    `T003`, and `1.2` when `numbered`: an inserted task renumbers the ones after it, which are
    the same tasks still). `spelt`: numbers spelt out too, as digits (`two` as `2`)."""
    text = (_OUTLINE if numbered else _NUMBERING).sub("", text, count=1)
    words = re.findall(r"\d+|[^\W\d_]+", text.casefold())
    return [_SPELT.get(w, w) for w in words if w.isdigit() or (spelt and w in _SPELT)]


def _parts(text: str) -> list[str]:
    """The words of `text`, case folded, `test_login` read as `test` and `login`."""
    return re.findall(r"[^\W_]+", text.casefold())


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
