"""The dashboard without a browser: notices reach a webhook, a failing one is one warning, logs
are read a page at a time, a page that falls behind is dropped, and a plain run, --status and
--help never load any of it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from agentloop.dashboard import hub, logs
from tests.run.test_parallel import conflict_project
from tests.support.fake_agent import FakeClaude
from tests.support.repos import init_repo
from tests.support.runner import agent_loop

WEB = ("agentloop.dashboard", "starlette", "uvicorn", "sse_starlette", "apprise")


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict]]]:
    """A local HTTP endpoint that keeps every JSON body posted to it."""
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.append(json.loads(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"json://127.0.0.1:{server.server_address[1]}/", received
    server.shutdown()


def test_a_conflict_and_the_runs_end_are_sent_to_the_webhook(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch,
        webhook: tuple[str, list[dict]]) -> None:
    url, received = webhook
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill", "--notify", url)
    assert done.returncode == 4, done.stdout + done.stderr
    titles = [r["title"] for r in received]
    assert titles == ["agent-loop: conflict needs a person", "agent-loop: run finished"], received
    conflict = received[0]["message"]
    assert conflict.startswith("tasks.md: task 2 conflicts with the main line in shared.txt")
    # the exact commands
    assert re.search(r"git log -p main\.\.agent-loop/tasks\.[0-9a-f]+-2-right", conflict)
    assert "1 completed, 1 conflicted, 1 pending" in received[1]["message"]
    assert "warning" not in done.stderr


def test_a_notice_that_cannot_be_sent_is_one_warning(work: Path,
                                                     fake_claude: FakeClaude) -> None:
    (work / "tasks.md").write_text("- one\n  FAKE: fail 1\n- two\n")
    done = agent_loop(work, "--vcs", "none", "--max-attempts", "1", "--no-distill",
                      "--notify", "json://127.0.0.1:9/", "--notify", "json://127.0.0.1:9/b")
    assert done.returncode == 4, done.stdout + done.stderr   # a task failed: the run's own code
    warnings = [line for line in done.stderr.splitlines() if "notification" in line]
    assert warnings == ["warning: a notification could not be sent (no service accepted it); "
                        "the run goes on"], done.stderr
    assert "Traceback" not in done.stderr


def test_a_log_is_read_a_page_at_a_time_and_searched_through(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with open(log, "w") as out:
        for n in range(120_000):   # about 4 MB
            out.write(f"line {n:06d} the agent said something\n")
        out.write("→ Write needle.txt\n")
    last = logs.page(log, -1)
    assert last["lines"][-1] == "→ Write needle.txt" and last["after"] is None
    assert len("\n".join(last["lines"])) <= logs.PAGE
    first = logs.page(log, 0)
    assert first["lines"][0] == "line 000000 the agent said something"
    following = logs.page(log, first["after"])   # pages meet at whole lines
    assert int(following["lines"][0].split()[1]) == int(first["lines"][-1].split()[1]) + 1
    middle = logs.page(log, 1_000_003)            # any offset starts at a line's beginning
    assert middle["lines"][0].startswith("line ") and middle["lines"][0].endswith("something")
    found = logs.search(log, "NEEDLE")
    assert [h["line"] for h in found["hits"]] == ["→ Write needle.txt"]
    assert logs.page(log, found["hits"][0]["offset"])["lines"] == ["→ Write needle.txt"]
    many = logs.search(log, "said")
    assert len(many["hits"]) == logs.MAX_HITS and many["more"]


def test_a_page_that_falls_behind_is_dropped_and_the_others_go_on(tmp_path: Path) -> None:
    async def go() -> None:
        followed = hub.Hub(tmp_path)
        _, slow = followed.subscribe()
        _, quick = followed.subscribe()
        for n in range(hub.QUEUE + 1):
            followed.broadcast(("event", str(n)))
            if not quick.empty():
                quick.get_nowait()   # this page keeps up
        assert slow not in followed.clients and quick in followed.clients
        assert slow.get_nowait() is None   # its stream ends; the browser reconnects afresh
    asyncio.run(go())


PROBE = """\
import os, sys
def loaded(code):
    print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in {web!r}
                           or m.startswith("agentloop.dashboard")), flush=True)
    leave(code)
