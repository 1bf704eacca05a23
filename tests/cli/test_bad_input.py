"""Bad input, from the user and from the agent: refused in one line, or handled; never a crash.

Every user-caused error here is checked the way a user meets it, through the real program:
exit 1, one line on stderr, no traceback, and the state as it was. Property tests (bounded)
feed arbitrary bytes to the task-file loader, arbitrary markdown to `--dry-run`, damaged but
parseable state files to `--status` and `--dry-run`, and arbitrary stream-json to the agent
adapter. tests/plan/test_parse.py holds the parser's own properties; tests/run/test_loop.py the
agent that prints garbage, nothing, a cut result or crashes.
"""

from __future__ import annotations

import copy
import errno
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentloop import app, proc, standing
from agentloop.agents.claude_stream import StreamLog, judge
from agentloop.agents.common import LogFiles
from agentloop.cli import command
from agentloop.console import dry_run, render
from agentloop.errors import AgentLoopError, ProcessError, TaskFileError
from agentloop.options.record import RunOptions
from agentloop.plan import parse as taskfile
from agentloop.run.selection import commit_message
from agentloop.state import journal
from agentloop.state.schema import Attempt, State, TaskState
from tests.support.fake_agent import FakeClaude
from tests.support.runner import agent_loop

SAFE_LOG = re.compile(r"\d{3,}-[a-z0-9-]+--[a-z0-9-]+(-attempt\d+)?(-iteration\d+)?\.(log|jsonl)")


def refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    """A user error as it should look: exit 1, one line, no traceback, saying `words`."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("agent-loop: error: "), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


# -- task text that could be read as something else ----------------------------------------------

NASTY = """\
## Shell $(touch pwned-h) `touch pwned-h2`; rm -rf "$HOME" | tee x > y &
- echo $(touch pwned1) `touch pwned2`; touch pwned3 && touch pwned4 | tee pwned5 > pwned6 \
'single' "double" \\ * ? ~ !$ ${IFS} %s %n {0}
  FAKE: write f1.txt one
- -rf / --help
  FAKE: write f2.txt two
- -- --dry-run
  FAKE: write f3.txt three

## --exec=touch pwned7 ../../../../etc/passwd
- ../../outside/../../escape.log
  FAKE: write f4.txt four

## שלום עולם مرحبا بالعالم
- \u200fإصلاح الخطأ\u200e في הדף \u202eevil.txt\u202c (right to left, with marks)
  FAKE: write f5.txt five
- e\u0301\u0303\u0308 z\u0334\u0322\u031b\u0348\u031c combining marks, and a long one: \
""" + "a\u0300" * 300 + """
  FAKE: write f6.txt six
