"""How a stop or an error is said: one line on stderr, with the command that continues the run
where there is one; with --json the same as a JSON document on stdout; an internal error's
traceback in a log file, never on the screen.

Without click: `--status` is answered before click is imported (agentloop.console.quick), and
says its errors here too."""

from __future__ import annotations

import sys
from pathlib import Path

from agentloop.errors import (
    AgentBlocked,
    AgentLoopError,
    BudgetReached,
    Interrupted,
    RunStopped,
    SettingsError,
    UsageError,
)

# typing for the checker only: --status imports this module, not typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def echo(line: str, err: bool = False) -> None:
    """One line on stdout (or stderr), flushed at once, as every line agent-loop prints."""
    stream = sys.stderr if err else sys.stdout
    stream.write(f"{line}\n")
    stream.flush()


def warn(line: str) -> None:
    """A warning line on stderr."""
    echo(line, err=True)


def resume_command(args: list[str]) -> str:
    """The command that continues this run: the same one, without --reset (and its --yes)."""
    import shlex

    from agentloop.options.record import continue_args

    return shlex.join(["agent-loop", *continue_args(args)])


def _renamed(args: list[str], renamed: tuple[str, str] | None) -> list[str]:
    """The arguments with the plan's name as you renamed it while the run worked (`renamed`:
    its full paths before and after), written as you wrote it: through the same folder (a
    symlink to it too), from here, or in full."""
    if renamed is None:
        return args
    import os

    old, new = renamed

    def as_written(arg: str) -> str:
        if os.path.dirname(new) == os.path.dirname(old):
            return os.path.join(os.path.dirname(arg), os.path.basename(new))
        return new if os.path.isabs(arg) else os.path.relpath(new)

    # Resolved, both: the run knows its plan by its real path, and a plan given through a
    # symlinked folder (`link/tasks.md`) is the same file.
    real = os.path.realpath(old)
    # After a `--` (`agent-loop -- -dash.md`) a word that starts with a dash is a plan too.
    cut = args.index("--") if "--" in args else len(args)
    return [as_written(arg) if (at > cut or not arg.startswith("-"))
            and os.path.realpath(arg) == real else arg for at, arg in enumerate(args)]


def _with_budget(args: list[str], budget: float) -> list[str]:
    """The same arguments with --budget set to `budget`, in the four decimals a budget is said
    in (`spent $0.0024 of $0.0020`), before a `--` (after it, it would be read as a plan)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--budget":
            skip = True
        elif not arg.startswith("--budget="):
            out.append(arg)
    at = out.index("--") if "--" in out else len(out)
    return [*out[:at], "--budget", f"{budget:.4f}", *out[at:]]


def stopped_before_start() -> int:
    """A stop before the command itself began (its options still being read): nothing was
    changed, said in one line; the exit code of a stop."""
    sys.stderr.write("\nagent-loop: interrupted; nothing was changed\n")
    return Interrupted.exit_code


def crash(exc: BaseException) -> None:
    """Write the traceback to ~/.agent-loop-crash.log and say where, in one line."""
    import traceback

    log = Path.home() / ".agent-loop-crash.log"
    try:
        log.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
        where = f"; the traceback is in {log}"
    except OSError:
        where = ""
    _said_first(exc)
    echo(f"agent-loop: internal error: {exc!r}{where}", err=True)


def _said_first(exc: BaseException) -> None:
    """What the error carries to be said before its own line (AgentLoopError.said_first; a
    Ctrl+C or an internal error may carry it too: agentloop.errors.say_first)."""
    for line in getattr(exc, "said_first", ()):
        echo(f"agent-loop: {line}", err=True)


def from_a_stop(exc: BaseException) -> bool:
    """Whether a Ctrl+C (or SIGTERM, SIGHUP) is what this error came from: Python wraps one
    that lands in a class being built (a dataclass of a module imported late, `__set_name__`)
    in a RuntimeError, and it must end as the stop it was, not as an internal error."""
    seen: BaseException | None = exc
    for _ in range(16):  # a chain is short; a cycle in one must not hang the exit
        if seen is None:
            break
        if isinstance(seen, (KeyboardInterrupt, Interrupted)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


# The commands that only look (`--status --follow` and `--serve` end with Ctrl+C): a stop of
# theirs saves nothing and has nothing to resume.
READS_ONLY = frozenset({"--status", "--dry-run", "--serve", "--report"})


def report(exc: BaseException, args: list[str], as_json: bool = False) -> int:
    """One line on stderr for a stop or an error (with --json, also a JSON document on
    stdout); its exit code."""
    code = _report_line(exc, args)
    if as_json:
        write(json_error(str(exc) or "interrupted", code))
    return code


def json_error(message: str, code: int) -> dict[str, Any]:
    """An error as a --json consumer reads it, on stdout (schema as every JSON we print)."""
    from agentloop.console.render import SCHEMA

    return {"schema": SCHEMA, "error": message, "exit_code": code}


def _report_line(exc: BaseException, args: list[str]) -> int:
    args = _renamed(args, getattr(exc, "renamed", None))
    # The --task numbers as the plan reads now (agentloop.run.loop: edited while it ran).
    numbered = getattr(exc, "renumbered", None) or (lambda command: command)
    again = numbered(resume_command(args))
    if isinstance(exc, (KeyboardInterrupt, Interrupted)):
        echo("", err=True)  # off the line a terminal's ^C was echoed on
        _said_first(exc)
        if READS_ONLY & set(args):  # nothing to save nor to resume: a look that was ended
            echo("agent-loop: interrupted", err=True)
        else:
            echo(f"agent-loop: interrupted; state saved. Resume with: {again}", err=True)
        return 130
    assert isinstance(exc, AgentLoopError)
    _said_first(exc)
    if isinstance(exc, SettingsError):
        echo(f"agent-loop: settings: {exc}", err=True)
    elif isinstance(exc, UsageError):
        echo(f"agent-loop: usage: {exc}", err=True)
    elif isinstance(exc, BudgetReached):
        from agentloop.run.budget import suggestion  # only a run stopped by its budget

        more = numbered(resume_command(_with_budget(args, suggestion(exc.spent, exc.budget))))
        echo(f"agent-loop: stopped: {exc}. Continue with a higher budget: {more}", err=True)
    elif isinstance(exc, RunStopped):
        echo(f"agent-loop: stopped: {exc}. Continue with: {again}", err=True)
    elif isinstance(exc, AgentBlocked):
        echo(f"agent-loop: stopped: {exc}. Fix that, then continue with: {again}", err=True)
    else:
        echo(f"agent-loop: error: {exc}", err=True)
    return exc.exit_code


def write(data: str | dict[str, Any]) -> None:
    """Print a line, or a JSON document as every --json output is printed."""
    if isinstance(data, dict):
        # Imported where JSON is printed: --help and --version load no orjson.
        import orjson

        from agentloop.files import jsonbytes

        data = jsonbytes.dumps(data, option=orjson.OPT_INDENT_2).decode()
    echo(data)
