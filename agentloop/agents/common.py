"""What every agent adapter does the same way: running its program with the output streamed into
a raw log and one line for people, and a helper call whose launch problems become an Answer
instead of an error."""

from __future__ import annotations

import io
import re
import subprocess
from contextlib import ExitStack, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, ContextManager, Mapping, Sequence

import orjson

from agentloop import proc
from agentloop.agents import Activity, AgentResult, AgentRun, Answer
from agentloop.errors import ProcessError, ProgramNotFound
from agentloop.files import held_open

if TYPE_CHECKING:  # a name for the annotations: a run without --sandbox never loads the sandbox
    from agentloop.sandbox import Kept, Sandbox

_OBJECT_START = re.compile(rb"[ \t]*\{")


def display(value: Any, limit: int = 160) -> str:
    """One line of at most `limit` characters."""
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def read_event(line: bytes, raw: IO[bytes]) -> tuple[bool, dict[str, Any] | None]:
    """Keep one line of the agent's stdout in the raw log; (blank, the JSON object or None)."""
    raw.write(line)  # in two writes: a copy of a long line would double its memory
    if not line.endswith(b"\n"):
        raw.write(b"\n")
    raw.flush()
    if not line.strip():
        return True, None
    # Only what can be an object is parsed: a failed parse keeps a copy of the whole line.
    if _OBJECT_START.match(line) and line.rstrip(b"\r\n").endswith(b"}"):
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            event = None
        if isinstance(event, dict):
            return False, event
    return False, None


def not_json(line: bytes) -> str:
    """The log line for output that is no JSON object: only its start, a line can be megabytes."""
    return f"[not JSON] {display(line[:1200].decode('utf-8', 'replace'), 300)}"


def confined(box: Sandbox | None, argv: list[str], cwd: Path, homes: Sequence[Path],
             writes: bool = True, kept: Sequence[Kept] = ()) -> list[str]:
    """The argv every agent process starts with: `argv` itself, or `argv` inside the run's
    sandbox (--sandbox), writing in `cwd` only when `writes` (never the reviewer or a helper
    call), and in the agent's own `homes` but for the paths its program reads later as
    settings, hooks or instructions (`kept`). Each adapter passes every argv it runs through
    here."""
    return list(argv) if box is None else box.wrap(argv, cwd, homes, writes, kept)


def links_kept(box: Sandbox | None, kept: Sequence[Kept],
               log: JsonLog | None = None) -> ContextManager[None]:
    """Around every confined run, a task's and a helper call's alike: the kept paths that are
    links made as they were once it ended (Sandbox.keeping_links), said in its `log` too."""
    if box is None or not kept:
        return nullcontext()
    return box.keeping_links(kept, None if log is None else
                             lambda line: log.write(f"\n== {line} =="))


def helper_call(box: Sandbox | None, argv: list[str], prompt: str, cwd: Path,
                env: Mapping[str, str] | None, timeout: float, homes: Sequence[Path] = (),
                kept: Sequence[Kept] = ()) -> proc.Completed | Answer:
    """Run a short helper call with the prompt on stdin, in the run's sandbox (with
    --sandbox) with its working copy read-only; an Answer when it could not run."""
    try:
        with links_kept(box, kept):
            return proc.run(confined(box, argv, cwd, homes, False, kept), cwd=cwd, env=env,
                            check=False, timeout=timeout, guarded=True, input=prompt)
    except ProgramNotFound:
        return Answer("", error=f"{argv[0]} not found")
    except ProcessError as exc:  # a timeout, or a program that cannot start
        if isinstance(exc.__cause__, subprocess.TimeoutExpired):
            return Answer("", error=f"timed out after {timeout}s")
        return Answer("", error=str(exc).splitlines()[0][:300])
    except (OSError, ValueError) as exc:
        return Answer("", error=f"could not start {argv[0]}: {exc}")