"""


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_task_text_is_only_ever_text(work: Path, tmp_path: Path, jj_bin: str,
                                     fake_claude: FakeClaude, kind: str) -> None:
    (work / "README.md").write_text("hello\n")
    if kind == "git":
        proc.run(["git", "init", "-q"], cwd=work)
        proc.run(["git", "add", "README.md"], cwd=work)
        proc.run(["git", "commit", "-qm", "initial"], cwd=work)
    else:
        proc.run(["jj", "git", "init"], cwd=work)
    (work / "tasks.md").write_text(NASTY, encoding="utf-8")
    done = agent_loop(work, "--vcs", kind)
    assert done.returncode == 0, done.stderr
    tasks = taskfile.parse(NASTY)
    assert len(tasks) == 6
    # The agent got each task exactly as written; no shell ever saw one.
    assert [c["stdin"] for c in fake_claude.task_runs()] == [t.text for t in tasks]
    made = [p for p in tmp_path.rglob("pwned*")] + list(Path.cwd().glob("pwned*"))
    assert not made, made  # (the logs' names hold the word; no shell made a file of it)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # nothing landed beside it
    logs = work / ".agent-loop" / "logs"
    assert all(SAFE_LOG.fullmatch(p.name) for p in logs.iterdir()), sorted(logs.iterdir())
    # Each change is described by its task's heading and summary, byte for byte.
    expected = [commit_message(TaskState.from_task(t)) for t in tasks]
    if kind == "git":
        subjects = proc.run(["git", "log", "--reverse", "--format=%s"], cwd=work).stdout
        assert subjects.splitlines()[1:] == expected
    else:
        out = proc.run(["jj", "--no-pager", "log", "--no-graph",
                        "-r", "::@ & description(glob:'agent-loop:*')",
                        "-T", 'description.first_line() ++ "\\n"'], cwd=work).stdout
        assert list(reversed(out.splitlines())) == expected
    assert sorted(p.name for p in work.glob("f*.txt")) == [f"f{n}.txt" for n in range(1, 7)]


def test_a_task_file_with_nul_bytes_is_refused_before_anything_is_written(work: Path) -> None:
    (work / "tasks.md").write_bytes(b"- a task\x00 with a NUL\n")
    for mode in ([], ["--status"], ["--dry-run"]):
        refused(agent_loop(work, "--vcs", "none", *mode), "NUL bytes")
    assert not (work / ".agent-loop" / "state.json").exists()


def test_a_task_over_the_size_limit_is_refused_at_once(work: Path,
                                                       fake_claude: FakeClaude) -> None:
    big = "x" * 2_000_000
    (work / "tasks.md").write_text(f"- a small one\n- {big}\n- another\n")
    for mode in ([], ["--status"], ["--dry-run"]):
        refused(agent_loop(work, "--vcs", "none", *mode), "task 2 (line 2)", "2,000,000 bytes",
                "1024 KiB")
    assert fake_claude.task_runs() == []  # refused before the first task, not at the second
    assert not (work / ".agent-loop" / "state.json").exists()


def test_a_megabyte_task_file_is_fine(work: Path, fake_claude: FakeClaude) -> None:
    prose = ("Background the agent need not read, but the author wanted written down. " * 20
             + "\n\n") * 700
    (work / "tasks.md").write_text(f"# Notes\n\n{prose}## Work\n- one\n- two\n")
    assert (work / "tasks.md").stat().st_size > 1_000_000
    done = agent_loop(work, "--vcs", "none")
    assert done.returncode == 0, done.stderr
    first, second = (c["stdin"] for c in fake_claude.task_runs())
    # The prose before the first group is the plan's context: a fresh session gets a bounded
    # part of it; the resumed one has it already.
    assert first.startswith("The plan this task belongs to says") and first.endswith("\none")
    assert 8000 < len(first) < 9000 and second == "two"


def test_an_argument_too_long_for_the_system_says_so() -> None:
    too_long = [sys.executable, "-c", "pass", "x" * 200_000]
    with pytest.raises(ProcessError, match=r"command line is too long .* 200,000 bytes"):
        proc.run(too_long)
    with pytest.raises(ProcessError, match="at most 128 KiB per argument"):
        proc.stream(too_long, lambda line: None)


# -- what the agent prints -------------------------------------------------------------------

AGENT = r'''
import json, os, sys
out = sys.stdout.buffer
if "json" in sys.argv:  # the retry advisor: give up, so a failed task ends the test quickly
    out.write(json.dumps({"type": "result", "is_error": False, "total_cost_usd": 0,
                          "result": '{"retry": false, "reason": "no"}'}).encode())
    sys.exit(0)
mode, size = os.environ["AGENT_MODE"], int(os.environ.get("AGENT_BYTES", "0"))
out.write(json.dumps({"type": "system", "subtype": "init", "session_id": "s-1", "model": "m",
                      "cwd": os.getcwd()}).encode() + b"\n")
result = {"type": "result", "subtype": "success", "is_error": False, "result": "done",
          "session_id": "s-1", "total_cost_usd": 0.01, "num_turns": 1, "duration_ms": 5}
if mode == "flood":  # megabytes of ordinary assistant lines
    line = json.dumps({"type": "assistant", "message": {"content": [
        {"type": "text", "text": "x" * 1000}]}}).encode() + b"\n"
    chunk = line * (1 << 20 // len(line))
    for _ in range(size // len(chunk)):
        out.write(chunk)
elif mode == "one-line":  # one endless line that is no JSON
    for _ in range(size >> 20):
        out.write(b"y" * (1 << 20))
    out.write(b"\n")
elif mode == "binary":
    out.write(b"\xff\xfe\x00 not utf-8 \xc3\x28 \xed\xa0\x80\n" * 100)
elif mode == "odd-json":  # JSON, but not of the shapes the CLI prints
    for odd in ([1, 2], "text", None, 3.5, {"type": "assistant", "message": "not an object"},
                {"type": "assistant", "message": {"content": True}},
                {"type": "assistant", "message": {"content": [{"type": "tool_use", "input": [1]}]}},
                {"type": "system", "subtype": "init", "session_id": {"no": 1}, "model": ["x"]},
                {"type": "rate_limit_event", "rate_limit_info": 7}):
        out.write(json.dumps(odd).encode() + b"\n")
    result.update(num_turns="many", duration_ms={"ms": 5}, usage=[1], total_cost_usd="lots",
                  session_id=[], api_error_status=True)
out.write(json.dumps(result).encode() + (b"" if mode == "no-newline" else b"\n"))
'''


def agent_env(tmp_path: Path, mode: str, size: int = 0) -> dict[str, str]:
    program = tmp_path / "agent"
    program.write_text(f"#!{sys.executable}\n{AGENT}")
    program.chmod(0o755)
    return {**os.environ, "AGENT_LOOP_CLAUDE": str(program), "AGENT_MODE": mode,
            "AGENT_BYTES": str(size), "NO_COLOR": "1"}


# Started by a small launcher, not by pytest: a child forked from the test process counts the
# test process's own pages in its peak RSS (Linux keeps the high-water mark across exec), and
# after a few hundred tests that alone passes the bound.
LAUNCHER = """
import os, subprocess, sys
with open(sys.argv[1], "w") as sink:
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink)
    _, status, usage = os.wait4(tool.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def run_measured(work: Path, env: dict[str, str]) -> tuple[int, int, str]:
    """Run the tool; return its exit code, the peak RSS (KiB) of it and the agent, stderr."""
    err = work.parent / "stderr.txt"
    done = subprocess.run([sys.executable, "-c", LAUNCHER, str(err)], cwd=work, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
                          check=True)
    code, peak = done.stdout.split()
    return int(code), int(peak), err.read_text()


@pytest.mark.parametrize("mode", ["flood", "one-line"])
def test_fifty_megabytes_of_output_stream_through(work: Path, tmp_path: Path, mode: str) -> None:
    (work / "tasks.md").write_text("- talk a lot\n")
    code, peak_kib, err = run_measured(work, agent_env(tmp_path, mode, 50 << 20))
    assert code == 0, err
    task = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())["tasks"][0]
    assert task["status"] == "completed"
    log = work / ".agent-loop" / "logs" / "001-ungrouped--talk-a-lot.jsonl"
    assert log.stat().st_size > 50 << 20
    # Held line by line, never whole: the benchmark shows the same bound for 500 MB.
    assert peak_kib < 80 * 1024, f"peak RSS {peak_kib // 1024} MiB"


