"""The plan `--init` writes: small, commented, and runnable in seconds with --rehearse."""

from __future__ import annotations

STARTER = """\
# An example plan for agent-loop

Text before the first `##` heading is the plan's context: every fresh agent session reads it.
Goal: a tiny greeting tool, to see how agent-loop works.

## Setup

- [ ] Create `hello.txt` containing the line `Hello from agent-loop`.
- [ ] Add a `README-hello.md` that says in one sentence what `hello.txt` is for.

## Polish

- [ ] Append the line `Goodbye from agent-loop` to `hello.txt`.
- [x] A ticked box is done already: agent-loop skips it.

Plain bullets in a checklist plan are notes, never run:
- Keep every change small.
"""


def starter_plan() -> str:
    """The text of the example plan."""
    return STARTER