class LogFiles:
    """A run's readable log and its raw JSONL beside it, made when first written to. The
    adapters write the first line once the agent has started: making two files can cost a few
    hundred microseconds (ext4), time the agent's own start-up then hides."""

    def __init__(self, log: Path | None, raw_log: Path | None,
                 opened: tuple[IO[str], IO[bytes]] | None = None) -> None:
        self._paths = (log, raw_log)
        self._files = opened

    @classmethod
    def held(cls, readable: IO[str], raw: IO[bytes]) -> LogFiles:
        """Files that are open already, and are not ours to close (tests read them back)."""
        return cls(None, None, (readable, raw))

    @property
    def readable(self) -> IO[str]:
        return self._open()[0]

    @property
    def raw(self) -> IO[bytes]:
        return self._open()[1]

    def _open(self) -> tuple[IO[str], IO[bytes]]:
        if self._files is None:
            log, raw_log = self._paths
            assert log is not None and raw_log is not None
            for tries_left in reversed(range(3)):
                try:
                    self._files = _make(log, raw_log)
                    break
                except FileNotFoundError:
                    # The agent started a moment ago, and may have just deleted .agent-loop/
                    # (`git clean -fdx`) between our mkdir and open: make it again.
                    if not tries_left:
                        raise
        assert self._files is not None
        return self._files

    def __enter__(self) -> LogFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._files is None or self._paths[0] is None:
            return
        with ExitStack() as closing:
            files: tuple[IO[Any], ...] = self._files
            for held in files:
                closing.callback(held.close)  # each is closed, whatever fails before
            for path, held in zip(self._paths, files):
                assert path is not None
                fresh = held_open.put_back(path, held)  # the agent deleted it while it ran
                if fresh is not None:
                    fresh.close()


def _make(log: Path, raw_log: Path) -> tuple[IO[str], IO[bytes]]:
    # Readable too: should the agent delete them, held_open.put_back reads them back.
    try:
        readable = open(log, "w+", encoding="utf-8", errors="replace")
    except FileNotFoundError:  # the logs' folder: a run's first, or an agent deleted it
        log.parent.mkdir(parents=True, exist_ok=True)
        readable = open(log, "w+", encoding="utf-8", errors="replace")
    try:
        return readable, open(raw_log, "w+b")
    except BaseException:
        readable.close()
        raise


class JsonLog:
    """Turns an agent's JSON lines into a readable log as they come; subclasses read events.
    `header` opens the readable log, written by `start` (or the first write)."""

    def __init__(self, files: LogFiles, on_activity: Callable[[Activity], None],
                 header: str | None = None) -> None:
        self.files = files
        self.on_activity = on_activity
        self.garbage = 0
        self.tool_calls = 0
        self.turns = 0      # the subclass counts them where its agent's stream shows them
        self._tool = ""
        self._header = header

    def said(self, text: str) -> None:
        """The agent said something (or reported an error): the live line shows it."""
        self.on_activity(Activity(display(text, 80), self._tool, self.tool_calls, self.turns))

    def called(self, line: str) -> None:
        """The agent called a tool (`line` says which, on what)."""
        self.tool_calls += 1
        self._tool = line
        self.on_activity(Activity(line, line, self.tool_calls, self.turns))

    def start(self) -> None:
        """The agent has started: its log gets its header, and so its files, now."""
        if self._header is not None:
            self._put(self._header)
            self._header = None  # only once it is written: a later write tries again

    def write(self, text: str) -> None:
        """Add lines to the readable log and flush, so `tail -f` follows along."""
        self.start()
        self._put(text)

    def stopped(self) -> None:
        """The run was stopped (Ctrl+C, a failed start): said in the log if the log can still
        be written, for the stop itself is what the caller must see."""
        try:
            self.write(f"\n== stopped at {stamp()}: interrupted ==")
        except OSError:
            pass

    def _put(self, text: str) -> None:
        readable = self.files.readable
        readable.write(text.rstrip("\n") + "\n")
        readable.flush()

    def feed(self, line: bytes) -> None:
        """Handle one line of the agent's stdout."""
        self.start()
        blank, event = read_event(line, self.files.raw)
        if blank:
            return
        if event is None:
            self.garbage += 1
            self.write(not_json(line))
            return
        self.event(event)

    def event(self, event: dict[str, Any]) -> None:
        """One JSON object from the agent."""
        raise NotImplementedError