@pytest.mark.parametrize("mode, status", [("no-newline", "completed"), ("binary", "completed"),
                                          ("odd-json", "completed")])
def test_odd_output_never_crashes_the_tool(work: Path, tmp_path: Path, mode: str,
                                           status: str) -> None:
    (work / "tasks.md").write_text("- one\n- two\n")
    env = agent_env(tmp_path, mode)
    done = agent_loop(work, "--vcs", "none", env=env)
    assert done.returncode == 0, done.stderr
    state = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())
    assert [t["status"] for t in state["tasks"]] == [status, status]
    shown = agent_loop(work, "--status", env=env)
    assert shown.returncode == 0, shown.stderr


SCALAR = (st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1)
          | st.floats(allow_nan=False) | st.text(max_size=8))
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
FIELDS = ["subtype", "session_id", "model", "cwd", "message", "result", "is_error",
          "total_cost_usd", "usage", "num_turns", "duration_ms", "permission_denials",
          "api_error_status", "api_error", "api_error_type", "errors", "rate_limit_info"]
BLOCK = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["text", "tool_use", "tool_result"]) | JSON, "text": JSON,
    "name": JSON, "input": JSON | st.dictionaries(st.sampled_from(["file_path", "command"]), JSON),
    "content": JSON, "is_error": JSON})
INNER = st.fixed_dictionaries({}, optional={
    "content": JSON | st.lists(BLOCK, max_size=3), "status": JSON, "resetsAt": JSON,
    "rateLimitType": JSON})
EVENT = st.builds(lambda kind, extra: {"type": kind, **extra},
                  st.sampled_from(["system", "assistant", "user", "result", "rate_limit_event"]),
                  st.fixed_dictionaries({}, optional={
                      **{name: JSON for name in FIELDS}, "message": INNER | JSON,
                      "rate_limit_info": INNER | JSON,
                      "usage": st.dictionaries(st.sampled_from(["input_tokens", "output_tokens"]),
                                               JSON)}))
