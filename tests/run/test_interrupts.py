"""Ctrl+C, SIGTERM and SIGHUP from a terminal reach the whole foreground process group: every
git and jj command agent-loop runs, and agent-loop itself. At any instant of a git run, it
exits 130 with the resume line, commits each task at most once, and the next run goes on."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_project, state_of

# Enough tasks, each long enough, that no round (signalled within 0.6 s) finishes the plan: at
# most three tasks a round, so at least three rounds are interrupted however fast the tool is.
TASKS = 12
SEED = int(os.environ.get("AGENT_LOOP_SIGNAL_SEED", "20261123"))
ROUNDS = int(os.environ.get("AGENT_LOOP_SIGNAL_ROUNDS", "20"))
# A traceback through agentloop.__main__.main(): code of ours ran. Python's own start-up has a
# `main` too (`<frozen site>`, line N, in main), which is not ours.
OUR_MAIN = re.compile(r'agentloop[/\\]__main__\.py", line \d+, in main')


def start(work: Path) -> subprocess.Popen[str]:
    # A session of its own, as a terminal gives its foreground job: signals go to the group.
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                             "--no-distill", "--backoff", "0"], cwd=work,
                            env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_signals_to_the_whole_group_at_random_moments_of_a_git_run(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "".join(
        f"- task {i}\n  FAKE: write t{i}.txt {i}\n  FAKE: sleep 0.15\n" for i in range(TASKS)))
    rng = random.Random(SEED)
    interrupted = 0
    for _ in range(ROUNDS):
        child = start(work)
        time.sleep(rng.uniform(0.05, 0.6))
        os.killpg(child.pid, rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGHUP]))
        out, err = child.communicate(timeout=60)
        if child.returncode == 0:
            break  # it finished before the signal
        if child.returncode < 0 and not out and not err:
            continue  # killed while the interpreter itself started, before any code of ours
        if child.returncode == 1 and ("init_import_site" in err
                                      or err.startswith("Could not import runpy module")) \
                and not OUR_MAIN.search(err):
            # The same, earlier still: inside the `site` module (a virtual environment's .pth
            # files import a good deal), where CPython ends with a fatal error and exit 1, or
            # inside `runpy`, which `-m` imports before it runs any module: exit 1 too.
            assert not out and "KeyboardInterrupt" in err, out + err
            continue
        if child.returncode == -signal.SIGINT and not OUR_MAIN.search(err):
            # Python's own KeyboardInterrupt while it imported its start-up modules, before
            # our package began (agentloop/__init__.py takes Ctrl+C as it begins): nothing of
            # ours ran yet.
            assert not out and "KeyboardInterrupt" in err, out + err
            continue
        assert child.returncode == 130, out + err
        assert ("Resume with: agent-loop tasks.md" in err
                or "nothing was changed" in err), err
        assert "Traceback" not in err and "Broken pipe" not in err
        interrupted += 1
    last = start(work)
    out, err = last.communicate(timeout=120)
    assert last.returncode == 0, out + err
    assert interrupted >= 3
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * TASKS
    files = git(work, "log", "--format=", "--name-only").split()
    # Each task committed exactly once, holding exactly its file.
    assert sorted(files) == sorted([f"t{i}.txt" for i in range(TASKS)] + ["README.md"])
    for i in range(TASKS):
        assert (work / f"t{i}.txt").read_text() == f"{i}\n"


# Sends itself SIGHUP while the interpreter imports orjson, then notes that it went on.
AT_IMPORT = """
import importlib.abc, os, signal, sys
marker = sys.argv.pop(1)

class Hup(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "orjson":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGHUP)
            # Without the stops held back, the handler raises right here, at the next line.
            open(marker, "w").close()
        return None

sys.meta_path.insert(0, Hup())
from agentloop.__main__ import main
main()
"""


def test_a_stop_during_the_imports_waits_for_them_and_ends_in_one_line(tmp_path: Path) -> None:
    # A handler that ran inside an extension module's initialisation crashed the interpreter
    # with SIGSEGV (orjson's, 2 starts in 300 signalled at random); the stops now wait.
    marker = tmp_path / "went-on"
    done = subprocess.run([sys.executable, "-c", AT_IMPORT, str(marker), "tasks.md"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stderr.strip() == "agent-loop: interrupted while starting; nothing was changed"
    assert marker.exists()


# Sends itself SIGINT at the first import the main thread makes once main() has let the stops
# in (its own imports done), then notes that it did.
FIRST_LET_IN = """
import importlib.abc, os, signal, sys, threading
marker = sys.argv.pop(1)

class Int(importlib.abc.MetaPathFinder):
    began = False
    def find_spec(self, name, path=None, target=None):
        if name == "agentloop.console":  # imported by main() while the stops wait
            Int.began = True
        elif Int.began and threading.current_thread() is threading.main_thread() \\
                and signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, []):
            sys.meta_path.remove(self)
            with open(marker, "w") as note:
                note.write(name)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Int())
