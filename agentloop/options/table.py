"""The command line's options, once, as plain data: what each option is called, what it takes,
its default and its help. Two doors read it: click's command (agentloop.cli, which makes each
entry a click option with the same words, so --help and every error are click's own), and a
plain run's command line read before click is imported (agentloop.console.plain), which takes
only what it fully understands and leaves the rest to click. The settings read the same
entries for their keys' kinds and types (agentloop.settings.schema).

Imports nothing: a plain run reads it on its way to the first agent."""

from __future__ import annotations

# typing for the checker only: a plain run imports this module before typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LANE_WAIT = 600.0  # ten minutes: a user who steps away for coffee is not held


class Type:
    """What an option's value is, without click: `kind` names it (agentloop.settings.schema
    makes each kind's click type), `choices` and the bounds say what a choice or a range
    allows."""

    __slots__ = ("kind", "choices", "low", "high", "low_open")

    def __init__(self, kind: str, choices: tuple[str, ...] = (), low: float | None = None,
                 high: float | None = None, low_open: bool = False) -> None:
        self.kind, self.choices, self.low, self.high = kind, choices, low, high
        self.low_open = low_open   # `low` itself refused: more than it


def Choice(*choices: str) -> Type:  # noqa: N802 - read as click's name for the same thing
    return Type("choice", choices)


def IntRange(min: int | None = None, max: int | None = None) -> Type:  # noqa: N802
    return Type("int", low=min, high=max)


def FloatRange(min: float | None = None, max: float | None = None,  # noqa: N802
               min_open: bool = False) -> Type:
    return Type("float", low=min, high=max, low_open=min_open)


AGENT = Type("agent")                  # an agent's name (agentloop.agents), never "rehearse"
ASSIGNMENT = Type("assignment")        # NAME=VALUE
MODEL_RATES = Type("model_rates")      # MODEL=IN/CACHED/OUT
VARIABLE_NAME = Type("variable_name")  # an environment variable's name
DURATION = Type("duration")            # seconds, or 90s, 10m, 1h


class Option:
    """One option as click.option takes it: its declarations and its keyword arguments."""

    __slots__ = ("decls", "kwargs", "name", "opts", "secondary")

    def __init__(self, decls: tuple[str, ...], kwargs: dict[str, Any]) -> None:
        self.decls, self.kwargs = decls, kwargs
        # click's own rule for the parameter's name: a declaration that is a name, else the
        # longest-prefixed option's, dashes as underscores (tests/cli/test_plain.py holds it)
        names = [d for d in decls if d.isidentifier()]
        self.opts = [d.split("/")[0].strip() for d in decls if not d.isidentifier()]
        self.secondary = [d.split("/")[1].strip() for d in decls if "/" in d]
        longest = max(self.opts, key=lambda o: len(o) - len(o.lstrip("-")))
        self.name = names[0] if names else longest.lstrip("-").replace("-", "_").lower()

    @property
    def type(self) -> Type | None:
        return self.kwargs.get("type")

    @property
    def is_flag(self) -> bool:
        return bool(self.kwargs.get("is_flag")) or bool(self.secondary)

    @property
    def multiple(self) -> bool:
        return bool(self.kwargs.get("multiple"))

    @property
    def kind(self) -> str:
        """How a setting of this option is written: flag, list, table or one value."""
        if self.multiple:
            return "table" if self.type in (ASSIGNMENT, MODEL_RATES) else "list"
        return "flag" if self.is_flag else "value"


def option(*decls: str, **kwargs: Any) -> Option:
    return Option(decls, kwargs)


