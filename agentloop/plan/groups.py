"""A plan's groups and their names: the one definition behind `--group`, dependencies between
groups, and the branch a group's work is kept on.

A group is named by its number (1-based, in the order its first task appears in the file, as
`--dry-run` numbers it) or by its heading as written, compared without regard to case. A heading
that repeats is a group of its own each time, named with a suffix (`Setup (2)`), so no two
groups share a name and a second `## Setup` never continues the first one's session.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from agentloop.errors import TaskFileError

# The group of the tasks before a plan's first `##` heading.
UNGROUPED = "(ungrouped)"


def numbered(names: Iterable[str]) -> list[str]:
    """The groups' names for a sequence of per-task group headings in file order: a heading
    that comes back after another group started is a new group, with a suffix."""
    seen: dict[str, int] = {}
    taken: set[str] = set()
    out: list[str] = []
    previous: str | None = None
    for heading in names:
        if heading != previous:
            key = heading.casefold()
            seen[key] = seen.get(key, 0) + 1
            current = heading if seen[key] == 1 else _free(heading, seen[key], taken)
            taken.add(current.casefold())
            previous, name = heading, current
        out.append(name)
    return out


def _free(heading: str, count: int, taken: set[str]) -> str:
    while f"{heading} ({count})".casefold() in taken:  # a heading written as "Setup (2)"
        count += 1
    return f"{heading} ({count})"


def in_order(groups: Sequence[str]) -> tuple[str, ...]:
    """Each group once, in the order of its first task."""
    return tuple(dict.fromkeys(groups))


def find(groups: Sequence[str], spec: str) -> str:
    """The group `spec` names: its number or its heading (any case); a clear error otherwise."""
    names = in_order(groups)
    if not names:
        raise TaskFileError("the plan has no groups to choose from")
    wanted = spec.strip()
    if wanted.isdigit():
        number = int(wanted)
        if 1 <= number <= len(names):
            return names[number - 1]
        raise TaskFileError(f"there is no group {number}: the plan has {len(names)} "
                            f"({choices(names)})")
    for name in names:
        if name.casefold() == wanted.casefold():
            return name
    raise TaskFileError(f"no group is named {spec!r}: the plan has {choices(names)}")


def choices(names: Sequence[str]) -> str:
    """The groups as a user can name them: `1 Setup, 2 Backend API`."""
    return ", ".join(f"{n} {name}" for n, name in enumerate(names, 1))