LINE = st.one_of(EVENT.map(lambda e: {"subtype": "init", **e} if e["type"] == "system" else e)
                 .map(orjson.dumps), JSON.map(orjson.dumps), st.binary(max_size=30))


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(LINE, max_size=6), st.integers(-2, 3), st.booleans(), st.text(max_size=20))
def test_any_stream_json_makes_a_well_typed_result(lines: list[bytes], exit_code: int,
                                                   timed_out: bool, stderr: str) -> None:
    import io

    log = StreamLog(LogFiles.held(io.StringIO(), io.BytesIO()), lambda text: None)
    for line in lines:
        log.feed(line + b"\n")
    r = judge(exit_code, timed_out, log, stderr)

    def maybe(value: object, kind: type) -> bool:
        return value is None or type(value) is kind

    # These go into state.json, the console and a `--resume` argument: stray types must not.
    assert maybe(r.session_id, str) and maybe(r.model, str) and maybe(r.subtype, str)
    assert maybe(r.num_turns, int) and maybe(r.duration_ms, int)
    assert maybe(r.api_error_status, int) and maybe(r.limit_resets_at, float)
    assert type(r.cost_usd) is float and type(r.text) is str and maybe(r.error, str)
    assert all(type(k) is str and type(v) is int for k, v in r.usage.items())


# -- task files, any bytes -------------------------------------------------------------------

MARKDOWN = st.lists(st.sampled_from(["- ", "* ", "1. ", "## ", "# ", "> ", "```", "    ", "\t",
                                     "- [ ] ", "- [x] ", "---", "\n", "\n\n", "<!--", "-->",
                                     "text", "é", "\u202e", "\u0301", "\x00", "\r", "\ufeff"]),
                    max_size=40).map("".join)
ENCODED = st.one_of(st.binary(max_size=200), MARKDOWN.map(lambda t: t.encode("utf-8")),
                    MARKDOWN.map(lambda t: t.encode("utf-16")),
                    MARKDOWN.map(lambda t: t.encode("latin-1", "replace")),
                    st.tuples(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b""]),
                              MARKDOWN.map(lambda t: t.encode("utf-8")), st.binary(max_size=8))
                    .map(b"".join))


