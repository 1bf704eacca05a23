"""A short run's start: what a plain run (git, no hooks, no checks, no review, no distilling,
off a terminal) loads and makes before its first agent, and what its first task makes on the
main thread once the agent started, read off the real program with Python's audit hooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo

# The run's record of what happened, each line in order: a module's first import, a process
# started (its argv), a file replaced (os.replace: its new path), a dataclass made (its
# module, name, and whether the main thread made it; then a line more if the standard library
# compiled its __init__, __repr__ or __eq__), a collection of the garbage collector's.
WATCH = """\
import dataclasses, runpy, sys, threading
out = open({seen!r}, 'a', buffering=1)
def hook(event, args):
    if event == 'import':
        out.write(f'import {{args[0]}}\\n')
    elif event == 'subprocess.Popen':
        out.write(f'process {{" ".join(map(str, args[1]))}}\\n')
    elif event == 'os.rename':
        out.write(f'replaced {{args[1]}}\\n')
sys.addaudithook(hook)
import gc
gc.callbacks.append(lambda phase, info: phase == 'start' and out.write('collect\\n'))
make = dataclasses._process_class
made = set()
def process_class(cls, *args, **kwargs):
    made.add(f'{{cls.__module__}}.{{cls.__qualname__}}')
    out.write(f'made {{cls.__module__}}.{{cls.__qualname__}} '
              f'{{threading.current_thread() is threading.main_thread()}}\\n')
    if args[0] or args[1] or args[2]:   # (init, repr, eq, ...): compiled for it
        out.write(f'compiled {{cls.__module__}}.{{cls.__qualname__}}\\n')
    return make(cls, *args, **kwargs)
dataclasses._process_class = process_class
# The thread that makes the first task's records ahead, waited for once the first agent has
# started (it makes those of the agent's output and end while the agent runs), and, as that
# agent starts, for the last record it makes before (Deadline, which the agent's start makes
# once it runs): nothing else waits for it, and a class it had not made yet would be made by
# the main thread (a race, not a fault; seen on a loaded machine).
ahead = []
begin = threading.Thread.start
def start(self):
    begin(self)
    if self.name == 'agent-loop records ahead':
        ahead.append(self)
threading.Thread.start = start
from agentloop.proc import running
before_start, after_start = running.before_start, running.after_start
def starting():
    before_start()
    for _ in range(3000):
        if not (ahead and ahead[-1].is_alive()) or \
                'agentloop.proc.read_output.Deadline' in made:
            break
        threading.Event().wait(0.01)
running.before_start = starting
def started():
    after_start()
    while ahead:
        ahead.pop().join()
running.after_start = started
sys.argv = ['agent-loop', *{args!r}]
runpy.run_module('agentloop', run_name='__main__')
"""

# Ours that a plain run needs for none of its work: the hooks' watcher (no --on-task, no
# --on-finish).
NOT_FOR_A_PLAIN_RUN = ("agentloop.run.hooks",)
# Records a plain run makes only once its first agent works, or never (no --budget): none is
# made before it, where it takes the main thread's time (agentloop.ondemand).
MADE_ONCE_AN_AGENT_WORKS = ("agentloop.app.RunResult", "agentloop.run.budget.Reckoning")
# A git lane's record of the repository's settings, which its first step makes: made by the
# thread that makes the records ahead, beside the lane's git (agentloop.vcs.choose.load_lane).
NOT_BY_THE_MAIN_THREAD = ("agentloop.vcs.git.planted.Settings",)


def watched(work: Path, tmp_path: Path, *args: str) -> list[str]:
    """What `agent-loop ARGS` did in `work`, line by line (WATCH)."""
    seen = tmp_path / "seen.txt"
    done = subprocess.run([sys.executable, "-c", WATCH.format(seen=str(seen), args=list(args))],
                          cwd=work, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return seen.read_text().splitlines()


def agents(lines: list[str]) -> list[int]:
    """Where in `lines` each of the agent's task runs starts."""
    return [n for n, line in enumerate(lines)
            if line.startswith("process ") and "stream-json" in line]


