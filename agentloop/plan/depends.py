"""Which groups wait for which: a line `Depends on: Backend API, Setup` right under a group's `##`
heading, naming groups as `--group` does (agentloop.plan.groups: a number or a heading). Only
that strict form counts; any other wording ("Phase 2 depends on Phase 1") stays text. A group
that does not exist, or a circle, is an error before anything runs.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from agentloop.errors import TaskFileError
from agentloop.plan.groups import find, in_order


def resolve(names: Sequence[str], found: Mapping[int, tuple[int, str]]
            ) -> dict[str, tuple[str, ...]]:
    """Each group's dependencies by name, from the lines read (task index -> (line, text))."""
    out: dict[str, tuple[str, ...]] = {}
    for index, (line, text) in sorted(found.items()):
        group = names[index]
        if group in out:
            continue
        wanted = []
        for spec in (s.strip() for s in text.split(",")):
            if not spec:
                continue
            try:
                other = find(names, spec)
            except TaskFileError as exc:
                raise TaskFileError(f"line {line}: Depends on: {exc}") from None
            if other == group:
                raise TaskFileError(f"line {line}: group {group!r} cannot depend on itself")
            wanted.append(other)
        out[group] = tuple(dict.fromkeys(wanted))
    _no_circle(out)
    return out


def _no_circle(depends: Mapping[str, Sequence[str]]) -> None:
    done: set[str] = set()

    def visit(group: str, path: list[str]) -> None:
        if group in path:
            circle = " -> ".join(path[path.index(group):] + [group])
            raise TaskFileError(f"the groups' dependencies go round in a circle: {circle}")
        if group in done:
            return
        for other in depends.get(group, ()):
            visit(other, path + [group])
        done.add(group)

    for group in depends:
        visit(group, [])


def waves(groups: Sequence[str], depends: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The groups in the order they can start: each wave waits only for earlier waves."""
    order, placed, out = list(in_order(groups)), set[str](), list[list[str]]()
    while len(placed) < len(order):
        wave = [g for g in order if g not in placed
                and all(d in placed or d not in order for d in depends.get(g, ()))]
        if not wave:  # cannot happen after resolve(); never loop forever
            wave = [g for g in order if g not in placed]
        out.append(wave)
        placed.update(wave)
    return out