# In --help's order; its sections: an option added here needs its word in
# console.help.SECTIONS too.
OPTIONS = (
    option("--agent", type=AGENT,
           default="claude", show_default=True,
           help="The coding agent that does the tasks (a run goes on with the one it began "
                "with unless --reset)."),
    option("--agent-program", "--claude", "agent_program", metavar="PATH", default=None,
           help="The agent's program [default: claude or codex on PATH; env "
                "AGENT_LOOP_CLAUDE / AGENT_LOOP_CODEX]."),
    option("--model", metavar="NAME", default=None,
           help="Model for the tasks [default: the agent's; claude: opus]."),
    option("--dry-run", is_flag=True, help="Show what would run; run and write nothing."),
    option("--status", is_flag=True, help="Show where each task stands."),
    option("--json", "as_json", is_flag=True,
           help="With --status, --dry-run, --show-settings or --integrate: print JSON."),
    option("--follow", is_flag=True,
           help="With --status: print the newest run's events as they happen."),
    option("--init", is_flag=True, help="Write a commented example plan to TASKS_MD."),
    option("--rehearse", is_flag=True,
           help="Run the whole loop offline with a stand-in agent: each task makes a small "
                "visible edit, and its log says what a real run would send. Costs nothing, "
                "needs a git or jj repository, and works in a copy and a state of its own: "
                "your branch, files and progress stay as they are. With --status: the last "
                "rehearsal's."),
    option("--reset", is_flag=True,
           help="Archive the state and logs, then run the whole plan again from its first "
                "task: done tasks are done again, and paid for again. In a terminal it asks "
                "first; with --dry-run it shows what would run."),
    option("--yes", is_flag=True, help="With --reset: do not ask before redoing done tasks."),
    option("--vcs", type=Choice("auto", "jj", "git", "none"), default="auto",
           show_default=True, help="Where each task's change goes."),
    option("--allow-dirty/--no-allow-dirty", default=False,
           help="git, with the agent in your checkout (--workplace checkout): run even "
                "with uncommitted changes (they stay out of task commits). A run in lanes "
                "leaves them alone without it."),
    option("--task-timeout", metavar="SECONDS", type=FloatRange(min=1),
           default=7200, show_default=True,
           help="Stop an agent run after this many seconds (counts as a transient failure)."),
    option("--max-attempts", metavar="N", type=IntRange(1, 5),
           default=5, show_default=True,
           help="Attempts per task in all; 5 is the hard cap."),
    option("--retry-model", metavar="NAME", default=None,
           help="Model of the advisor that judges a failed attempt [default: the agent's "
                "small model; claude: haiku]."),
    option("--max-limit-waits", metavar="N", type=IntRange(min=0),
           default=5, show_default=True,
           help="Usage-limit waits before the run stops."),
    option("--max-failures", metavar="N", type=IntRange(min=1),
           default=3, show_default=True,
           help="Failed tasks in a row before the run stops as stuck."),
    option("--backoff", metavar="SECONDS", type=FloatRange(min=0),
           default=30, show_default=True,
           help="First wait in seconds after a transient failure or a limit without a "
                "reset time; doubles each time."),
    option("--iterations", metavar="N", type=IntRange(1, 50), default=1, show_default=True,
           help="Runs of one task in its session until the agent says TASK_COMPLETE."),
    option("--task", multiple=True, metavar="N",
           help="Run only these tasks (as numbered by --dry-run), leaving the others as they "
                "are: a number, a range or a list (--task 6, --task 3-5,8); repeatable."),
    option("--group", default=None, metavar="G",
           help="Run only the tasks of one group: its number in --dry-run or its heading "
                "(any case)."),
    option("--again", is_flag=True,
           help="With --task or --group: run completed, failed or blocked tasks once more, "
                "each in a new change."),
    option("--ignore-deps", is_flag=True,
           help="Start a group even when a group it waits for (`Depends on:`) is not done."),
    option("--include-optional/--no-include-optional", default=False,
           help="Also run the tasks a plan marks optional (Kiro's box with a star: "
                "`- [ ]*`)."),
    option("--tick-boxes/--no-tick-boxes", default=False,
           help="Tick a task's box in the plan (`- [ ]` to `- [x]`) when it lands; a line "
                "you changed meanwhile is left alone. The tick is not committed."),
    option("--sleep", metavar="SECONDS", type=FloatRange(min=0),
           default=0, show_default=True,
           help="Seconds to wait between tasks (Ctrl+C ends the wait at once)."),
    option("--budget", metavar="USD", type=FloatRange(min=0), default=None,
           help="USD: the most this plan may cost since its last --reset; no task starts "
                "once that much is spent. A re-run without --budget keeps the last one."),
    option("--price", "prices", multiple=True, type=MODEL_RATES,
           help="What a model's tokens cost, for an agent that reports tokens but no "
                "dollars (Codex): MODEL=IN/CACHED/OUT in USD per million tokens; repeatable. "
                "Known models are priced already (docs/how-to/costs.md)."),
    # More than 0: a cap of nothing stops every agent run after its first paid turn.
    option("--task-budget", metavar="USD", type=FloatRange(min=0, min_open=True), default=None,
           help="USD: the cap on one agent run (the agent's own limit, where it has one)."),
    option("--distill/--no-distill", default=True,
           help="A small model writes each change's commit message (--no-distill: keep the "
                "plain one)."),
    option("--distill-model", metavar="NAME", default=None,
           help="Model that writes each change's commit message [default: the agent's small "
                "model]."),
    option("--review/--no-review", default=False,
           help="A fresh, read-only reviewer checks each task's diff; its feedback goes back "
                "to the developer until it approves."),
    option("--review-model", metavar="NAME", default=None,
           help="Model of the reviewer [default: the agent's; claude: sonnet]."),
    option("--max-review-rounds", metavar="N", type=IntRange(1, 10),
           default=3, show_default=True,
           help="Reviews of one task before it is left unapproved (its change kept)."),
    option("--check", multiple=True, metavar="CMD",
           help="A command line that must pass (exit 0) after each task, run by your shell in "
                "the agent's working copy (its lane, or your checkout); repeatable. It runs "
                "once before the first task too (baseline), and a failure goes back to the "
                "agent to fix."),
    option("--check-timeout", metavar="SECONDS", type=FloatRange(min=1),
           default=600, show_default=True,
           help="Seconds before a check is stopped (with everything it started) and failed."),
    option("--check-rounds", metavar="N", type=IntRange(0, 10),
           default=2, show_default=True,
           help="Fix runs of a task in the same session while a check fails, before its "
                "attempt fails."),
    option("--require-changes/--no-require-changes", default=False,
           help="A task that changes no files is a failed attempt."),
    option("--git-hooks/--no-git-hooks", default=False,
           help="Run the repository's pre-commit and commit-msg hooks on each task's change "
                "(git only), as checks: a failing hook goes back to the agent to fix."),
    # -- settings, hooks, the agent's environment (docs/reference/settings.md, docs/how-to/hooks.md)
    option("--env", "env", multiple=True, type=ASSIGNMENT,
           help="Set a variable for the agent: NAME=VALUE; repeatable."),
    option("--env-exclude", multiple=True, type=VARIABLE_NAME,
           help="Remove a variable from the agent's environment; repeatable."),
    option("--sandbox/--no-sandbox", default=False,
           help="Run every agent inside an operating-system sandbox (Linux: bubblewrap): it "
                "writes only its working copy, sees no ~/.ssh, ~/.aws or other secrets."),
    option("--sandbox-hide", multiple=True, metavar="PATH",
           help="With --sandbox: one more path no agent may see (~ for the home folder); "
                "repeatable."),
    option("--on-finish", default=None, metavar="CMD",
           help="A command line your shell runs when the run ends, however it ends."),
    option("--on-task", default=None, metavar="CMD",
           help="A command line your shell runs after each completed task."),
    option("--hook-timeout", metavar="SECONDS", type=FloatRange(min=1), default=60,
           show_default=True,
           help="Seconds before a hook is stopped (with everything it started)."),
    option("--show-settings", is_flag=True,
           help="Print every setting and where it came from (with --json: as JSON)."),
    option("--parallel", type=IntRange(min=1), default=1, metavar="K",
           help="Run up to K groups at once, each in a working copy of its own."),
    option("--stop-after-running", is_flag=True,
           help="Ask the parallel run going on to start no new task, then stop."),
    option("--push", metavar="REMOTE", help="With --group: a CI job; its branch and state "
           "go to REMOTE after every task, and a re-run resumes."),
    option("--integrate", is_flag=True, help="With --from: every finished group's tasks onto "
           "the current branch, states merged."),
    option("--from", "from_remote", metavar="REMOTE", help="With --integrate: the jobs' remote."),
    # -- where the agent works (agentloop.run.scheduler, agentloop.vcs.landing)
    option("--workplace", type=Choice("lane", "checkout"), default="lane",
           show_default=True,
           help="Where the agent works: `lane`, a working copy of its own, each finished "
                "task landing on your branch, so your own edits meanwhile are never taken "
                "into a task; `checkout`, your checkout itself (no copy to set up, but "
                "what you change while a task runs may be committed with it)."),
    option("--lane-copy", multiple=True, metavar="PATH",
           help="An ignored file or folder copied from your checkout into each new lane "
                "(.env, say); repeatable."),
    option("--lane-link", multiple=True, metavar="PATH",
           help="An ignored file or folder each new lane links to in your checkout "
                "(node_modules, say); repeatable."),
    option("--lane-setup", metavar="CMD", default=None,
           help="A shell command run once in each new lane, after the copies and links "
                "(npm ci, say)."),
    option("--lane-wait", type=DURATION, default=LANE_WAIT, metavar="DURATION",
           help="How long a finished task waits for your uncommitted edits to files it "
                "changed before its group is held (seconds, or 90s, 10m, 1h) "
                "[default: 10m]."),
    # -- the dashboard and notices (agentloop.dashboard)
    option("--serve", is_flag=True,
           help="Follow the run in the browser: prints the dashboard's address (with its "
                "token). Without TASKS_MD: every plan of the repository, as runs started "
                "elsewhere go."),
    option("--serve-port", type=IntRange(0, 65535), default=None, metavar="PORT",
           help="The dashboard's port [default: a free one]."),
    option("--serve-host", default=None, metavar="HOST",
           help="The address the dashboard listens on [default: 127.0.0.1, this machine "
                "only]."),
    option("--report", metavar="FILE", default=None,
           help="Write the plan's state and history as one standalone HTML file (- for "
                "standard output)."),
    option("--notify", multiple=True, metavar="URL",
           help="Tell this service (an apprise URL: ntfy://, slack://, mailto://, "
                "json://...) when the run ends, a task fails, a conflict needs a person, "
                "a usage limit means a long wait or the budget stops the run; repeatable."),
)

BY_NAME = {o.name: o for o in OPTIONS}