def test_a_plain_run_loads_no_hooks_and_makes_its_first_task_s_records_beside(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    plan = "## One\n- first\n  FAKE: write a.txt A\n- second\n  FAKE: write b.txt B\n"
    work = make_repo(tmp_path / "project", "git", plan=plan)
    lines = watched(work, tmp_path, "tasks.md", "--vcs", "git", "--no-distill")
    starts = agents(lines)
    assert len(starts) == 2, "two tasks, two agents: is the run read right?"
    imported = {line.split()[1] for line in lines if line.startswith("import agentloop")}
    assert "agentloop.run.attempt" in imported
    loaded = sorted(imported & set(NOT_FOR_A_PLAIN_RUN))
    assert not loaded, f"a plain run loads {loaded}: load them where their work begins"
    early = [line.split()[1] for line in lines[:starts[0]] if line.startswith("made ")]
    assert "agentloop.run.start.Admitted" in early, "are the records watched?"
    # Each record's __init__, __repr__, __eq__ and __hash__ are ondemand's: the standard
    # library compiled them (three or four compiles a class, most of the cost of making one)
    # for each of the forty-odd records a run makes before its first agent.
    compiled = [line.split()[1] for line in lines[:starts[0]]
                if line.startswith("compiled agentloop.")]
    assert not compiled, f"made with methods compiled of their own: {compiled}"
    made_early = sorted(set(early) & set(MADE_ONCE_AN_AGENT_WORKS))
    assert not made_early, f"made before the first agent starts: {made_early}"
    by_main = [line.split()[1] for line in lines[:starts[0]]
               if line.startswith("made ") and line.endswith(" True")]
    main = sorted(set(by_main) & set(NOT_BY_THE_MAIN_THREAD))
    assert not main, f"made by the main thread on its way to the first agent: {main}"
    # The records the first task makes once its agent started (the agent's result, the events
    # and decisions of its end, its receipt) were made beside it, while it ran, not by the main
    # thread while the task's end waits for them, nor before the agent started, where they
    # took the interpreter from the main thread's way to it.
    first_task = [line.split()[1] for line in lines[starts[0]:starts[1]]
                  if line.startswith("made agentloop") and line.endswith(" True")]
    assert not first_task, f"made on the first task's path: {first_task}"
    finished = "made agentloop.run.events.TaskFinished False"
    assert any(line.startswith(finished) for line in lines[starts[0]:starts[1]]), \
        "the task's end is not made ahead, while its agent runs"



def test_the_plan_s_copy_is_written_beside_the_first_agent_s_start(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The plan's copy in its state folder (agentloop.state.plan_copy: what a run killed after
    a `jj undo` deleted the plan leaves the next run to name) is written once the run's first
    command it streams has started (here its first agent), while the run waits for its first
    line: not on the way to it, where it took a millisecond of every run's start."""
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    lines = watched(work, tmp_path, "tasks.md", "--vcs", "git", "--no-distill")
    starts = agents(lines)
    assert len(starts) == 1, "one task, one agent: is the run read right?"
    copies = [n for n, line in enumerate(lines)
              if line.startswith("replaced ") and line.endswith("/plan-as-read.md")]
    assert len(copies) == 1, "is the copy watched?"
    assert copies[0] > starts[0], "the plan's copy is written on the way to the first agent"
    assert (work / "a.txt").read_text().strip() == "A"

def test_a_run_with_a_hook_loads_the_hooks_watcher(tmp_path: Path,
                                                   fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    lines = watched(work, tmp_path, "tasks.md", "--vcs", "git", "--no-distill",
                    "--on-finish", "echo done > finished.txt")
    assert "import agentloop.run.hooks" in lines
    assert (work / "finished.txt").read_text().strip() == "done"


def test_a_run_s_start_runs_no_collection(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """What a run's start makes lives as long as the process: the collector, which would walk
    it some fifty times for nothing, waits until the first agent has started
    (agentloop.collector), then leaves it out of its walks for good."""
    work = make_repo(tmp_path / "project", "git", plan="## One\n- first\n  FAKE: write a.txt A\n")
    lines = watched(work, tmp_path, "tasks.md", "--vcs", "git", "--no-distill")
    starts = agents(lines)
    assert len(starts) == 1, "one task, one agent: is the run read right?"
    start = lines.index("import agentloop.console.plain")  # the run's command line read
    assert "collect" in lines[:start], "is the collector watched?"
    assert "collect" not in lines[start:starts[0]], "collections while the run starts"


def test_the_collector_is_as_usual_once_released() -> None:
    import gc

    from agentloop import collector

    usual = gc.get_threshold()
    try:
        collector.hold()
        assert gc.get_threshold()[0] == collector.STARTING
        frozen = gc.get_freeze_count()
        collector.release()
        assert gc.get_threshold() == usual
        assert gc.get_freeze_count() > frozen
        collector.release()  # once only: nothing more to do
        assert gc.get_threshold() == usual
    finally:
        gc.set_threshold(*usual)
        gc.unfreeze()