leave, os._exit = os._exit, loaded   # agent-loop leaves by os._exit, after its last word
sys.argv = ["agent-loop", *{args!r}]
from agentloop.__main__ import main
main()
"""


@pytest.mark.parametrize("args", [["tasks.md", "--vcs", "none", "--no-distill"],
                                  ["--status"], ["tasks.md", "--status"], ["--help"]])
def test_a_plain_run_status_and_help_load_no_web_library(work: Path, fake_claude: FakeClaude,
                                                         args: list[str]) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("- one\n  FAKE: write one.txt 1\n")
    probe = PROBE.format(web=set(WEB[1:]), args=args)
    done = subprocess.run([sys.executable, "-c", probe], cwd=work, capture_output=True,
                          text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "LOADED []" in done.stdout, done.stdout


def test_stop_now_is_a_ctrl_c(work: Path, fake_claude: FakeClaude) -> None:
    import time
    import urllib.request

    init_repo(work, "git")
    (work / "tasks.md").write_text("- long\n  FAKE: sleep 30\n- next\n")
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--serve", "--vcs",
                              "git", "--no-distill"], cwd=work, text=True,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert child.stdout is not None
    url = child.stdout.readline().split(" ", 1)[1].strip()
    base, token = url.split("/?token=")
    deadline = time.monotonic() + 30
    while not fake_claude.calls():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    asked = urllib.request.Request(f"{base}/api/stop", data=b'{"plan": ".", "now": true}',
                                   headers={"X-Token": token, "Origin": base,
                                            "Content-Type": "application/json"})
    with urllib.request.urlopen(asked, timeout=10) as answer:
        assert b"as Ctrl+C does" in answer.read()
    out, err = child.communicate(timeout=30)
    assert child.returncode == 130, out + err
    assert "interrupted" in out + err
    again = agent_loop(work, "--status")
    assert "interrupted" in again.stdout or "pending" in again.stdout


def test_serve_without_a_plan_reads_the_projects_and_the_users_settings(work: Path) -> None:
    import signal
    import socket

    init_repo(work, "git")
    with socket.socket() as probe:   # a port nobody listens on now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (work / "agent-loop.toml").write_text(f"serve-port = {port}\n")
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "--serve"], cwd=work, text=True,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert child.stdout is not None
    first = child.stdout.readline()
    child.send_signal(signal.SIGINT)
    child.communicate(timeout=30)
    assert first.startswith(f"dashboard: http://127.0.0.1:{port}/?token="), first
    # The user's file is read too: a broken one is the usual one line, before anything serves.
    user = Path(os.environ["HOME"]) / ".config" / "agent-loop" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('serve-host = "127.0.0.1"\nnotify = 3\n')
    done = agent_loop(work, "--serve", plan=None)
    assert done.returncode == 2 and "dashboard:" not in done.stdout
    assert "config.toml:2: notify" in done.stderr, done.stderr


def test_a_report_reads_what_an_earlier_version_wrote(work: Path) -> None:
    example = Path(__file__).resolve().parents[2] / ".agent-loop.example"
    init_repo(work, "git")
    (work / "tasks.md").write_bytes((example / "tasks.md").read_bytes())
    store = work / ".agent-loop"
    store.mkdir()
    for name in ("state.json", "events.jsonl"):
        (store / name).write_bytes((example / name).read_bytes())
    done = agent_loop(work, "--report", "run.html")
    assert done.returncode == 0, done.stderr
    html = (work / "run.html").read_text()
    state = json.loads((example / "state.json").read_text())
    for task in state["tasks"]:
        assert json.dumps(task["summary"])[1:-1].replace("<", "\\u003c") in html
    assert "http://" not in html.split("<script", 1)[0] and "<link" not in html


def test_a_report_writes_through_a_symlink_refuses_a_device_and_dash_is_stdout(
        work: Path, tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / ".agent-loop.example"
    init_repo(work, "git")
    (work / "tasks.md").write_bytes((example / "tasks.md").read_bytes())
    (work / ".agent-loop").mkdir()
    (work / ".agent-loop" / "state.json").write_bytes((example / "state.json").read_bytes())
    real, link = tmp_path / "real.html", tmp_path / "link.html"
    real.write_text("old\n")
    link.symlink_to(real)
    done = agent_loop(work, "--report", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and "<html" in real.read_text()   # through the link, kept a link
    # A link to what is no regular file (/dev/stdout is one) is never replaced by a file.
    device = tmp_path / "device.html"
    device.symlink_to("/dev/null")
    done = agent_loop(work, "--report", str(device))
    assert done.returncode == 1 and device.is_symlink(), done.stderr
    assert "is no regular file" in done.stderr and "--report -" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    # `-`: the page on standard output, no file named `-`.
    done = agent_loop(work, "--report", "-")
    assert done.returncode == 0 and done.stdout.lstrip().startswith("<!"), done.stdout[:80]
    assert not (work / "-").exists()
    # Written under .agent-loop/ (as the docs show), it leaves the next run a clean tree.
    assert agent_loop(work, "--report", ".agent-loop/report.html").returncode == 0
    with (work / "tasks.md").open("a") as plan:
        plan.write("- one more\n")   # something to run, so --dry-run judges the tree
    # (A run whose agent works in the checkout refuses uncommitted files; one in a lane, the
    # default, leaves them alone.)
    here = ("--dry-run", "--vcs", "git", "--workplace", "checkout")
    dry = agent_loop(work, *here)
    assert dry.returncode == 0 and "uncommitted" not in dry.stdout, dry.stdout
    assert agent_loop(work, "--report", "run.html").returncode == 0   # in the tree: it would
    assert "1 uncommitted file(s)" in agent_loop(work, *here).stdout


def test_on_a_terminal_the_page_stays_until_ctrl_c_and_the_exit_code_is_the_runs(
        work: Path, fake_claude: FakeClaude) -> None:
    import pty
    import re
    import select
    import signal
    import time
    import urllib.request

    init_repo(work, "git")
    (work / "tasks.md").write_text("- fails\n  FAKE: fail 1\n")
    main, child_end = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--serve", "--vcs",
                              "git", "--no-distill", "--max-attempts", "1"], cwd=work,
                             env={**os.environ, "TERM": "xterm"}, stdin=child_end,
                             stdout=child_end, stderr=child_end, start_new_session=True)
    os.close(child_end)
    seen, deadline = b"", time.monotonic() + 60
    try:
        while b"until Ctrl+C" not in seen:
            assert time.monotonic() < deadline and child.poll() is None, seen.decode()
            if select.select([main], [], [], 0.1)[0]:
                seen += os.read(main, 65536)
        url = re.search(rb"dashboard: (http://\S+)", seen).group(1).decode()  # type: ignore[union-attr]
        with urllib.request.urlopen(url, timeout=5) as answer:   # the run is over; still served
            assert answer.status == 200
        os.killpg(child.pid, signal.SIGINT)
        assert child.wait(timeout=15) == 4   # the run's code (a task failed), not Ctrl+C's 130
    finally:
        if child.poll() is None:
            child.kill()
        os.close(main)


def test_a_stop_asked_of_a_plan_that_is_not_running_never_stops_another_plans_run(
        work: Path, fake_claude: FakeClaude) -> None:
    import time

    from agentloop.dashboard import controls, sources
    from agentloop.errors import AgentLoopError

    init_repo(work, "git")
    (work / "b.md").write_text("- quick\n")
    assert agent_loop(work, "--vcs", "git", "--no-distill", plan="b.md").returncode == 0
    (work / "a.md").write_text("- long\n  FAKE: sleep 30\n- next\n")
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "a.md", "--vcs", "git",
                              "--no-distill"], cwd=work, text=True,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while len(fake_claude.task_runs()) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        b = next(p for p in sources.plans(work) if sources.plan_view(p)["task_file"] == "b.md")
        # b.md's tab, or a page that missed b's end: its buttons name b.md's run, none runs.
        for now in (True, False):
            with pytest.raises(AgentLoopError, match=r"no run of b\.md is going on .*a\.md"):
                controls.stop(b, now)
        # The same from the command line.
        asked = agent_loop(work, "--stop-after-running", plan="b.md")
        assert asked.returncode == 1 and "no run of b.md is going on" in asked.stderr, asked
        time.sleep(0.5)
        assert child.poll() is None, child.communicate()
        assert not list(work.glob(".agent-loop/**/stop-after-running*"))
    finally:
        child.terminate()
        child.communicate(timeout=30)
