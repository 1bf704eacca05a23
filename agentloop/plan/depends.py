"""Which groups wait for which: a line `Depends on: Backend API, Setup` right under a group's `##`
heading, naming groups as `--group` does (agentloop.plan.groups: a number or a heading). Only
that strict form counts; any other wording ("Phase 2 depends on Phase 1") stays text. A group
that does not exist, or a circle, is an error before anything runs.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from agentloop.errors import TaskFileError
from agentloop.plan.groups import find, in_order

_HEADING = re.compile(r" {0,3}## .*|#{2}")     # a level-2 ATX heading
_DEPENDS = re.compile(r"Depends on:[ \t]*(\S.*)")


def found(text: str) -> list[tuple[int, int, str]]:
    """Every `Depends on:` line right under a `##` heading (blank lines between allowed), as
    (heading's line, its line, the names as written); fenced code is passed over."""
    out: list[tuple[int, int, str]] = []
    heading: int | None = None
    fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fence, heading = not fence, None
        elif fence:
            continue
        elif _HEADING.fullmatch(line):
            heading = number
        elif heading is not None and not line.strip():
            continue
        else:
            match = _DEPENDS.fullmatch(line.strip())
            if heading is not None and match is not None:
                out.append((heading, number, match[1]))
            heading = None
    return out


def resolve(tasks: Sequence[tuple[int, str]], text: str) -> dict[str, tuple[str, ...]]:
    """Each group's dependencies by name: `tasks` are (line, group) in file order, `text` the
    plan. A Depends on line belongs to the group of the first task after it, when no other
    `##` heading comes between."""
    names = [group for _, group in tasks]
    headings = [n for n, line in enumerate(text.splitlines(), 1) if _HEADING.fullmatch(line)]
    out: dict[str, tuple[str, ...]] = {}
    for heading, line, written in found(text):
        first = next(((at, group) for at, group in tasks if at > line), None)
        if first is None or any(heading < h < first[0] for h in headings) or first[1] in out:
            continue
        group = first[1]
        wanted = []
        for spec in (s.strip() for s in written.split(",")):
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
