"""The dashboard in a real Chromium (Playwright driving the system's browser): it follows a
parallel run of the fake agent live, shows agents' text as text, refuses requests without the
token, stops a run as --stop-after-running does, and its report opens with the network off.

One browser for the module; each test opens its own context. Without Playwright or a Chromium
the tests are skipped, saying which is missing (scripts/test.sh installs Debian's `chromium`
where it runs as root with apt)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.run.test_parallel import CONFLICT_PLAN, conflict_project
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git_commits, init_repo, state_of
from tests.support.runner import agent_loop

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="no chromium on PATH (apt-get install chromium)")
SCREENSHOT = os.environ.get("DASHBOARD_SCREENSHOT")   # where to keep the page's picture
MARKUP = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
IMG = "<img src=x onerror=window.pwned=3>"   # short enough for a task's summary


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        # --no-sandbox: the test may run as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Served:
    """`agent-loop tasks.md --serve ...` running, with the address it printed."""

    def __init__(self, work: Path, *args: str, plan: bool = True) -> None:
        self.child = subprocess.Popen(
            [sys.executable, "-m", "agentloop", *(["tasks.md"] if plan else []), "--serve",
             *args], cwd=work,
            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        assert self.child.stdout is not None
        first = self.child.stdout.readline()
        assert first.startswith("dashboard: http://127.0.0.1:"), first
        self.url = first.split(" ", 1)[1].strip()
        self.base, self.token = self.url.split("?token=")

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        out, err = self.child.communicate(timeout=timeout)
        return self.child.returncode, out + err


def status_of(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> int:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def parallel_plan(work: Path, pause: float) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(
        f"## Alpha\n- alpha one {IMG}\n  FAKE: write a1.txt one\n  FAKE: pause {pause}\n"
        f"  FAKE: say {MARKUP}\n- alpha two\n  FAKE: write a2.txt two\n\n"
        f"## Beta\n- beta one\n  FAKE: write b1.txt one\n  FAKE: pause {pause}\n"
        f"- beta two\n  FAKE: write b2.txt two\n")


def test_the_page_follows_a_parallel_run_and_a_late_page_sees_its_story(
        browser: Any, work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    parallel_plan(work, 1.5)
    served = Served(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    # Without the token, or with another Host, nothing is served: the page, the stream, a log,
    # a control (which also needs the page's Origin).
    assert status_of(served.base) == 403
    assert status_of(served.base + "events") == 403
    assert status_of(served.base + "api/log?plan=.&task=1") == 403
    assert status_of(served.url, {"Host": "attacker.example:80"}) == 403
    assert status_of(f"{served.base}api/stop?token={served.token}", data=b'{"plan": "."}') == 403
    page = browser.new_page()
    page.goto(served.url)
    # A lane at work shows its agent's last tool call; the rows turn completed without a reload.
    page.locator('[data-lane="Alpha"] .tool', has_text="a1.txt").wait_for(timeout=20_000)
    page.locator('[data-lane="Beta"]').wait_for()
    if SCREENSHOT:
        page.screenshot(path=SCREENSHOT)
    for task in (1, 2, 3, 4):
        page.locator(f'tr[data-task="{task}"] .status',
                     has_text="completed").wait_for(timeout=30_000)
    code, output = served.finish()
    assert code == 0, output  # not on a terminal: it ends with the run, with the run's code
    # The token is printed once, and written to no file an agent could read.
    assert output.count(served.token) == 0   # (the first line, read above, held it)
    token = served.token.encode()
    assert not [p for p in work.rglob("*") if p.is_file() and token in p.read_bytes()]
    # The plan's and the agent's markup are shown as text and run nothing.
    assert IMG in page.locator('tr[data-task="1"] .task-summary').text_content()
    assert page.locator("#app img, #app script").count() == 0
    assert page.evaluate("window.pwned") is None
    page.close()
    # `agent-loop --serve` alone follows every plan of the repository; a page that joins after
    # the run sees its whole story, reads a task's log and its change's diff.
    alone = Served(work, plan=False)
    late = browser.new_page()
    late.goto(alone.url)
    late.locator("#conn", has_text="live").wait_for()
    feed = late.locator("#feed").text_content()
    assert "run started: 4 of 4 tasks to do, 2 groups at once" in feed
    assert "task 1 started" in feed and "task 3 completed" in feed and "run finished" in feed
    assert "a1.txt" in late.locator('[data-lane="Alpha"] .tool').text_content() or \
        "a2.txt" in late.locator('[data-lane="Alpha"] .tool').text_content()
    late.locator('tr[data-task="1"]').click()
    late.locator("#log .call", has_text="a1.txt").wait_for()
    assert MARKUP in late.locator("#log").text_content()
    late.locator("#show-diff").click()
    late.locator("#diff summary", has_text="a1.txt").wait_for()
    assert late.evaluate("window.pwned") is None
    alone.child.send_signal(signal.SIGINT)
    assert alone.finish()[0] == 0
    late.close()


def test_stop_after_the_running_tasks_stops_as_the_flag_does(browser: Any, work: Path,
                                                              fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text("\n".join(
        f"## Group {g}\n- task {g}.{t}\n  FAKE: write g{g}t{t}.txt x\n  FAKE: sleep 2\n"
        for g in (1, 2, 3) for t in (1, 2)))
    served = Served(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    page = browser.new_page()
    page.goto(served.url)
    deadline = time.monotonic() + 30
    while len(fake_claude.task_runs()) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    page.locator("#stop-after:enabled").click()
    page.locator("#control-message", has_text="stop after its running tasks").wait_for()
    code, output = served.finish()
    assert code == 4, output  # stopped with tasks left, as with --stop-after-running
    assert "no new task starts" in output
    statuses = [t["status"] for t in state_of(work)["tasks"]]
    assert statuses == ["completed", "pending", "completed", "pending", "pending", "pending"]
    assert len(git_commits(work)) == 2
    page.close()


def test_the_report_opens_with_the_network_off(browser: Any, work: Path, tmp_path: Path,
                                               fake_claude: FakeClaude,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Two groups whose changes conflict (the right one stays for a person), and a failure.
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    (work / "tasks.md").write_text(CONFLICT_PLAN.format(left=0, right=2) +
                                   f"\n## Other\n- other {IMG}\n  FAKE: say {MARKUP}\n"
                                   "  FAKE: fail 5\n")
    agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill", "--max-attempts", "1")
    made = agent_loop(work, "--report", "run.html")
    assert made.returncode == 0 and "wrote run.html: 4 tasks" in made.stdout, made.stderr
    context = browser.new_context(offline=True)
    asked: list[str] = []
    context.on("request", lambda r: asked.append(r.url))
    page = context.new_page()
    page.goto((work / "run.html").as_uri())
    for task, status in enumerate(("completed", "conflicted", "pending", "failed"), 1):
        assert page.locator(f'tr[data-task="{task}"] .status').text_content() == status
    assert IMG in page.locator('tr[data-task="4"] .task-summary').text_content()
    conflicts = page.locator("#conflicts").text_content()
    assert "task 2" in conflicts and "shared.txt" in conflicts
    # the exact commands
    assert re.search(r"git log -p main\.\.agent-loop/tasks\.[0-9a-f]+-2-right", conflicts)
    assert "run finished" in page.locator("#feed").text_content()
    assert asked == [(work / "run.html").as_uri()]  # the file itself, nothing else
    assert page.evaluate("window.pwned") is None
    context.close()
