"""Everything a run can be told, once: the fields are the command line's parameter names, so the
CLI builds this straight from click, and the core reads it as it is.

Combinations that cannot work are found here, before anything is touched (no lock taken, no
.gitignore edited), and end as a usage error (exit 2).
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import PurePath
from typing import Any

from agentloop.errors import UsageError
from agentloop.ondemand import dataclass_now

MAX_ATTEMPTS = 5  # the hard cap per task, whatever the advice
# The variables a hook is given (run/hooks.py). Settings never read them (agentloop.settings), and
# no agent is handed them: a hook that starts agent-loop again starts it clean.
EVENT_PREFIX = "AGENT_LOOP_EVENT_"
MAX_SELECTED = 100_000  # a range wider than any plan is a typo, not a selection


# eq and repr off: nothing compares or prints a run's options. Made by agentloop.ondemand: the
# standard library would compile its __init__ over ~70 fields at every start (about 3 ms, a
# run's largest import cost), and a frozen class's __setattr__ and __delattr__.
@dataclass_now(frozen=True, eq=False, repr=False)
class RunOptions:
    """The command line's options; None for a model means the agent's own default."""

    model: str | None = None
    dry_run: bool = False
    status: bool = False
    as_json: bool = False
    follow: bool = False
    reset: bool = False
    yes: bool = False                 # --reset without asking first in a terminal
    init: bool = False
    vcs: str = "auto"
    allow_dirty: bool = False
    agent: str = "claude"
    agent_given: bool = False         # --agent typed (`--agent claude` too), not the default
    agent_program: str | None = None
    rehearse: bool = False
    task_timeout: float = 7200.0
    max_attempts: int = MAX_ATTEMPTS
    retry_model: str | None = None
    max_limit_waits: int = 5
    max_failures: int = 3
    backoff: float = 30.0
    iterations: int = 1
    task: tuple[str, ...] = ()        # --task as given: numbers, ranges, lists (`3-5,8`)
    group: str | None = None          # --group as given: a number or a heading
    only: tuple[int, ...] = ()        # the tasks selected, resolved once the plan is read
    again: bool = False
    ignore_deps: bool = False         # start a group whose `Depends on:` groups are not done
    include_optional: bool = False
    sleep: float = 0.0
    budget: float | None = None
    task_budget: float | None = None
    distill: bool = True              # a small model writes the commit messages
    distill_model: str | None = None
    review: bool = False
    review_model: str | None = None
    max_review_rounds: int = 3
    check: tuple[str, ...] = ()       # the user's checks (shell command lines), --check
    check_timeout: float = 600.0
    check_rounds: int = 2             # fix runs after a failing check before the attempt fails
    require_changes: bool = False
    git_hooks: bool = False           # the repository's pre-commit and commit-msg, as checks
    tick_boxes: bool = False          # a landed task's box ticked in the plan (run/tick_boxes.py)
    env: tuple[tuple[str, str], ...] = ()    # variables set for the agent, --env NAME=VALUE
    env_exclude: tuple[str, ...] = ()        # variables removed for the agent
    sandbox: bool = False                    # every agent run inside an OS sandbox (sandbox/)
    sandbox_hide: tuple[str, ...] = ()       # more paths no agent sees, with --sandbox
    prices: tuple[tuple[str, str], ...] = ()  # MODEL -> "IN/CACHED/OUT", USD per 1M tokens
    on_finish: str | None = None             # hooks: the user's shell lines (run/hooks.py)
    on_task: str | None = None
    hook_timeout: float = 60.0
    show_settings: bool = False
    # The arguments as given, after `agent-loop`, for lines that repeat the command.
    command: tuple[str, ...] = ()
    parallel: int = 1                 # groups at once, each in a working copy of its own
    workplace: str = "lane"           # lane: the agent in a working copy of its own; checkout
    lane_copy: tuple[str, ...] = ()   # ignored paths copied into a new lane
    lane_link: tuple[str, ...] = ()   # ignored paths a new lane links to
    lane_setup: str | None = None     # the user's shell line, run once in a new lane
    lane_wait: float = 600.0          # seconds a landing waits for the user's edits: then held
    stop_after_running: bool = False  # ask a parallel run going on to wind down
    push: str | None = None           # --group G --push REMOTE: a fleet job (agentloop.fleet.job)
    integrate: bool = False           # --integrate --from REMOTE: the jobs' groups brought in
    from_remote: str | None = None
    serve: bool = False               # the dashboard (agentloop.dashboard), beside the run
    serve_port: int | None = None
    serve_host: str | None = None     # None: 127.0.0.1
    report: str | None = None         # --report FILE: the plan as one standalone HTML file
    notify: tuple[str, ...] = ()      # apprise URLs told when the run needs a person

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> "RunOptions":
        """From click's parameters: every name that is a field, nothing mapped by hand."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in params.items() if k in names})

    @property
    def agent_name(self) -> str:
        """The agent this run drives: a rehearsal stands in for the real one."""
        return "rehearse" if self.rehearse else self.agent


