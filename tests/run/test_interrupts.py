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
            # agentloop.__main__.main() could take the stops: nothing of ours ran yet.
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


# Sends itself SIGINT as the CLI imports what it needs first, once the stops are let in.
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
    assert done.stderr.strip() == "agent-loop: interrupted; nothing was changed", done.stderr
