"""Each task record's log name, `NNN-<group>--<task>` (agentloop.plan.parse): the name its
attempts' logs are written under (agentloop.state.store.log_path), so no two records hold one.
The plan gives each task a name numbered by its place; a record an edited plan makes anew
(agentloop.state.reconcile) gets that name with a number no other record has: an edited task's
own old number (it is that task still), else its place's when free, else one past the largest.
`ls` sorts the logs by that number, and --status and a person read one number as one task.
"""

from __future__ import annotations


class LogNames:
    """The log names the records hold, and the new ones given so far: none is given twice."""

    def __init__(self, taken: set[str]) -> None:
        self._taken = set(taken)
        self._numbers = {_number(name) for name in self._taken}

    def give(self, plan_name: str, was: str | None = None, own: str = "") -> str:
        """A new record's log name: the plan's `plan_name`, numbered as the module doc says
        (`was`: the log name of the old task it is an edit of), `-2`, `-3`... after it while
        taken; `own`, a name the record holds already, it may keep."""
        base = _numbered(plan_name, was, self._numbers)
        name, n = base, 1
        while name in self._taken and name != own:
            n += 1
            name = f"{base}-{n}"
        self._taken.add(name)
        self._numbers.add(_number(name))
        return name


def _number(log_name: str) -> str:
    """The number a log name begins with ("004" of "004-group--task")."""
    return log_name.split("-", 1)[0]


def _numbered(log_name: str, was: str | None, numbers: set[str]) -> str:
    """The plan's `log_name` with a number no other record has (`numbers`): `was`'s (the old
    task's log name), else its own when free, else one past the largest. The kept records keep
    theirs, so after a deletion above it the place's number can be a kept task's."""
    own, rest = log_name.split("-", 1) if "-" in log_name else ("", log_name)
    if was is not None:
        own = _number(was)
    elif own in numbers or not own.isdigit():
        width = len(own) if own.isdigit() else 3
        own = f"{max((int(n) for n in numbers if n.isdigit()), default=0) + 1:0{width}d}"
    return f"{own}-{rest}"
