#!/usr/bin/env python3
"""A fake `claude` executable for fast tests and fault injection (stdlib only).

It accepts exactly the arguments agent-loop passes and refuses anything else (exit 97), records
each call's argv (and environment) to $FAKE_CLAUDE_LOG, and does what `FAKE:` lines in the prompt
tell it:

    FAKE: write PATH TEXT      write TEXT to PATH (relative to the cwd), as a Write tool call
    FAKE: say TEXT             the final message (default: "done: <first prompt line>")
    FAKE: fail N               fail (is_error, exit 1) the first N runs of this prompt
    FAKE: exit CODE            exit with CODE after a result line with is_error
    FAKE: status HTTP          a failing run's api_error_status (e.g. 529: a transient failure)
    FAKE: limit EPOCH          a failing run met a usage limit that resets at EPOCH (unix
                               seconds): a rejected rate_limit_event, then HTTP 429
    FAKE: over-budget          end like a run cut short by --max-budget-usd
    FAKE: sleep SECONDS        wait before answering (after the init line)
    FAKE: pause SECONDS        wait here, in order among the write/bash/commit lines (an agent
                               at work after a tool call: the console's sign of life)
    FAKE: linger SECONDS       on SIGINT, go on SECONDS more before ending (exit 130): an agent
                               slow to stop (a SIGTERM meanwhile ends it at once)
    FAKE: deaf                 go on after SIGINT and SIGTERM, each noted as a line `SESSION
                               SIGNAL` in $FAKE_CLAUDE_STATE/signals.log: only SIGKILL ends it
    FAKE: hang                 never answer; also starts a child that hangs (process-group tests)
    FAKE: garbage | silent | cut | crash    non-JSON output / nothing / a result cut in half /
                                            SIGKILL itself after the init line
    FAKE: root                 refuse like the real CLI does as root without IS_SANDBOX
    FAKE: commit MESSAGE       run `git commit -a -m MESSAGE` in the cwd (an agent that commits)
    FAKE: cost USD             the run's total_cost_usd (default 0.01)

$FAKE_CLAUDE_DIRECTIVES may name a JSON file mapping a prompt's first line to more `FAKE:` lines,
so a task file can read like a real one (scripts/make_example.py uses it).

Sessions live in $FAKE_CLAUDE_STATE/sessions/<id>.txt (the prompts they saw), so `--resume`
of an unknown id fails like the real CLI, and tests can read what a session carried.

Advisor mode: a call with `--output-format json` is the retry advisor's, and must be exactly
`-p --output-format json --model M --tools "" --no-session-persistence -- PROMPT`. It prints one
JSON result object (like the real `--output-format json`), saves no session, and reads only
these lines of the prompt (the task text is embedded there; its other FAKE: lines are ignored):

    FAKE: advise TEXT          the model's answer is TEXT, verbatim (JSON, fenced JSON, garbage)
    FAKE: advise-fail          exit 1 with an is_error result
    (neither)                  {"retry": true, "reason": "looks transient", "hint": "try again"}

Reviewer mode: a read-only call (`--tools Read,Grep,Glob` ...) is the reviewer's, and must be
exactly `-p --output-format stream-json --verbose --model M --append-system-prompt S --tools
Read,Grep,Glob --disallowedTools Write,Edit,NotebookEdit,Bash --permission-mode dontAsk
--strict-mcp-config [--max-budget-usd USD] -- PROMPT`: no --dangerously-skip-permissions, no
--resume. It answers in stream-json, in a new session, writes nothing, and reads only these lines
of the task embedded in its prompt (between `<task>` and `</task>`):

    FAKE: review TEXT          the reviewer's answer; one line per review of this task, in order
                               (the last one repeats); `\n` in TEXT is a line break
    FAKE: review-fail N        the first N reviews of this task fail like an HTTP 529
    FAKE: review-limit EPOCH   ... like a usage limit instead, that resets at EPOCH (unix seconds)
    FAKE: review-hold PATH     while PATH does not exist: create it, then wait 30 s before
                               answering (a reviewer at work, for a test's Ctrl+C)
    (no review line)           APPROVED
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

ALLOWED_FLAGS = {"-p", "--verbose", "--dangerously-skip-permissions"}
ALLOWED_VALUES = {"--output-format": {"stream-json"}, "--model": None,
                  "--append-system-prompt": None, "--resume": None, "--max-budget-usd": None}
ADVISOR_DEFAULT = '{"retry": true, "reason": "looks transient", "hint": "try again"}'
REVIEWER_HEAD = ["-p", "--output-format", "stream-json", "--verbose", "--model", None,
                 "--append-system-prompt", None, "--tools", "Read,Grep,Glob", "--disallowedTools",
                 "Write,Edit,NotebookEdit,Bash", "--permission-mode", "dontAsk",
                 "--strict-mcp-config"]
REVIEWER_ONLY = {"--tools", "--disallowedTools", "--permission-mode", "--strict-mcp-config"}


def refuse(message: str) -> None:
    sys.stderr.write(f"fake claude: {message}\n")
    sys.exit(97)


def parse(argv: list[str], prompt: str) -> tuple[dict[str, str], str]:
    # The prompt comes on stdin, as agent-loop sends it; a prompt argument is refused.
    options: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ALLOWED_FLAGS:
            options[arg] = ""
        elif arg in ALLOWED_VALUES and i + 1 < len(argv):
            allowed = ALLOWED_VALUES[arg]
            if allowed is not None and argv[i + 1] not in allowed:
                refuse(f"unexpected value for {arg}: {argv[i + 1]!r}")
            options[arg] = argv[i + 1]
            i += 1
        else:
            refuse(f"unexpected argument {arg!r}")
        i += 1
    if not prompt:
        refuse("no prompt on stdin")
    return options, prompt


def directives(prompt: str) -> list[tuple[str, str]]:
    found = []
    for line in prompt.splitlines():
        line = line.strip().lstrip("-*+ ").strip()
        if line.startswith("FAKE:"):
            word, _, rest = line[5:].strip().partition(" ")
            found.append((word, rest.strip()))
    return found


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def counter(state: Path, name: str) -> int:
    path = state / "counters" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(state):
        n = int(path.read_text()) + 1 if path.exists() else 1
        replace(path, str(n))
    return n


@contextlib.contextmanager
def locked(state: Path) -> Iterator[None]:
    # Several fakes run at once in a parallel run or a fleet's jobs: two reading a counter at the
    # same moment would hand out one session id twice, and mix their sessions' costs.
    state.mkdir(parents=True, exist_ok=True)
    with open(state / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def replace(path: Path, text: str) -> None:
    # Atomic, so a fake killed mid-write (tests/run/test_crash.py kills hundreds) leaves no empty
    # file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def main() -> None:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print("2.1.330 (Claude Code) [fake]")
        return
    state = Path(os.environ.get("FAKE_CLAUDE_STATE", Path.cwd() / ".fake-claude"))
    state.mkdir(parents=True, exist_ok=True)
    stdin = sys.stdin.read()
    log = os.environ.get("FAKE_CLAUDE_LOG")
    if log:
        # One write of the whole line (an O_APPEND file's write lands whole at its end): a
        # buffered file splits a line longer than its buffer (the environment is) in several,
        # between which another agent's line, or a test's read, could come.
        line = json.dumps({"argv": argv, "cwd": os.getcwd(), "stdin": stdin,
                           "env": dict(os.environ), "time": time.time()}) + "\n"
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    head = argv
    if "--output-format" in head and head[head.index("--output-format") + 1:][:1] == ["json"]:
        advisor(argv, stdin, state)
        return
    if REVIEWER_ONLY & set(head):
        reviewer(argv, stdin, state)
        return
    options, prompt = parse(argv, stdin)
    if "-p" not in options or options.get("--output-format") != "stream-json" \
            or "--verbose" not in options:
        refuse("needs -p --output-format stream-json --verbose")
    todo = directives(prompt)
    extra = os.environ.get("FAKE_CLAUDE_DIRECTIVES")
    if extra:
        by_first_line = json.loads(Path(extra).read_text())
        todo += directives("\n".join(by_first_line.get(prompt.strip().splitlines()[0], [])))
    words = dict(todo)
    if "root" in words:
        sys.stderr.write("--dangerously-skip-permissions cannot be used with root/sudo privileges "
                         "for security reasons\n")
        sys.exit(1)
    sessions = state / "sessions"
    sessions.mkdir(exist_ok=True)
    resume = options.get("--resume")
    if resume:
        if not (sessions / f"{resume}.txt").exists():
            sys.stderr.write(f"No conversation found with session ID: {resume}\n")
            sys.exit(1)
        session = resume
    else:
        session = "00000000-0000-4000-8000-%012d" % counter(state, "sessions")
    with open(sessions / f"{session}.txt", "a", encoding="utf-8") as out:
        out.write(prompt + "\n\x1e\n")
    model = options.get("--model", "")
    emit({"type": "system", "subtype": "init", "session_id": session, "model": model,
          "cwd": os.getcwd(), "tools": ["Write", "Bash"]})
    if "linger" in words:
        signal.signal(signal.SIGINT, lambda *_: (time.sleep(float(words["linger"])),
                                                 sys.exit(130)))
    if "deaf" in words:
        def noted(signum: int, _frame: object) -> None:
            line = f"{session} {signal.Signals(signum).name}\n".encode()
            fd = os.open(state / "signals.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)  # one write: the lines of several agents never mix
            finally:
                os.close(fd)

        signal.signal(signal.SIGINT, noted)
        signal.signal(signal.SIGTERM, noted)
    if "garbage" in words:
        sys.stdout.write("this is not json\n{\"half\": \n")
        return
    if "silent" in words:
        return
    if "crash" in words:
        os.kill(os.getpid(), signal.SIGKILL)
    if "hang" in words:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        time.sleep(3600)
    if "sleep" in words:
        time.sleep(float(words["sleep"]))
    text = words.get("say") or "done: " + prompt.strip().splitlines()[0][:60]
    for word, rest in todo:
        if word == "write":
            path, _, content = rest.partition(" ")
            target = Path(path)
            emit({"type": "assistant", "session_id": session, "message": {"role": "assistant",
                  "content": [{"type": "tool_use", "id": "t1", "name": "Write",
                               "input": {"file_path": str(Path.cwd() / target),
                                         "content": content}}]}})
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content + "\n", encoding="utf-8")
            emit({"type": "user", "session_id": session, "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": f"wrote {path}"}]}})
        elif word == "pause":
            time.sleep(float(rest))
        elif word == "bash":  # what a real agent's Bash tool may do, hostile or not
            subprocess.run(["bash", "-c", rest], check=False, stdin=subprocess.DEVNULL)
        elif word == "commit":
            subprocess.run(["git", "add", "-A"], check=True)
            subprocess.run(["git", "commit", "-q", "-m", rest], check=True)
    failing = False
    if "fail" in words:
        # Keyed by the directives, so a retried prompt with a note in front counts as the same.
        key = "fail-" + hashlib.sha256(repr(todo).encode()).hexdigest()[:16]
        failing = counter(state, key) <= int(words["fail"])
    exit_code = int(words.get("exit", "1" if failing else "0"))
    is_error = failing or exit_code != 0
    if is_error and "say" not in words:
        text = "simulated failure"
    status = int(words["status"]) if "status" in words else None
    if is_error and "limit" in words:  # as the real CLI says a usage limit in stream-json
        emit({"type": "rate_limit_event", "session_id": session, "rate_limit_info": {
            "status": "rejected", "rateLimitType": "five_hour",
            "resetsAt": int(words["limit"])}})
        status = 429
    if "over-budget" in words:
        emit({"type": "result", "subtype": "error_max_budget_usd", "is_error": True,
              "result": None, "errors": ["Reached maximum budget"], "session_id": session,
              "total_cost_usd": session_total(state, session, 0.01), "usage": {},
              "num_turns": 1, "duration_ms": 5, "permission_denials": []})
        sys.exit(1)
    emit({"type": "assistant", "session_id": session, "message": {"role": "assistant",
          "content": [{"type": "text", "text": text}]}})
    result = {"type": "result", "subtype": "success", "is_error": is_error, "result": text,
              "session_id": session,
              "total_cost_usd": session_total(state, session, float(words.get("cost", "0.01"))),
              "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0},
              "num_turns": 1, "duration_ms": 5, "permission_denials": [],
              "api_error_status": status if is_error else None}
    line = json.dumps(result)
    if "cut" in words:
        sys.stdout.write(line[: len(line) // 2])
        sys.stdout.flush()
        return
    emit(result)
    sys.exit(exit_code)


def advisor(argv: list[str], prompt: str, state: Path) -> None:
    # Exactly the retry advisor's call: no tools, no resume, no saved session, no permissions flag.
    if len(argv) != 8 or argv[:4] != ["-p", "--output-format", "json", "--model"] or \
            argv[5:8] != ["--tools", "", "--no-session-persistence"] or not prompt:
        refuse(f"advisor mode needs exactly -p --output-format json --model M --tools '' "
               f"--no-session-persistence and the prompt on stdin, got {argv!r}")
    # Only the advise lines count: the embedded task's write/fail/sleep/... are not for us.
    words = [(word, rest) for word, rest in directives(prompt) if word.startswith("advise")]
    failing = any(word == "advise-fail" for word, _ in words)
    text = next((rest for word, rest in words if word == "advise"), ADVISOR_DEFAULT)
    if failing:
        text = "API Error: 500 simulated advisor failure"
    session = "00000000-0000-4000-a000-%012d" % counter(state, "advisor")
    emit({"type": "result", "subtype": "success", "is_error": failing, "result": text,
          "session_id": session, "total_cost_usd": 0.0 if failing else 0.001,
          "usage": {"input_tokens": 0 if failing else 100, "output_tokens": 0 if failing else 20,
                    "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
          "num_turns": 1, "duration_ms": 5, "permission_denials": [],
          "terminal_reason": "api_error" if failing else "completed",
          "api_error_status": 500 if failing else None})
    sys.exit(1 if failing else 0)


def reviewer(argv: list[str], prompt: str, state: Path) -> None:
    # Exactly the read-only reviewer's call; only the review lines of the embedded task count.
    head, rest = argv[:len(REVIEWER_HEAD)], argv[len(REVIEWER_HEAD):]
    if rest[:1] == ["--max-budget-usd"]:
        rest = rest[2:]
    if len(head) != len(REVIEWER_HEAD) or rest or not prompt or any(
            want is not None and got != want for got, want in zip(head, REVIEWER_HEAD)):
        refuse(f"reviewer mode needs exactly {' '.join(a or 'X' for a in REVIEWER_HEAD)} "
               f"[--max-budget-usd USD] and the prompt on stdin, got {argv!r}")
    task = prompt.partition("<task>\n")[2].partition("\n</task>")[0]
    key = hashlib.sha256(task.encode()).hexdigest()[:16]
    words = directives(task)
    reviews = [text for word, text in words if word == "review"]
    fails = int(next((text for word, text in words if word == "review-fail"), "0"))
    session = "00000000-0000-4000-b000-%012d" % counter(state, "reviewer")
    emit({"type": "system", "subtype": "init", "session_id": session, "model": argv[5],
          "cwd": os.getcwd(), "tools": ["Read", "Grep", "Glob"]})
    if fails and counter(state, "review-fail-" + key) <= fails:
        limit = next((text for word, text in words if word == "review-limit"), None)
        if limit is not None:  # a usage limit, resetting at that unix time
            emit({"type": "rate_limit_event", "session_id": session, "rate_limit_info": {
                "status": "rejected", "rateLimitType": "five_hour", "resetsAt": int(limit)}})
            emit({"type": "result", "subtype": "success", "is_error": True,
                  "result": "You've hit your limit", "session_id": session,
                  "total_cost_usd": 0, "usage": {}, "num_turns": 1, "duration_ms": 5,
                  "permission_denials": [], "api_error_status": 429,
                  "api_error_type": "rate_limit_error"})
            sys.exit(1)
        emit({"type": "result", "subtype": "success", "is_error": True,
              "result": "API Error: 529 Overloaded (fake)", "session_id": session,
              "total_cost_usd": 0, "usage": {}, "num_turns": 1, "duration_ms": 5,
              "permission_denials": [], "api_error_status": 529,
              "api_error_type": "overloaded_error"})
        sys.exit(1)
    hold = next((Path(text) for word, text in words if word == "review-hold"), None)
    if hold is not None and not hold.exists():
        hold.touch()
        time.sleep(30)
    n = counter(state, "review-" + key)
    text = reviews[min(n, len(reviews)) - 1].replace("\\n", "\n") if reviews else "APPROVED"
    emit({"type": "assistant", "session_id": session, "message": {"role": "assistant",
          "content": [{"type": "text", "text": text}]}})
    emit({"type": "result", "subtype": "success", "is_error": False, "result": text,
          "session_id": session, "total_cost_usd": 0.002,
          "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0},
          "num_turns": 1, "duration_ms": 5, "permission_denials": []})


def session_total(state: Path, session: str, cost: float) -> float:
    # Like the real CLI, total_cost_usd adds up over a resumed session.
    path = state / "sessions" / f"{session}.cost"
    with locked(state):
        total = (float(path.read_text()) if path.exists() else 0.0) + cost
        replace(path, repr(total))
    return round(total, 6)


if __name__ == "__main__":
    main()
