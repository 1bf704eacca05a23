"""The operating-system sandbox every agent run can go through (`--sandbox`).

A `Policy` says what one agent run may write, what it must not write although it lies inside
what it may, and what it must not see at all; `agentloop.sandbox.policy` derives it from the
working copy, the VCS data beside it and the agent's own home folders. A `Tool` turns a policy
and an argv into the argv that runs it confined: one module per operating-system tool, named in
`TOOLS` (bubblewrap on Linux; macOS sandbox-exec would be one more module and one more entry).
`Sandbox` is what a run hands the agents: the tool and the run's fixed facts together.

Owns: what an agent may touch. May import: proc, errors.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import field
from pathlib import Path
from typing import Callable, ContextManager, Mapping, Protocol, Sequence

from agentloop.errors import SandboxUnavailable
from agentloop.ondemand import dataclass

# Where the agents' homes are they need to know with or without a sandbox (agents.claude):
# one definition, kept where a run that never opens a sandbox reads it.
from agentloop.proc.environ import home_of
from agentloop.sandbox.policy import SECRETS, Kept, Policy, policy_for

__all__ = ["SECRETS", "Kept", "Policy", "Sandbox", "SandboxUnavailable", "Tool", "home_of",
           "open_sandbox", "tool_for"]


class Tool(Protocol):
    """An operating-system sandbox program."""

    name: str
    package: str   # what to install to get it, for the refusal's one line

    def check(self) -> None:
        """Raise SandboxUnavailable, in one line, when it cannot confine anything here."""

    def wrap(self, argv: Sequence[str], policy: Policy) -> list[str]:
        """The argv that runs `argv` under `policy`."""

    def traits(self) -> tuple[str, ...]:
        """What it gives besides the policy's paths, in a few words each (for --dry-run)."""


# sys.platform -> "module:class"; imported only when a run asks for the sandbox.
TOOLS: dict[str, str] = {
    "linux": "agentloop.sandbox.bubblewrap:Bubblewrap",
}


def tool_for(platform: str = sys.platform) -> Tool:
    """The sandbox tool of this operating system; SandboxUnavailable where there is none yet."""
    entry = TOOLS.get(platform)
    if entry is None:
        raise SandboxUnavailable(f"--sandbox is not available on {platform} yet (Linux only, "
                                 f"with bubblewrap): run without --sandbox")
    module, name = entry.split(":")
    tool: Tool = getattr(importlib.import_module(module), name)()
    return tool


@dataclass(frozen=True)
class Sandbox:
    """The sandbox of one run: its tool, the repository, the state folder that no agent may
    write, the home folder, the user's extra hidden paths (`sandbox-hide`), and where what it
    did after an agent run is said for people (`tell`: the run's console), or None."""

    tool: Tool
    root: Path
    state_dir: Path
    home: Path = field(default_factory=Path.home)
    hide: tuple[str, ...] = ()
    tell: Callable[[str], None] | None = None

    def wrap(self, argv: Sequence[str], workdir: Path, homes: Sequence[Path] = (),
             writes: bool = True, kept: Sequence[Kept] = ()) -> list[str]:
        """`argv` confined to `workdir` (read-only when not `writes`: the reviewer, helper
        calls) and the agent's own `homes`, less what in them stays read-only (`kept`)."""
        return self.tool.wrap(argv, policy_for(self.root, self.state_dir, self.home, self.hide,
                                               workdir, homes, writes, argv[0] if argv else None,
                                               kept))

    def keeping_links(self, kept: Sequence[Kept],
                      write: Callable[[str], None] | None = None) -> ContextManager[None]:
        """Around one agent run: the `kept` paths that are links made as they were once it
        ended (agentloop.sandbox.links), said to `tell` and to `write` (the run's log)."""
        from agentloop.sandbox import links

        return links.held(kept, self.home, [said for said in (self.tell, write) if said])

    def hidden(self) -> list[str]:
        """What no agent sees, as the user would write it."""
        return [*SECRETS, ".env* outside the working copy", *self.hide]

    def describe(self) -> tuple[str, ...]:
        """What an agent may do inside, one short line each, for --dry-run."""
        return (f"sandbox: on ({self.tool.name}): agents write only their working copy, its VCS "
                f"data, their own home folder (~/.claude, ~/.codex) and a private /tmp",
                "sandbox: read-only: the rest of the system and the home folder; .agent-loop/, "
                ".git/config and .git/hooks; the agent's own settings, hooks and instructions",
                "sandbox: hidden: " + ", ".join(self.hidden()),
                "sandbox: " + ", ".join(self.tool.traits()))

    def summary(self) -> str:
        """The same in one line, for the run's first line."""
        hidden = self.hidden()
        return (f"sandbox: on ({self.tool.name}): agents write only their working copy, its VCS "
                f"data and their own home folder; {', '.join(hidden[:2])} and {len(hidden) - 2} "
                f"more hidden; {', '.join(self.tool.traits())} (--dry-run lists it all)")


def open_sandbox(root: Path, state_dir: Path, hide: Sequence[str] = (),
                 env: Mapping[str, str] | None = None,
                 tell: Callable[[str], None] | None = None) -> Sandbox:
    """The sandbox of a run in `root`, checked here and now: SandboxUnavailable, in one line,
    before any agent runs, where this machine cannot make one. Never a run without it."""
    tool = tool_for()
    tool.check()
    return Sandbox(tool, root, state_dir, home_of(env), tuple(hide), tell)