def read_back(log: JsonLog, raw_log: Path) -> bool:
    """Feed `log` a run's raw log again, line by line, as it came from the agent (`log`
    writes to files in memory: LogFiles.held); False when the raw log cannot be read."""
    try:
        raw = raw_log.read_bytes()
    except OSError:
        return False
    for line in raw.splitlines(keepends=True):
        log.feed(line)
    return True


def in_memory() -> LogFiles:
    """Log files that are written nowhere: a raw log read back (read_back) is not written
    again."""
    return LogFiles.held(io.StringIO(), io.BytesIO())


def stream_run(log: JsonLog, box: Sandbox | None, argv: list[str], request: AgentRun,
               env: Mapping[str, str] | None, homes: Sequence[Path],
               stdin: bytes, kept: Sequence[Kept] = ()) -> proc.Streamed:
    """One run of the agent program (in the sandbox, with --sandbox), each line of its output
    fed to `log`; a stop or a crash on the way is written to the log before it goes on up."""
    started = confined(box, argv, request.cwd, homes, not request.read_only, kept)
    if request.env:
        env = _with_extra(env, request.env)
    with links_kept(box, kept, log):
        try:
            return proc.stream(started, log.feed, cwd=request.cwd, env=env,
                               timeout=request.timeout, stdin=stdin, started=log.start,
                               meanwhile=request.meanwhile)
        except BaseException:
            log.stopped()
            raise


# The environment of the last run with variables of its own (a lane's reflog mark): the same
# dict again while the agent's environment and those variables are the same. One made anew
# each run was a dict the start had never seen, its hundred-odd names and values encoded by
# Popen again at every agent's start; one kept by identity is encoded once
# (agentloop.proc.environ.popen_env).
_extra_env: tuple[dict[str, str], tuple[tuple[str, str], ...], dict[str, str]] | None = None


def _with_extra(env: Mapping[str, str] | None, extra: tuple[tuple[str, str], ...]
                ) -> dict[str, str]:
    """`env` (None: os.environ as it is now) with `extra` set on top."""
    global _extra_env
    from agentloop.proc import environ

    base = env if env is not None else environ.current()
    held = _extra_env
    if held is not None and held[1] == extra and held[0] == base:  # compared in C
        return held[2]
    merged = {**base, **dict(extra)}
    _extra_env = (dict(base), extra, merged)
    return merged


def stamp() -> str:
    """Now, as the logs show it."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def log_header(request: AgentRun, argv: list[str], notes: Sequence[str] = ()) -> str:
    """The top of a run's readable log: what ran, and the prompt it was given."""
    shown = [a if len(a) < 80 else f"<{len(a)} chars>" for a in argv] + ["< prompt on stdin"]
    lines = [f"== agent-loop · {stamp()} =="]
    lines += [f"{key}: {value}" for key, value in request.header]
    lines += [f"session: {'resuming ' + request.resume if request.resume else 'new'}",
              f"command: {' '.join(shown)}", *notes, "", "-- prompt --",
              request.prompt.rstrip(), "", "-- agent --"]
    return "\n".join(lines)


def log_footer(r: AgentResult, cost: str, stderr: str, notes: Sequence[str] = ()) -> str:
    """The end of a run's readable log: how it ended, its result, what it used."""
    tokens = ", ".join(f"{k.replace('_tokens', '').replace('_input', '')} {v}"
                       for k, v in r.usage.items())
    lines = ["", f"== finished at {stamp()}: "
             + ("success ==" if r.ok else f"FAILED: {r.error} ==")]
    if r.text:
        lines += ["-- result --", r.text.rstrip()]
    lines += [f"exit code: {r.exit_code}", f"session: {r.session_id}", f"cost: {cost}",
              f"tokens: {tokens or 'none reported'}", f"turns: {r.num_turns}",
              f"duration: {r.duration_ms} ms", *notes]
    if stderr.strip():
        lines += ["-- stderr (last lines) --", stderr.rstrip()[-4000:]]
    return "\n".join(lines)