from agentloop.__main__ import main
main()
"""


def test_a_stop_at_the_first_import_after_the_stops_are_let_in_ends_in_one_line(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # It came at the import in agentloop.cli.main that came before its handlers and its `try`:
    # a traceback and exit -2, 1 round in about 50 of the random test above.
    work = git_project(tmp_path, "- task\n  FAKE: write t.txt 1\n")
    marker = tmp_path / "signalled-at"
    done = subprocess.run([sys.executable, "-c", FIRST_LET_IN, str(marker), "tasks.md",
                           "--vcs", "git", "--no-distill"], cwd=work, capture_output=True,
                          text=True, timeout=60)
    assert marker.exists()
    assert done.returncode == 130, marker.read_text() + done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "nothing was changed" in last or "Resume with" in last, done.stderr


# The main thread waits for Python's global import lock, held a moment by another thread (as
# that thread's import holds it), while a stop comes: the stop is handled the instant the
# lock is taken, a few bytecodes before the `try` in importlib that gives it back.
IMPORT_LOCK = """
import _imp, os, signal, sys, threading, time
from agentloop.errors import stop
signal.signal(signal.SIGINT, stop)
sys.path.insert(0, sys.argv[1])
main = threading.main_thread()

def hold():
    _imp.acquire_lock()
    stat = f"/proc/self/task/{main.native_id}/stat"
    while True:  # until the main thread sleeps inside importlib's _get_module_lock
        frame = sys._current_frames()[main.ident]
        state = open(stat).read().rsplit(")", 1)[1].split()[0]
        if frame.f_code.co_name == "_get_module_lock" and state == "S":
            break
        time.sleep(0.001)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the signal is in
    _imp.release_lock()

holder = threading.Thread(target=hold)
holder.start()
stopped = False
try:
    import fresh_one
    time.sleep(5)  # a stop the handler put off comes here at the latest
except KeyboardInterrupt:
    stopped = True
holder.join()
later = threading.Thread(target=lambda: __import__("fresh_two"), daemon=True)
later.start()
later.join(10)
print("stopped" if stopped else "went on", "hung" if later.is_alive() else "imported", flush=True)
os._exit(0)
"""


def test_a_stop_inside_python_s_import_machinery_leaves_no_import_lock_held(
        tmp_path: Path) -> None:
    # Held, every later import by another thread waited forever: the thread that gets the
    # first agent ready beside the lane's creation (agentloop.proc.beside) never ended.
    for name in ("fresh_one", "fresh_two"):
        (tmp_path / f"{name}.py").write_text("x = 1\n")
    done = subprocess.run([sys.executable, "-c", IMPORT_LOCK, str(tmp_path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "stopped imported", done.stdout + done.stderr


# The thread that gets the first agent ready beside the lane's creation (started as its `git
# worktree add` runs) never gets it ready (as when an interrupted import left a lock held that it
# waits for): it sends SIGINT while the main thread makes the lane, and waits forever. It waits
# holding no lock of Python's import machinery, as such a thread would: a stand-in that held the
# global import lock (a finder that waits) hung the main thread's next import on a loaded
# machine, where the main thread had gone on to the first agent's imports before it waited.
STUCK_BESIDE = """
import os, signal, sys, threading, time
from agentloop.proc.watchdog import watchdog
main = threading.main_thread()
ready = watchdog.ready

def stuck() -> bool:
    if threading.current_thread().name != "agent-loop agents ready":
        return ready()
    # In the lane's creation, or past it already (a loaded machine may start this thread
    # late): waiting for this thread as the first agent starts.
    while not any(f.f_code.co_name in ("_take_lane", "before_start") for f in frames(main.ident)):
        time.sleep(0.001)
    os.kill(os.getpid(), signal.SIGINT)
    threading.Event().wait()
    return False

def frames(ident):
    frame = sys._current_frames().get(ident)
    while frame is not None:
        yield frame
        frame = frame.f_back

watchdog.ready = stuck
from agentloop.__main__ import main as run
run()
"""


def test_a_stop_while_the_lane_is_made_does_not_wait_for_the_thread_beside_it(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = git_project(tmp_path, "- task\n  FAKE: write t.txt 1\n")
    child = subprocess.Popen([sys.executable, "-c", STUCK_BESIDE, "tasks.md", "--vcs", "git",
                              "--no-distill"], cwd=work, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired as exc:
        child.kill()
        child.communicate()
        raise AssertionError("agent-loop never ended: it waited for the stuck thread") from exc
    assert child.returncode == 130, out + err
    assert "Traceback" not in err and "Resume with" in err, err


# A Ctrl+C handled the instant main()'s first handler's setting returns (in _take_stops): a
# profile function raises it there, as Python's own handler would.
FIRST_CALL = """
import sys
from agentloop.__main__ import _take_stops, main

def stop(frame, event, arg):
    if event == "return" and frame.f_back is not None and \\
            frame.f_back.f_code is _take_stops.__code__:
        sys.setprofile(None)
        raise KeyboardInterrupt

sys.setprofile(stop)
main()
"""


def test_a_stop_before_main_has_set_its_handlers_ends_in_one_line(tmp_path: Path) -> None:
    # A traceback through agentloop.__main__.main, exit -2: 1 seed in 120 of the random test.
    done = subprocess.run([sys.executable, "-c", FIRST_CALL, "tasks.md"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stdout + done.stderr
    assert done.stderr.strip() == "agent-loop: interrupted while starting; nothing was changed"


# Sends itself SIGINT as the CLI imports what it needs first.
AT_CLI = """
import importlib.abc, os, signal, sys

class Stop(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "agentloop.console.gone":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, Stop())
from agentloop.__main__ import main
main()
"""


def test_a_stop_as_the_command_line_begins_ends_in_one_line(tmp_path: Path) -> None:
    # The CLI's first import ran before its handling of a stop began: a traceback, exit -2
    # (AGENT_LOOP_SIGNAL_SEED's default, with imports compiled afresh at every start).
    done = subprocess.run([sys.executable, "-c", AT_CLI, "tasks.md"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.strip().endswith("nothing was changed"), done.stderr
