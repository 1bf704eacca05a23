"""Everything a run can be told, once: the fields are the command line's parameter names, so the
CLI builds this straight from click, and the core reads it as it is.

Combinations that cannot work are found here, before anything is touched (no lock taken, no
.gitignore edited), and end as a usage error (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from agentloop.errors import UsageError

MAX_ATTEMPTS = 5  # the hard cap per task, whatever the advice


@dataclass(frozen=True)
class RunOptions:
    """The command line's options; None for a model means the agent's own default."""

    model: str | None = None
    dry_run: bool = False
    status: bool = False
    as_json: bool = False
    follow: bool = False
    reset: bool = False
    init: bool = False
    vcs: str = "auto"
    allow_dirty: bool = False
    agent: str = "claude"
    agent_program: str | None = None
    rehearse: bool = False
    task_timeout: float = 7200.0
    max_attempts: int = MAX_ATTEMPTS
    retry_model: str | None = None
    max_limit_waits: int = 5
    max_failures: int = 3
    backoff: float = 30.0
    iterations: int = 1
    only: int | None = None
    again: bool = False
    include_optional: bool = False
    sleep: float = 0.0
    budget: float | None = None
    task_budget: float | None = None
    no_distill: bool = False
    distill_model: str | None = None
    review: bool = False
    review_model: str | None = None
    max_review_rounds: int = 3
    check: tuple[str, ...] = ()       # the user's checks (shell command lines), --check
    check_timeout: float = 600.0
    check_rounds: int = 2             # fix runs after a failing check before the attempt fails
    require_changes: bool = False
    parallel: int = 1                 # groups at once, each in a working copy of its own

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> "RunOptions":
        """From click's parameters: every name that is a field, nothing mapped by hand."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in params.items() if k in names})

    @property
    def agent_name(self) -> str:
        """The agent this run drives: a rehearsal stands in for the real one."""
        return "rehearse" if self.rehearse else self.agent

    @property
    def distill(self) -> bool:
        """Whether a small model writes the commit messages."""
        return not self.no_distill


# (what is given, what it needs): a flag that only means something beside another one.
_NEEDS = (("as_json", "status", "dry_run"), ("follow", "status"), ("again", "only"))


def usage_problem(options: RunOptions) -> str | None:
    """Why these options cannot work together, or None."""
    given = {f.name for f in fields(options) if getattr(options, f.name) not in (None, False)}
    for flag, *partners in _NEEDS:
        if flag in given and not any(p in given for p in partners):
            wanted = " or ".join(_flag(p) for p in partners)
            return f"{_flag(flag)} goes with {wanted}"
    modes = [m for m in ("status", "dry_run", "init") if m in given]
    if len(modes) > 1:
        return f"{' and '.join(_flag(m) for m in modes)} cannot be combined"
    if options.follow and options.as_json:
        return "--follow prints events as lines; it cannot be combined with --json"
    if options.review and options.vcs == "none" and not modes:
        return ("--review needs version control: the reviewer judges the task's diff, and "
                "--vcs none has none; use --vcs auto, jj or git")
    if any(not c.strip() for c in options.check):
        return "--check needs a command line, e.g. --check \"pytest -q\""
    if options.require_changes and options.vcs == "none" and not modes:
        return ("--require-changes needs version control to see a task's changes; use "
                "--vcs auto, jj or git")
    if options.parallel > 1 and options.vcs == "none" and not modes:
        return ("--parallel needs version control: each group works in a worktree of its own; "
                "use --vcs auto or git")
    if options.parallel > 1 and options.only is not None:
        return "--parallel runs groups side by side; --task runs one task: choose one"
    if options.rehearse and options.agent != "claude":
        return "--rehearse stands in for the agent; it cannot be combined with --agent"
    return None


def check_usage(options: RunOptions) -> None:
    """Raise UsageError (exit 2) for options that cannot work together."""
    problem = usage_problem(options)
    if problem:
        raise UsageError(problem)


def _flag(name: str) -> str:
    return {"as_json": "--json", "only": "--task", "dry_run": "--dry-run"}.get(
        name, "--" + name.replace("_", "-"))