@settings(max_examples=300, deadline=None, database=None)
@given(ENCODED)
def test_any_bytes_load_as_tasks_or_one_clear_error(data: bytes) -> None:
    try:
        parsed = taskfile.from_bytes(Path("tasks.md"), data)
    except TaskFileError as exc:
        assert "\n" not in str(exc)
        return
    assert parsed.tasks and parsed.sha256 == taskfile.file_hash(data)


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(MARKDOWN)
def test_dry_run_of_any_markdown_plans_or_refuses_in_one_line(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              text: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.md").write_text(text, encoding="utf-8", newline="")
    result = CliRunner().invoke(command, ["tasks.md", "--dry-run"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert result.stderr.startswith("agent-loop: error: task file ")
        assert result.stderr.count("\n") == 1
    else:
        assert result.stdout.startswith("dry run: tasks.md, ")
    assert not (tmp_path / ".agent-loop").exists()


# -- state.json: damaged, foreign, from the future --------------------------------------------

def first_run(work: Path) -> bytes:
    (work / "tasks.md").write_text("- one\n- two\n")
    done = agent_loop(work, "--vcs", "none")
    assert done.returncode == 0, done.stderr
    return (work / ".agent-loop" / "state.json").read_bytes()


def newer(raw: bytes) -> bytes:
    return orjson.dumps({**orjson.loads(raw), "schema_version": 99})


def mistyped(raw: bytes) -> bytes:
    data = orjson.loads(raw)
    data["tasks"][0]["cost_usd"] = "a lot"
    return orjson.dumps(data)


@pytest.mark.parametrize("damage, words", [
    (lambda raw: b"", "is empty"),
    (lambda raw: raw[: len(raw) // 2], "is not valid JSON"),
    (lambda raw: b"<html>not json at all</html>", "is not valid JSON"),
    (lambda raw: b"[]", "is not an agent-loop state file"),
    (newer, "newer agent-loop (schema 99"),
    (mistyped, "is damaged (cost_usd is str 'a lot')"),
])
def test_a_bad_state_is_refused_and_kept_until_reset(work: Path, fake_claude: FakeClaude,
                                                     damage: Callable[[bytes], bytes],
                                                     words: str) -> None:
    bad = damage(first_run(work))
    (work / ".agent-loop" / "state.json").write_bytes(bad)
    calls = len(fake_claude.calls())
    for mode in ([], ["--status"], ["--status", "--json"], ["--dry-run"]):
        refused(agent_loop(work, "--vcs", "none", *mode), words, "--reset")
        assert (work / ".agent-loop" / "state.json").read_bytes() == bad
    assert len(fake_claude.calls()) == calls
    done = agent_loop(work, "--vcs", "none", "--reset")
    assert done.returncode == 0, done.stderr
    archived, = (work / ".agent-loop" / "archive").iterdir()
    assert (archived / "state.json").read_bytes() == bad


def valid_state() -> dict:
    tasks = taskfile.parse("## G\n- one\n- two\n")
    state = State(task_file="tasks.md", task_file_hash=taskfile.file_hash(b"## G\n- one\n- two\n"),
                  tasks=[TaskState.from_task(t) for t in tasks])
    state.tasks[0].status, state.tasks[0].attempts = "completed", 1
    state.tasks[0].history.append(Attempt(number=1, started_at="2026-01-01T00:00:00+00:00",
                                          outcome="completed", usage={"input_tokens": 3}))
    return orjson.loads(state.to_bytes())


VALID = valid_state()
SPOTS = ([(key,) for key in VALID] + [("tasks", 0), ("tasks", 0, "history", 0)]
         + [("tasks", 0, key) for key in VALID["tasks"][0]]
         + [("tasks", 0, "history", 0, key) for key in VALID["tasks"][0]["history"][0]])


@settings(max_examples=150, deadline=None, database=None)
@given(st.sampled_from(SPOTS), JSON)
def test_a_parseable_but_damaged_state_is_refused_never_a_crash(spot: tuple, value: object) -> None:
    data = copy.deepcopy(VALID)
    node = data
    for key in spot[:-1]:
        node = node[key]
    node[spot[-1]] = value
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "tasks.md").write_text("## G\n- one\n- two\n")
        (root / ".agent-loop").mkdir()
        (root / ".agent-loop" / "state.json").write_bytes(orjson.dumps(data))
        for look in (lambda: render.status_text(standing.status(Path("tasks.md"), root), root),
                     lambda: orjson.dumps(render.status_json(standing.status(Path("tasks.md"),
                                                                              root))).decode(),
                     lambda: dry_run.plan_text(app.dry_run(Path("tasks.md"), root,
                                                          RunOptions()))):
            try:
                assert isinstance(look(), str)
            except AgentLoopError as exc:
                assert "\n" not in str(exc)


@pytest.mark.parametrize("agent", ["", "nonesuch"])
def test_a_state_naming_an_unknown_agent_is_one_clear_line(agent: str, tmp_path: Path) -> None:
    # Hypothesis found it once (agent ""): --dry-run ended in a KeyError, not a line.
    data = copy.deepcopy(VALID)
    data["agent"] = agent
    (tmp_path / "tasks.md").write_text("## G\n- one\n- two\n")
    (tmp_path / ".agent-loop").mkdir()
    (tmp_path / ".agent-loop" / "state.json").write_bytes(orjson.dumps(data))
    with pytest.raises(AgentLoopError, match=f"names the agent {agent!r}"):
        app.dry_run(Path("tasks.md"), tmp_path, RunOptions())


@pytest.mark.parametrize("typed", [True, False])
def test_an_unknown_agent_in_the_state_gives_way_only_to_a_typed_agent(typed: bool,
                                                                       tmp_path: Path) -> None:
    # `--agent claude` typed, or the default: the CLI says which (RunOptions.agent_given); the
    # arguments kept for resume lines are no evidence of it.
    data = copy.deepcopy(VALID)
    data["agent"] = "gpt9"
    (tmp_path / "tasks.md").write_text("## G\n- one\n- two\n")
    (tmp_path / ".agent-loop").mkdir()
    (tmp_path / ".agent-loop" / "state.json").write_bytes(orjson.dumps(data))
    options = RunOptions(agent_given=typed, command=() if typed else ("--agent", "claude"))
    if typed:
        assert app.dry_run(Path("tasks.md"), tmp_path, options).rows  # goes on with claude
    else:
        with pytest.raises(AgentLoopError, match="names the agent 'gpt9'"):
            app.dry_run(Path("tasks.md"), tmp_path, options)


# -- where the state lives: read-only, full, odd --------------------------------------------------

def read_only(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs the tool with `folder` read-only (root ignores chmod)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return ()
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("as root a read-only folder needs a mount namespace (unshare --mount)")
    return ("unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"',
            str(folder))


def test_a_read_only_state_folder_is_one_clear_line(work: Path, fake_claude: FakeClaude) -> None:
    before = first_run(work)
    (work / "tasks.md").write_text("- one\n- two\n- three\n")  # so the run has work to do
    (work / ".agent-loop" / "state.json").write_bytes(before)
    folder = work / ".agent-loop"
    prefix = read_only(folder)
    try:
        done = agent_loop(work, "--vcs", "none", "--reset", prefix=prefix)
        refused(done, f"cannot write {folder}", "Read-only file system" if prefix else
                "Permission denied")
        shown = agent_loop(work, "--status", prefix=prefix)
        assert shown.returncode == 0 and "tasks.md changed" in shown.stdout, shown.stderr
    finally:
        folder.chmod(0o755)
    assert (folder / "state.json").read_bytes() == before
    assert len(fake_claude.task_runs()) == 2


@pytest.mark.parametrize("fail_from", [1, 2, 3, 4])
def test_a_full_disk_keeps_the_old_state_and_says_so(work: Path, fake_claude: FakeClaude,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     fail_from: int) -> None:
    state = work / ".agent-loop" / "state.json"
    if fail_from == 1:
        first_run(work)  # a state exists, and the next run's first save fails
    else:
        (work / "tasks.md").write_text("- one\n- two\n")  # the first save lands, a later fails
    before = state.read_bytes() if state.exists() else None
    real_fsync, real_write, calls = os.fsync, journal.os.write, []

    def full_now(kind: Path) -> bool:
        calls.append(kind)
        return len(calls) >= fail_from

    def full(fd: int) -> None:  # a snapshot of state.json syncs its file once
        if full_now(state):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    def full_line(fd: int, data: bytes) -> int:  # a journal line is one write
        if full_now(state.with_name("state.journal")):
            return real_write(fd, data[:len(data) // 2])  # as much as there was room for
        return real_write(fd, data)

    monkeypatch.chdir(work)
    monkeypatch.setattr(os, "fsync", full)
    monkeypatch.setattr(journal, "os", SimpleNamespace(**{**vars(os), "write": full_line}))
    result = CliRunner().invoke(command, ["tasks.md", "--vcs", "none"], catch_exceptions=False)
    monkeypatch.setattr(os, "fsync", real_fsync)
    monkeypatch.setattr(journal, "os", os)
    assert result.exit_code == 1, result.output
    # One line, naming a file that could not be written: the cleanup after a first failure
    # (the attempt is uncounted and saved) may fail on the other file just as well.
    assert result.stderr in {f"agent-loop: error: cannot write {path}: No space left on device; "
                             "the saved state is as it was\n" for path in calls[fail_from - 1:]}
    # From the third save on, a journal line is what first finds the disk full.
    assert fail_from < 3 or calls[fail_from - 1].name == "state.journal", calls
    if before is not None:
        assert state.read_bytes() == before
    else:
        saved = orjson.loads(state.read_bytes())
        assert [t["status"] for t in saved["tasks"]] == ["pending", "pending"]
    assert not list(state.parent.glob(".state-*"))
    # With room again, the same command picks up where the state says and finishes.
    result = CliRunner().invoke(command, ["tasks.md", "--vcs", "none"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    tasks = orjson.loads(state.read_bytes())["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 2
    assert all([a["outcome"] for a in t["history"]].count("completed") == 1 for t in tasks)


def test_the_users_gitignore_is_never_edited(work: Path, fake_claude: FakeClaude) -> None:
    # `.agent-loop/` ignores itself (its own .gitignore holds `*`), so no change of the user's
    # is needed, and none lands in an undescribed jj change.
    (work / ".gitignore").write_bytes(b"caf\xe9/\n*.o")
    (work / "tasks.md").write_text("- one\n")
    done = agent_loop(work, "--vcs", "none")
    assert done.returncode == 0, done.stderr
    assert (work / ".gitignore").read_bytes() == b"caf\xe9/\n*.o"
    assert (work / ".agent-loop" / ".gitignore").read_text() == "*\n"


def test_a_state_folder_that_is_a_file_is_one_clear_line(work: Path) -> None:
    (work / "tasks.md").write_text("- one\n")
    (work / ".agent-loop").write_text("not a folder")
    refused(agent_loop(work, "--vcs", "none"), "is not a folder")
    for mode in (["--status"], ["--dry-run"]):
        refused(agent_loop(work, *mode), "Not a directory")
    assert (work / ".agent-loop").read_text() == "not a folder"


def test_a_file_name_that_is_not_utf8_is_committed_and_recorded(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    """The commit held it byte for byte, then saving the state crashed on the name (exit 3)."""
    proc.run(["git", "init", "-q"], cwd=work)
    proc.run(["git", "commit", "-q", "--allow-empty", "-m", "initial"], cwd=work)
    (work / "tasks.md").write_text("- odd name\n  FAKE: bash printf 'x\\n' > \"$(printf "
                                   "'caf\\351.txt')\"\n- two\n  FAKE: write two.txt 2\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    shown = proc.run(["git", "show", "--format=", "--name-only", "-z", "HEAD~1"], cwd=work).stdout
    assert os.fsencode(shown.rstrip("\0")) == b"caf\xe9.txt"
    tasks = orjson.loads((work / ".agent-loop" / "state.json").read_bytes())["tasks"]
    assert [t["files"] for t in tasks] == [["caf\\xe9.txt"], ["two.txt"]]
    events = (work / ".agent-loop" / "events.jsonl").read_bytes()
    assert events.count(b'"type":"TaskFinished"') == 2
    assert "1 completed" not in done.stdout and "2 completed" in done.stdout
    status = agent_loop(work, "--status", "--json")
    assert status.returncode == 0 and '"completed": 2' in status.stdout, status.stderr


def test_started_with_sigchld_ignored_exit_codes_still_count(work: Path,
                                                           fake_claude: FakeClaude) -> None:
    """Found by review: the kernel reaped every child itself, and each exit code read as 0: a
    failing check passed, and the agent ran on a tree that fails its checks."""
    (work / "tasks.md").write_text("- one\n  FAKE: write a.txt A\n")
    ignoring = (sys.executable, "-c", "import os, signal, sys; "
                "signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
                "os.execv(sys.argv[1], sys.argv[1:])")
    done = agent_loop(work, "--vcs", "none", "--no-distill", "--check", "exit 3",
                      prefix=ignoring)
    assert done.returncode == 1 and "exit 3" in done.stderr, done.stdout + done.stderr
    assert not fake_claude.task_runs()  # stopped before anything was paid for


def test_a_state_naming_an_unknown_agent_goes_on_only_with_an_explicit_agent(
        work: Path, fake_claude: FakeClaude) -> None:
    # A state edited by hand, or left by a newer agent-loop, names an agent not known here.
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt 1\n- two\n"
                                   "  FAKE: write two.txt 2\n")
    assert agent_loop(work, "--vcs", "none", "--task", "1").returncode == 0
    path = work / ".agent-loop" / "state.json"
    data = orjson.loads(path.read_bytes())
    assert data["agent"] == "claude"
    bad = orjson.dumps({**data, "agent": "gpt9"})
    path.write_bytes(bad)
    runs = len(fake_claude.task_runs())
    for mode in ([], ["--dry-run"]):   # no --agent: refused, with both ways on
        refused(agent_loop(work, "--vcs", "none", *mode), "names the agent 'gpt9'",
                "--agent claude", "--reset")
        assert path.read_bytes() == bad
    dry = agent_loop(work, "--vcs", "none", "--agent", "claude", "--dry-run")
    assert dry.returncode == 0 and "names the agent 'gpt9'" in dry.stdout + dry.stderr, dry
    done = agent_loop(work, "--vcs", "none", "--agent", "claude")
    assert done.returncode == 0, (done.stdout, done.stderr)
    said = [line for line in (done.stdout + done.stderr).splitlines() if "'gpt9'" in line]
    assert len(said) == 1 and "goes on with claude" in said[0], said
    # Task 1 stays done (not paid again); task 2 ran with claude, which the state now names.
    assert len(fake_claude.task_runs()) == runs + 1
    assert (work / "two.txt").exists()
    assert orjson.loads(path.read_bytes())["agent"] == "claude"