def continue_args(args: tuple[str, ...] | list[str]) -> list[str]:
    """A command's arguments as they continue its run: without --reset (and its --yes), and
    without a `--` (`agent-loop -- -dash.md`), whose plan goes as `./-dash.md`: an option put
    after it (`--budget 0.9`) would be read as a plan."""
    cut = args.index("--") if "--" in args else len(args)
    plans = ["./" + a if a.startswith("-") else a for a in args[cut + 1:]]
    return [a for a in args[:cut] if a not in ("--reset", "--yes")] + plans


# (what is given, what it needs): a flag that only means something beside another one.
_NEEDS = (("as_json", "status", "dry_run", "show_settings", "integrate"), ("follow", "status"),
          ("again", "task", "group", "only"), ("yes", "reset"), ("push", "group"),
          ("integrate", "from_remote"), ("from_remote", "integrate"))


def usage_problem(options: RunOptions) -> str | None:
    """Why these options cannot work together, or None."""
    given = {f.name for f in fields(options)
             if getattr(options, f.name) not in (None, False, ())}
    for flag, *partners in _NEEDS:
        if flag in given and not any(p in given for p in partners):
            wanted = " or ".join(dict.fromkeys(_flag(p) for p in partners))
            return f"{_flag(flag)} goes with {wanted}"
    modes = [m for m in ("status", "dry_run", "init", "show_settings", "stop_after_running",
                         "integrate", "report", "serve") if m in given]
    if len(modes) > 1:
        return f"{' and '.join(_flag(m) for m in modes)} cannot be combined"
    if options.follow and options.as_json:
        return "--follow prints events as lines; it cannot be combined with --json"
    # --dry-run is held to what the real run is held to; --status and --init run no task.
    reads = options.status or options.init
    if options.review and options.vcs == "none" and not reads:
        return ("--review needs version control: the reviewer judges the task's diff, and "
                "--vcs none has none; use --vcs auto, jj or git")
    if any(not c.strip() for c in options.check):
        return "--check needs a command line, e.g. --check \"pytest -q\""
    if options.require_changes and options.vcs == "none" and not reads:
        return ("--require-changes needs version control to see a task's changes; use "
                "--vcs auto, jj or git")
    if options.rehearse and options.vcs == "none":
        return ("--rehearse works in a working copy of its own, apart from your files, and "
                "needs version control for that; drop --vcs none")
    if options.task and options.group is not None:
        return "--task and --group cannot be combined: choose tasks or one group"
    try:
        task_numbers(options.task)
    except ValueError as exc:
        return str(exc)
    if options.parallel > 1 and options.vcs == "none" and not modes:
        return ("--parallel needs version control: each group works in a working copy of its "
                "own; use --vcs auto, jj or git")
    if options.parallel > 1 and options.task:
        return "--parallel runs groups side by side; --task runs the tasks named: choose one"
    if problem := _fleet_problem(options) or _lane_path_problem(options):
        return problem
    if options.rehearse and options.agent != "claude":
        return "--rehearse stands in for the agent; it cannot be combined with --agent"
    return None


def _fleet_problem(options: RunOptions) -> str | None:
    if options.push is not None and options.vcs == "none":
        return "--push needs version control: each task is a commit on the group's branch"
    if options.integrate and (options.group is not None or options.task or options.push):
        return "--integrate brings in every finished group: leave out --group, --task, --push"
    return None


def _lane_path_problem(options: RunOptions) -> str | None:
    """A lane-copy or lane-link path must name something inside the repository."""
    for flag, paths in (("--lane-copy", options.lane_copy), ("--lane-link", options.lane_link)):
        for path in paths:
            parts = PurePath(path).parts
            if not path.strip() or PurePath(path).is_absolute() or ".." in parts or \
                    parts[:1] == (".agent-loop",):
                return (f"{flag} {path!r}: a path inside the repository, relative to its root "
                        "(.env, node_modules)")
    return None


def task_numbers(specs: tuple[str, ...]) -> tuple[int, ...]:
    """The task numbers `--task` names, in plan order: each value a number (`6`), a range
    (`3-5`) or a comma-separated list of both (`3-5,8`); ValueError for one that is neither."""
    numbers: set[int] = set()
    for spec in specs:
        for part in spec.split(","):
            low, dash, high = part.strip().partition("-")
            if not (low.strip().isdigit() and (not dash or high.strip().isdigit())):
                raise ValueError(f"--task {spec!r}: not a task number, range or list "
                                 "(e.g. 6, 3-5 or 3-5,8)")
            first, last = int(low), int(high) if dash else int(low)
            if first < 1:
                raise ValueError(f"--task {spec!r}: tasks are numbered from 1")
            if last < first:
                raise ValueError(f"--task {spec!r}: the range {part.strip()} is empty; "
                                 f"write it low to high ({last}-{first})")
            if last - first >= MAX_SELECTED:
                raise ValueError(f"--task {spec!r}: more than {MAX_SELECTED} tasks")
            numbers.update(range(first, last + 1))
    return tuple(sorted(numbers))


def check_usage(options: RunOptions) -> None:
    """Raise UsageError (exit 2) for options that cannot work together."""
    problem = usage_problem(options)
    if problem:
        raise UsageError(problem)


def _flag(name: str) -> str:
    return {"as_json": "--json", "only": "--task", "dry_run": "--dry-run",
             "task": "--task", "from_remote": "--from"}.get(
        name, "--" + name.replace("_", "-"))
