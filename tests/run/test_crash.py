"""Crash consistency: SIGKILL the tool anywhere, run it again until done, and nothing is lost.

Three kinds of test, each on git and on jj, all with the real tool as a process:

* random kills: rounds of a fresh repository with 20 tasks in four groups, every task having
  the fake agent write its own file after a short pause; the tool is killed at seeded random
  moments (start-up and the recovery a re-run does, the VCS step before and after the agent,
  the agent run, the state writes) and run again until a run ends by itself.
* a sweep: a `git`/`jj` wrapper first on PATH kills the tool just before, during, or just
  after the k-th VCS command of a one-task run, for every k.
* one exact reproduction of each inconsistency they found (all fixed since).

After every kill state.json loads and no agent outlives the tool. At the end every task is
completed exactly once; the history holds exactly one change (jj) or commit (git) per task,
holding exactly that task's file; no other change holds a task's file; the state names them.

Hunt with other seeds or more kills:
    AGENT_LOOP_CRASH_SEED=7 AGENT_LOOP_CRASH_KILLS=300 pytest tests/run/test_crash.py -s -k random
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import orjson
import pytest

from agentloop import proc
from agentloop.state import journal
from agentloop.state.schema import from_bytes
from agentloop.state.store import Store
from tests.support.fake_agent import FakeClaude

KILLS = int(os.environ.get("AGENT_LOOP_CRASH_KILLS", "100"))
SEEDS = {"git": 20260101, "jj": 20260102}
# Most kills land in the first 400 ms (start-up, recovery, the first tasks); a few later ones
# let a round move on. A round that took this many kills gets one run without a kill.
SHORT, LONG, LONG_SHARE, MAX_KILLS_PER_ROUND = 0.4, 1.5, 0.15, 60
# How long an agent run whose parent died waits before it calls itself an orphan.
ORPHAN_GRACE = 1.0
# What may sit in a repository besides the tasks' files (the user's, the tool's).
OWN_FILES = {"README.md", ".gitignore", "tasks.md"}

@dataclass
class Tally:
    """What the kills hit, by the last line the tool printed before it died."""

    kills: int = 0
    rounds: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    waited_for: int = 0  # VCS commands a kill left running, waited for before the next run


# Appended to the fake agent for these tests: a run that outlives agent-loop (nobody killed it
# with agent-loop) leaves a mark, named by its pid and by what it was. One that was only exiting
# when agent-loop died is killed by the watchdog within milliseconds: it never wakes up.
ORPHAN_HOOK = """
import atexit as _atexit
_parent = os.getppid()


def _orphaned() -> None:
    if os.getppid() != _parent:
        time.sleep(ORPHAN_GRACE)
        what = "task" if "stream-json" in sys.argv else "helper"
        Path(os.environ["ORPHAN_MARKS"], f"{os.getpid()}-{what}").touch()


_atexit.register(_orphaned)

"""


@pytest.fixture
def marks(fake_claude: FakeClaude, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the fake agent marks a run that outlived agent-loop (see ORPHAN_HOOK)."""
    folder = tmp_path / "orphans"
    folder.mkdir()
    source = fake_claude.bin.read_text()
    main = source.index('\nif __name__ == "__main__":')
    hook = ORPHAN_HOOK.replace("ORPHAN_GRACE", str(ORPHAN_GRACE))
    fake_claude.bin.write_text(source[:main] + hook + source[main:])
    monkeypatch.setenv("ORPHAN_MARKS", str(folder))
    return folder


def orphans(marks: Path, label: str, wait: bool = False) -> list[str]:
    """Agent runs (tasks, or the advisor's and commit-message calls) that outlived the tool."""
    if wait:  # the last kill's orphan, if any, marks itself ORPHAN_GRACE later
        time.sleep(ORPHAN_GRACE + 0.5)
    found = [f"{label}: agent run {mark.name} outlived the tool" for mark in marks.iterdir()]
    for mark in marks.iterdir():
        mark.unlink()
    return found


# -- the project ------------------------------------------------------------------------------

def task_file(groups: int, per_group: int, pause: float) -> str:
    lines = []
    for g in range(groups):
        lines.append(f"## Group {g + 1}\n")
        for i in range(per_group):
            n = g * per_group + i + 1
            lines.append(f"- task {n:02d}\n  FAKE: write f{n:02d}.txt content {n}\n"
                         + (f"  FAKE: sleep {pause}\n" if pause else ""))
        lines.append("\n")
    return "".join(lines)


def subject(n: int, per_group: int) -> str:
    return f"agent-loop: Group {(n - 1) // per_group + 1} / task {n:02d}"


def git(work: Path, *args: str) -> str:
    return proc.run(["git", *args], cwd=work).stdout


def jj(work: Path, *args: str) -> str:
    return proc.run(["jj", "--no-pager", "--color=never", "--ignore-working-copy", *args],
                    cwd=work).stdout


def new_repo(work: Path, kind: str, groups: int, per_group: int, pause: float = 0.05) -> None:
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    if kind == "git":
        git(work, "init", "-q")
        git(work, "add", "README.md")
        git(work, "commit", "-qm", "initial")
    else:
        proc.run(["jj", "git", "init"], cwd=work)
    (work / "tasks.md").write_text(task_file(groups, per_group, pause))


def start(work: Path, kind: str, out: Path, env: dict[str, str] | None = None,
          *extra: str) -> subprocess.Popen[bytes]:
    """The tool as a process in a session of its own (so what it leaves behind can be found)."""
    # PYTHONFAULTHANDLER: a run that hangs (ended) prints where each of its threads is.
    env = {**(env or os.environ), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1",
           "PYTHONFAULTHANDLER": "1"}
    with open(out, "w") as sink:
        return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", kind,
                                 *extra],
                                cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=sink,
                                stderr=subprocess.STDOUT, start_new_session=True)


def ended(tool: subprocess.Popen[bytes], out: Path, within: float = 120) -> int:
    """The tool's exit code; a run still going after `within` seconds fails the test with what
    it was doing: its processes, and each of its threads' stack (SIGABRT, faulthandler)."""
    try:
        return tool.wait(timeout=within)
    except subprocess.TimeoutExpired:
        pass
    tree = "\n".join(f"{pid} {_stat(pid)} {_cmdline(pid).replace(chr(0), ' ')[:300]}"
                     for pid in os.listdir("/proc") if pid.isdigit()
                     and (_stat(pid) or ("", 0))[1] == tool.pid)
    tool.send_signal(signal.SIGABRT)
    try:
        tool.wait(timeout=10)
    except subprocess.TimeoutExpired:
        tool.kill()
        tool.wait()
    raise AssertionError(f"the run was still going after {within:.0f}s; its processes:\n{tree}"
                         f"\nits output:\n{out.read_text(errors='replace')[-12000:]}")


# -- after a kill ---------------------------------------------------------------------------

def _stat(pid: str) -> tuple[str, int] | None:
    """(state letter, session id) of a process; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[3])


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


def _alive(match: Callable[[str], bool]) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and match(entry):
            st = _stat(entry)
            if st is not None and st[0] not in "ZX":  # a zombie is dead, waiting to be reaped
                found.append(entry)
    return found


def _cwd_in(pid: str, folder: Path) -> bool:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(folder)
    except OSError:
        return False


def settle(tool_pid: int, fake: FakeClaude, where: str, within: Path | None = None) -> int:
    """No agent may outlive the tool; VCS commands it was running are waited for. `within`:
    only agents working in that folder count (other runs go on beside this one).

    The agent runs in a session of its own, and the kernel kills it with the tool. A git or
    jj command the tool was running finishes its work (a user's re-run seconds later finds it
    done), so the next run waits for it too. Returns how many there were.
    """
    agent = str(fake.bin)
    deadline = time.monotonic() + 2
    mine: Callable[[str], bool] = lambda p: agent in _cmdline(p) and (  # noqa: E731
        within is None or _cwd_in(p, within))
    while (agents := _alive(mine)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not agents, f"{where}: agent process(es) {agents} outlived the killed tool"
    ours = lambda p: (_stat(p) or ("", 0))[1] == tool_pid  # noqa: E731
    leftovers = len(_alive(ours))
    deadline = time.monotonic() + 20
    while _alive(ours):
        assert time.monotonic() < deadline, f"{where}: the killed tool's children still run"
        time.sleep(0.01)
    return leftovers


def state_loads(work: Path) -> bool:
    """Whether state.json exists; raises when it exists and does not load, or when its
    journal has a line cut short anywhere but at its end (the only place a kill can cut)."""
    store = Store(work)
    if not store.state_path.exists():
        return False
    state = store.load()
    assert state is not None
    lines = store.journal.path.read_bytes().split(b"\n") if store.journal.path.exists() else []
    # A journal of an earlier snapshot (killed before it was emptied) is never read at all.
    # (None yet when the kill came between the snapshot and the journal's first write.)
    if state.journal_id is not None and lines and state.journal_id.encode() in lines[0]:
        whole = journal.apply(from_bytes(store.state_path.read_bytes(), store.state_path),
                              store.journal.path.read_bytes())
        assert whole >= len(lines) - 2, f"the journal stops at line {whole + 1} of {len(lines)}"
    return True


# -- the verdict ------------------------------------------------------------------------------

def check(work: Path, kind: str, label: str, per_group: int) -> list[str]:
    """Every task completed once, with its file; one change or commit per task; state agrees."""
    path = work / ".agent-loop" / "state.json"
    state = from_bytes(path.read_bytes(), path)
    history = git_history(work) if kind == "git" else jj_history(work)
    tasks = [(c, d, f) for c, d, f in history if d.startswith("agent-loop")]
    others = [(c, d, f) for c, d, f in history if not d.startswith("agent-loop")]
    problems = []
    for n, t in enumerate(state.tasks, 1):
        mine = [(c, f) for c, d, f in tasks if d == subject(n, per_group)]
        outcomes = [a.outcome for a in t.history]
        if t.status != "completed" or outcomes.count("completed") != 1:
            problems.append((f"{label}: task {n} is {t.status}, attempts "
                                             f"{outcomes}"))
        made = work / f"f{n:02d}.txt"
        if not made.exists() or made.read_text() != f"content {n}\n":
            problems.append((f"{label}: f{n:02d}.txt lost its content"))
        full = [c for c, f in mine if f == [f"f{n:02d}.txt"]]
        empty = [c for c, f in mine if not f]
        if len(full) != 1 or len(mine) != len(full) + len(empty):
            problems.append((f"{label}: task {n} has changes {mine} in history"))
        elif empty:
            problems.append(f"{label}: task {n} has empty changes {empty} besides its own "
                            f"{full[0]} (a change a killed run began and nobody dropped)")
        if t.change_id != (full[0] if full else None) or t.files != [f"f{n:02d}.txt"]:
            problems.append(f"{label}: task {n}: the state records change {t.change_id} with "
                            f"files {t.files}; history has {full}")
    expected = {subject(n, per_group) for n in range(1, len(state.tasks) + 1)}
    for c, d, _ in tasks:
        if d not in expected:
            problems.append((f"{label}: {c} ({d!r}) is no task's change"))
    for c, d, f in others:
        if not set(f) <= OWN_FILES:
            problems.append((f"{label}: {c} ({d!r}) holds task files: {f}"))
    if kind == "git":
        dirty = {line[3:] for line in git(work, "status", "--porcelain").splitlines()}
        if not dirty <= OWN_FILES:
            problems.append((f"{label}: uncommitted: {sorted(dirty - OWN_FILES)}"))
    return problems


def git_history(work: Path) -> list[tuple[str, str, list[str]]]:
    """(sha, subject, files) of every commit on HEAD, oldest first."""
    rows = [row.split("\t", 1) for row in
            git(work, "log", "--reverse", "--format=%H%x09%s").splitlines()]
    return [(sha, subj, git(work, "show", "--name-only", "--format=", sha).split())
            for sha, subj in rows]


JJ_ROW = ('change_id ++ "\\t" ++ if(divergent, "DIVERGENT ") ++ description.first_line() ++ '
          '"\\t" ++ self.diff().files().map(|f| f.path()).join(",") ++ "\\n"')


def jj_history(work: Path) -> list[tuple[str, str, list[str]]]:
    """(change id, description, files) of every change under @, oldest first."""
    out = jj(work, "log", "--no-graph", "-r", "::@ ~ root()", "-T", JJ_ROW)
    rows = [line.split("\t") for line in out.splitlines()]
    return [(c, d, f.split(",") if f else []) for c, d, f in reversed(rows)]


def verdict(problems: list[str], summary: str) -> None:
    """Every problem found, with the run's figures."""
    assert not problems, "\n".join(problems + [summary])


# -- random kills -----------------------------------------------------------------------------

def phase(out: str) -> str:
    """Where a kill landed, from the last line the tool printed."""
    marks = ("[", "jj: created", "claude: running", "completed in", "change ", "jj: abandoned")
    last = next((line for line in reversed([x.strip() for x in out.splitlines()])
                 if line.startswith(marks)), "")
    if not last:
        return "start-up and recovery"
    if last.startswith("claude: running"):
        return "agent run"
    if last.startswith("completed in"):
        return "VCS finish and state write"
    if last.startswith("change "):
        return "between tasks"
    return "VCS begin and state write"


def kill_until_done(work: Path, kind: str, rng: random.Random, fake: FakeClaude, tally: Tally,
                    label: str) -> list[str]:
    """Start the tool, kill it at a random moment, again and again until a run ends by itself.

    Every run's output is kept in `<round>.log` beside the round's folder.
    """
    out = work.parent / f"{work.name}.out"
    seen_state, kills = False, 0
    with open(work.parent / f"{work.name}.log", "w") as log:
        while True:
            short = rng.random() >= LONG_SHARE
            delay = rng.uniform(0, SHORT) if short else rng.uniform(SHORT, LONG)
            if kills >= MAX_KILLS_PER_ROUND:
                delay = 120.0
            tool = start(work, kind, out)
            try:
                code: int | None = tool.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                code = None
                tool.kill()
                tool.wait()
            where = f"{label}, kill {kills + 1} (after {delay:.3f}s)"
            text = out.read_text()
            log.write(f"=== {where}: exit {code}\n{text}")
            tally.waited_for += settle(tool.pid, fake, where)
            if code is not None:
                if code != 0:
                    return [(f"{label}: the run after {kills} kill(s) failed "
                                             f"(exit {code}): {text[-2000:]}")]
                return []
            kills += 1
            tally.kills += 1
            tally.phases[phase(text)] += 1
            try:
                loaded = state_loads(work)
            except Exception as exc:  # noqa: BLE001 - reported; the round cannot go on
                return [(f"{where}: state.json does not load: {exc}")]
            if seen_state and not loaded:
                return [(f"{where}: state.json disappeared")]
            seen_state = loaded


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_random_kills_lose_nothing_and_duplicate_nothing(tmp_path: Path, jj_bin: str,
                                                         fake_claude: FakeClaude, marks: Path,
                                                         kind: str) -> None:
    seed = int(os.environ.get("AGENT_LOOP_CRASH_SEED", SEEDS[kind]))
    rng = random.Random(seed)
    tally, problems = Tally(), []
    began = time.monotonic()
    while tally.kills < KILLS:
        tally.rounds += 1
        label = f"{kind}, seed {seed}, round {tally.rounds}"
        work = tmp_path / f"round{tally.rounds}"
        new_repo(work, kind, groups=4, per_group=5)
        failed = kill_until_done(work, kind, rng, fake_claude, tally, label)
        problems += failed or check(work, kind, label, per_group=5)
        problems += orphans(marks, label)
    summary = (f"{kind}: seed {seed}: {tally.kills} kills in {tally.rounds} rounds, "
               f"{time.monotonic() - began:.0f}s; by phase: {dict(tally.phases)}; "
               f"VCS commands a kill left running: {tally.waited_for}")
    problems += orphans(marks, f"{kind}, after the last kill", wait=True)
    print("\n" + summary)
    verdict(problems, summary)
    assert tally.kills >= KILLS


# -- a kill at every VCS command ----------------------------------------------------------------

WRAPPER = """#!/bin/sh
# Counts its calls and kills its caller (the tool) before or after one of them: call number
# $CRASH_AT, or the first whose arguments hold $CRASH_MATCH (a shell pattern: `[k-z]` is a
# letter of a jj change id, `*` anything). "during": the command itself is
# killed with the tool, $CRASH_DELAY seconds in (an OOM kill, a power cut), leaving behind
# whatever it had half done: lock files, half-written state.
# Only agent-loop is ever killed: a git or jj whose caller had died an instant before (killed
# at a command of another thread) is handed to the nearest subreaper, which in a test run can
# be pytest itself (agentloop.proc makes its process one), and $PPID then names that.
caller() {
    case "$(tr '\\0' ' ' < /proc/$PPID/cmdline 2>/dev/null)" in *agentloop*) return 0;; esac
    return 1
}
n=$(( $(cat "$CRASH_COUNTER" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$CRASH_COUNTER"
hit=
if [ -n "$CRASH_MATCH" ]; then
    case " $* " in *$CRASH_MATCH*) [ -e "$CRASH_COUNTER.fired" ] || hit=1 ;; esac
elif [ "$n" = "$CRASH_AT" ]; then
    hit=1
fi
[ -n "$hit" ] && touch "$CRASH_COUNTER.fired"
if [ -n "$hit" ] && [ "$CRASH_WHEN" = before ]; then caller && kill -9 $PPID; exit 1; fi
if [ -n "$hit" ] && [ "$CRASH_WHEN" = during ]; then
    exec 3<&0  # a command put in the background would read /dev/null instead
    "$CRASH_REAL" "$@" <&3 &
    if [ "$CRASH_DELAY" = lock ]; then
        # The instant jj holds its lock ($CRASH_LOCK, else its working copy's; a busy wait: no
        # sleep is that short), and has let go of $CRASH_GONE when that is set.
        lock=${CRASH_LOCK:-.jj/working_copy/working_copy.lock}
        while kill -0 $! 2>/dev/null && { [ ! -e "$lock" ] ||
                { [ -n "$CRASH_GONE" ] && [ -e "$CRASH_GONE" ]; }; }; do :; done
    else
        sleep "$CRASH_DELAY"
    fi
    kill -9 $!
    caller && kill -9 $PPID
    exit 137
fi
"$CRASH_REAL" "$@"
code=$?
if [ -n "$hit" ] && [ "$CRASH_WHEN" = after ]; then caller && kill -9 $PPID; fi
exit $code
"""


def crash_env(tmp: Path, kind: str, when: str, at: int = 0, match: str = "") -> dict[str, str]:
    """An environment whose `git` or `jj` kills the tool at one command (or never, at=0):
    `when` is before, during (some milliseconds in), locked (during, the instant it holds its
    lock) or after it."""
    real = shutil.which(kind)
    assert real is not None
    folder = tmp / "wrapper"
    folder.mkdir(exist_ok=True)
    if not (folder / kind).is_file() or (folder / kind).read_text() != WRAPPER:
        (folder / kind).write_text(WRAPPER)  # never rewritten under a sweep's running points
        (folder / kind).chmod(0o755)
    counter = tmp / f"counter-{when}-{at}-{len(match)}"
    for stale in (counter, Path(f"{counter}.fired")):
        stale.unlink(missing_ok=True)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
            "CRASH_REAL": real, "CRASH_COUNTER": str(counter), "CRASH_AT": str(at),
            "CRASH_WHEN": "during" if when == "locked" else when, "CRASH_MATCH": match,
            "CRASH_DELAY": "lock" if when == "locked" else during(kind, at)}


def during(kind: str, at: int) -> str:
    """How long into the command the "during" kill comes: spread over what one takes here (git
    a few milliseconds, jj some tens), so most land inside."""
    span = 5 if kind == "git" else 60
    return f"{(at * 7 % span + 1) / 1000:.3f}"


def stale_locks(work: Path) -> list[str]:
    """The lock files a killed git or jj left in the repository (jj's in `.jj/` and, through
    git's code, in `.git/`) and in a lane's jj workspace (the next run takes it up again),
    agent-loop's own run lock aside."""
    lanes = (work / ".agent-loop" / "lanes").glob("*/.jj")
    return sorted(str(p.relative_to(work)) for folder in (work / ".git", work / ".jj", *lanes)
                  for p in folder.rglob("*.lock") if p.name != "agent-loop.lock")


def kill_once_then_finish(work: Path, kind: str, env: dict[str, str], fake: FakeClaude,
                          label: str, left: list[str] | None = None, extra: tuple[str, ...] = ()
                          ) -> tuple[bool, list[str]]:
    """One run with the crash wrapper, then plain runs until done; (whether it was killed, ...).
    `left` gets the lock files the kill left behind; `extra`: both runs' further options."""
    out = work.parent / f"{work.name}.out"
    # No commit-message call: it is no VCS command, and the random kills cover it.
    tool = start(work, kind, out, env, "--no-distill", *extra)
    code = ended(tool, out)
    settle(tool.pid, fake, label, within=work)
    killed = code == -9
    if left is not None:
        left += stale_locks(work)
    if code not in (0, -9):
        return killed, [(f"{label}: the crashing run failed (exit {code}): "
                                         f"{out.read_text()[-2000:]}")]
    try:
        state_loads(work)
    except Exception as exc:  # noqa: BLE001 - reported
        return killed, [(f"{label}: state.json does not load: {exc}")]
    tool = start(work, kind, out, None, "--no-distill", *extra)
    code = ended(tool, out)
    if code != 0:
        return killed, [(f"{label}: the run after the kill failed (exit {code}): "
                                         f"{out.read_text()[-2000:]}")]
    return killed, []


# Kill points run two at a time, each in a repository of its own: CI has two cores, and one
# point (a killed run, then a run to the end) is a chain of processes that keeps one busy.
SWEEP_WORKERS = 2
# jj's also the instant each command holds its lock: timed kills alone, or a lock kill at every
# third command, once left no lock at all when jj's commands changed (then no kill point tested
# a run after a killed jj's lock).
WHENS = {"git": ("before", "during", "after"), "jj": ("before", "during", "locked", "after")}


def sweep_point(tmp_path: Path, kind: str, when: str, at: int, fake: FakeClaude
                ) -> tuple[bool, list[str], list[str]]:
    """One kill point of the sweep: (whether the tool was killed, problems, locks it left)."""
    label = f"{kind}: kill {when} VCS command {at}"
    work = tmp_path / f"{when}-{at}"
    # One group of one task: a run's start, one lane's whole life (made, the task, its
    # landing, removed) and the run's end, each VCS command a kill point once. A second
    # group only repeated the same commands in a second lane (49 jj commands against 27),
    # and the random and parallel kills cover runs of many groups.
    new_repo(work, kind, groups=1, per_group=1, pause=0)
    marks = tmp_path / "point-orphans" / f"{when}-{at}"  # this point's own: labelled right
    marks.mkdir(parents=True)
    env = {**crash_env(tmp_path, kind, when, at), "ORPHAN_MARKS": str(marks)}
    locks: list[str] = []
    killed, found = kill_once_then_finish(work, kind, env, fake, label, locks)
    return killed, found or check(work, kind, label, per_group=1), locks


# A jj run sweeps a colocated repository (`jj git init` makes one): a jj command killed halfway
# there leaves git's locks (.git/index.lock) as well as its own.
@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_kill_before_during_or_after_any_vcs_command_loses_nothing(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude, marks: Path, kind: str) -> None:
    problems: list[str] = []
    points, at, locks = 0, 1, []
    began = time.monotonic()
    if kind == "jj":
        new_repo(tmp_path / "colocated?", kind, groups=1, per_group=1)
        assert (tmp_path / "colocated?" / ".git").is_dir()
    crash_env(tmp_path, kind, "before")  # the wrapper, written once before the points run
    with ThreadPoolExecutor(SWEEP_WORKERS) as pool:
        while at:
            batch = [(when, k) for k in (at, at + 1) for when in WHENS[kind]]
            done = dict(zip(batch, pool.map(
                lambda p: sweep_point(tmp_path, kind, p[0], p[1], fake_claude), batch)))
            for k in (at, at + 1):
                if not any(done[(when, k)][0] for when in WHENS[kind]):
                    at = 0  # the run made fewer than k VCS calls: every one was a kill point
                    break
                for when in WHENS[kind]:
                    killed, found, left = done[(when, k)]
                    points += killed
                    problems += found
                    locks += left
            at = at and at + 2
    summary = (f"{kind}: {points} crash points, {time.monotonic() - began:.0f}s; the kills left "
               f"{len(locks)} lock files ({', '.join(sorted(set(locks)))})")
    time.sleep(ORPHAN_GRACE + 0.5)  # the last kill's orphan, if any, marks itself by then
    problems += [f"{kind}: kill {mark.parent.name.replace('-', ' VCS command ', 1)}: agent run "
                 f"{mark.name} outlived the tool"
                 for mark in sorted((tmp_path / "point-orphans").rglob("*-*")) if mark.is_file()]
    problems += orphans(marks, f"{kind}, after the last point")
    print("\n" + summary)
    assert points >= 15
    # git's commands are over in a few milliseconds, mostly before the kill; jj's "locked"
    # kills come while each command that takes its working-copy lock holds it.
    assert locks or kind == "git", "no kill left a lock behind: the sweep tests no stale lock"
    verdict(problems, summary)


# The lock a killed jj leaves that jj does not take over itself. jj's own locks (the working
# copy's, the operation heads', .jj/repo/git_import_export.lock) are flock()ed files: a stale
# one is opened and locked again by the next jj. In a colocated repository jj 0.45 also writes
# git's HEAD and index through git's own kind of lock, a file made with O_EXCL and renamed into
# place (its strace: `.git/HEAD.lock`, then `.git/index.lock`, renamed before the operation is
# recorded); killed between the two, jj leaves `.git/index.lock` with the new index in it, git
# HEAD already moved and the operation unrecorded, and every later jj command that moves @ fails
# ("Failed to reset Git HEAD state ... The lockfile at '.git/index.lock' might need manual
# deletion"). The next run removes that lock (vcs.preflight) and puts git's HEAD back where
# jj's last operation has it (vcs.jj.cutshort): taken in as it was, the moved HEAD became the
# parent of a new @ that deleted the landed task's file. Checkout: the task's `jj commit` there;
# lane: the landing's `jj rebase` of @ (the one that lost the file).
# jj holds that lock while it writes the index, some 0.1 ms in a small tree, too short for the
# wrapper's busy wait to see; a tree of 3,000 files keeps it there some milliseconds. A busy
# machine can still keep the wait off the CPU that long: then the kill came after the command,
# and the test tries again in a new repository (at most ATTEMPTS times).
BIG_TREE = "a tree big enough that jj writes git's index for milliseconds"
ATTEMPTS = 4


@pytest.mark.parametrize("where,command", [("checkout", " commit -m agent-loop: "),
                                           ("lane", " rebase -s @ ")])
def test_jj_killed_holding_gits_index_lock_loses_nothing(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude, where: str, command: str) -> None:
    left: list[str] = []
    for attempt in range(ATTEMPTS):
        work = tmp_path / f"work{attempt}"
        new_repo(work, "jj", groups=1, per_group=2, pause=0)
        for n in range(3000):
            (work / "tree" / f"{n // 100}").mkdir(parents=True, exist_ok=True)
            (work / "tree" / f"{n // 100}" / f"{n}.txt").write_text(f"{n}\n")
        proc.run(["jj", "commit", "-m", BIG_TREE], cwd=work)
        env = {**crash_env(tmp_path, "jj", "locked", match=command),
               "CRASH_LOCK": ".git/index.lock"}
        label = f"jj, {where}, attempt {attempt + 1}"
        left = []
        killed, problems = kill_once_then_finish(work, "jj", env, fake_claude, label, left,
                                                 ("--workplace", where))
        assert killed
        problems += [p for p in check(work, "jj", label, per_group=2) if BIG_TREE not in p]
        assert not problems, "\n".join(problems)
        if ".git/index.lock" in left:
            break
    assert ".git/index.lock" in left, f"no kill in {ATTEMPTS} left git's index lock"


# The same cut in a repository with no commit yet (`jj git init` in a folder of files, the
# sweep's own): git's HEAD was unborn, the killed landing's export had made it the task's commit
# (its reflog's first line, `.git/logs/HEAD`, then `.git/HEAD.lock` renamed), and the next run,
# which put HEAD back only onto a commit, let jj take it in: a new @ on the task's change that
# deleted f01.txt on disk (the sweep's "kill during VCS command 13", 5 kills in 24 there).
def test_jj_killed_after_its_first_export_of_gits_head_loses_nothing(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude) -> None:
    undone = 0
    for attempt in range(ATTEMPTS):
        work = tmp_path / f"work{attempt}"
        new_repo(work, "jj", groups=1, per_group=2, pause=0)
        env = {**crash_env(tmp_path, "jj", "locked", match=" rebase -s @ "),
               "CRASH_LOCK": ".git/logs/HEAD", "CRASH_GONE": ".git/HEAD.lock"}
        label = f"jj, no commit yet, attempt {attempt + 1}"
        killed, problems = kill_once_then_finish(work, "jj", env, fake_claude, label,
                                                 extra=("--workplace", "lane"))
        assert killed
        problems += check(work, "jj", label, per_group=2)
        assert not problems, "\n".join(problems)
        # The kill may come after jj recorded its operation (a busy machine): nothing to undo.
        undone += "put git's HEAD back on no commit" in (tmp_path / f"{work.name}.out").read_text()
        if undone:
            break
    assert undone, f"no kill in {ATTEMPTS} came between git's HEAD moving and jj's record"


def test_a_killed_tool_takes_what_the_agent_started_with_it(tmp_path: Path,
                                                            fake_claude: FakeClaude) -> None:
    """The agent dies with the tool (the watchdog kills its group), and so does what it started."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text("- start something that runs for an hour\n  FAKE: hang\n")
    tool = start(work, "none", tmp_path / "out.txt")
    agent = str(fake_claude.bin)
    deadline = time.monotonic() + 30
    group: list[str] = []
    while not group:  # the agent, and the child it started (the hang directive's sleeper)
        assert time.monotonic() < deadline and tool.poll() is None
        leader = _alive(lambda p: agent in _cmdline(p))
        group = _alive(lambda p, leader=leader: bool(leader) and _pgid(p) == int(leader[0])
                       and p != leader[0])
        group = leader + group if group else []
        time.sleep(0.02)
    tool.kill()
    tool.wait()
    deadline = time.monotonic() + 3
    while (left := [p for p in group if _stat(p) and _stat(p)[0] not in "ZX"]):  # type: ignore[index]
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(int(pid), 9)
            raise AssertionError(f"processes {left} of the agent outlived the killed tool")
        time.sleep(0.02)


HELPER = """
import sys
from agentloop import proc
proc.run(["sh", "-c", f"sleep {sys.argv[1]} & sleep {sys.argv[1]}"], guarded=True, timeout=None)
"""


def test_a_killed_tool_takes_a_helper_call_with_it(tmp_path: Path) -> None:
    """The advisor's and the commit-message writer's calls (proc.run guarded) die with us too."""
    mark = f"{3000 + os.getpid() % 1000}.25"  # a sleep of a length no other process has
    caller = subprocess.Popen([sys.executable, "-c", HELPER, mark])
    deadline = time.monotonic() + 30
    while len(sleepers := _alive(lambda p: f"sleep\0{mark}" in _cmdline(p))) < 2:
        assert time.monotonic() < deadline and caller.poll() is None
        time.sleep(0.02)
    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 3
    while left := [p for p in sleepers if (_stat(p) or ("Z", 0))[0] not in "ZX"]:
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(int(pid), 9)
            raise AssertionError(f"processes {left} of a helper call outlived the killed tool")
        time.sleep(0.02)


def _pgid(pid: str) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(text[text.rindex(")") + 2:].split()[2])


# -- the inconsistencies these tests found (fixed), exactly -------------------------------------

def test_git_kill_after_the_task_commit_landed(tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Killed after finish() moved HEAD to the task's commit, before the state said so: the
    re-run used to keep the commit, run the task again, find nothing to commit and record the
    task as done with no commit (found by seed 20260101)."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2)
    env = crash_env(tmp_path, "git", "after", match=" commit --quiet ")
    killed, problems = kill_once_then_finish(work, "git", env, fake_claude, "git")
    assert killed
    problems += check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems)


# A `git` whose first landing (`merge --ff-only` in the user's checkout) says it has begun and
# then stalls, as a landing does on a slow disk, until the tool is killed (at most a minute).
SLOW_LANDING = """#!/bin/sh
case " $* " in *" merge --ff-only "*)
    if [ ! -e "$SLOW_MARK" ]; then
        touch "$SLOW_MARK"
        n=0
        while [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
    fi ;;
esac
exec "$SLOW_REAL" "$@"
"""
# How long the test gives the next task's agent to start while the first landing stalls: it
# never does while a landing stands on the path to the next agent, and would in milliseconds
# if the landing ran beside it.
NEXT_AGENT_GRACE = 0.5


def test_git_kill_while_a_landing_stalls_pays_no_agent_again(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """SIGKILL while task 1's landing on the branch has not finished, and (were the landing
    beside the next agent) task 2's agent already runs, its begin having written over the
    lane's record of task 1's commit: the next run lands task 1's commit without paying its
    agent again, then does task 2, each commit once, in task order."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=2)
    folder = tmp_path / "slow-git"
    folder.mkdir()
    (folder / "git").write_text(SLOW_LANDING)
    (folder / "git").chmod(0o755)
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({"task 02": ["FAKE: sleep 30"]}))  # on the first run only
    mark = tmp_path / "landing-began"
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
           "SLOW_REAL": str(shutil.which("git")), "SLOW_MARK": str(mark),
           "FAKE_CLAUDE_DIRECTIVES": str(slow)}
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill")
    deadline = time.monotonic() + 60
    while not mark.exists():
        assert tool.poll() is None, out.read_text()[-2000:]
        assert time.monotonic() < deadline, "task 1's landing never began"
        time.sleep(0.01)
    grace = time.monotonic() + NEXT_AGENT_GRACE
    while len(fake_claude.task_runs()) < 2 and time.monotonic() < grace:
        time.sleep(0.01)
    os.killpg(tool.pid, 9)  # the tool and the stalled git with it
    tool.wait()
    settle(tool.pid, fake_claude, "the kill", within=work)
    again = tmp_path / "again.out"
    done = start(work, "git", again, None, "--no-distill")
    assert done.wait(timeout=120) == 0, again.read_text()[-2000:]
    first = [p for p in fake_claude.task_prompts() if "task 01" in p]
    assert len(first) == 1, "task 1's agent was paid again"
    problems = check(work, "git", "git", per_group=2)
    assert not problems, "\n".join(problems)


# A `git` whose first landing (`merge --ff-only` in the user's checkout) is killed, with the
# tool, where git has written the commit's files into the checkout and not yet its index (nor
# moved the branch): the state that instant leaves, made here (git's own window is a fraction
# of a millisecond, which a "during" kill of the sweep hits once in a long while).
CUT_LANDING = """#!/bin/sh
case " $* " in *" merge --ff-only "*)
    if [ ! -e "$CUT_MARK" ]; then
        touch "$CUT_MARK"
        [ "$1" = -C ] && cd "$2"
        for new; do :; done
        "$CUT_REAL" diff-tree -r --name-only --no-commit-id --diff-filter=AM HEAD "$new" |
            while IFS= read -r path; do "$CUT_REAL" cat-file blob "$new:$path" > "$path"; done
        : > .git/index.lock
        kill -9 $PPID
        exit 137
    fi ;;
esac
exec "$CUT_REAL" "$@"
"""


def test_git_kill_inside_a_landings_fast_forward_leaves_nothing_to_wait_on(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Killed inside the landing's `git merge --ff-only`, after it wrote the task's file into
    the checkout and before its index and the branch followed: the next run's landing found
    that file untracked where the commit adds it, and waited on it as on an edit of yours for
    the lane-wait (600 s), where the sweep's recovery run takes a second."""
    work = tmp_path / "work"
    new_repo(work, "git", groups=1, per_group=1, pause=0)
    folder = tmp_path / "cut-git"
    folder.mkdir()
    (folder / "git").write_text(CUT_LANDING)
    (folder / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
           "CUT_REAL": str(shutil.which("git")), "CUT_MARK": str(tmp_path / "cut")}
    out = tmp_path / "work.out"
    tool = start(work, "git", out, env, "--no-distill")
    assert ended(tool, out) == -9, out.read_text()[-2000:]
    settle(tool.pid, fake_claude, "the kill", within=work)
    assert "?? f01.txt" in git(work, "status", "--porcelain", "--untracked-files=all")
    again = tmp_path / "again.out"
    tool = start(work, "git", again, None, "--no-distill")
    assert ended(tool, again, within=60) == 0, again.read_text()[-2000:]
    assert len(fake_claude.task_prompts()) == 1, "the task's agent was paid again"
    problems = check(work, "git", "git", per_group=1)
    assert not problems, "\n".join(problems)


# The jj command that seals a task's change: finish's `jj commit` (describe, then a new @ on it).
SEALS = " commit -m agent-loop: "


def test_jj_kill_after_the_task_change_was_made(tmp_path: Path, jj_bin: str,
                                                fake_claude: FakeClaude) -> None:
    """Killed after begin()'s `jj new -m` (in a new lane, its `jj describe -m` of the
    workspace's own @), before the state named the change: the empty change, described as the
    task's, used to stay in history for good (found by seed 20260102)."""
    work = tmp_path / "work"
    new_repo(work, "jj", groups=1, per_group=2)
    env = crash_env(tmp_path, "jj", "after", match="[ew] -m agent-loop: ")
    killed, problems = kill_once_then_finish(work, "jj", env, fake_claude, "jj")
    assert killed
    problems += check(work, "jj", "jj", per_group=2)
    assert not problems, "\n".join(problems)


def agent_dawdling(work: Path, tmp_path: Path, task: str, fake_claude: FakeClaude
                   ) -> subprocess.Popen[bytes]:
    """A `--vcs none` run started, once its first agent (task `task`'s, which sleeps a minute
    on this run only) has begun."""
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps({task: ["FAKE: sleep 60"]}))
    tool = start(work, "none", tmp_path / "out.txt",
                 {**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(slow)})
    deadline = time.monotonic() + 30
    while not fake_claude.calls():
        assert time.monotonic() < deadline and tool.poll() is None
        time.sleep(0.02)
    return tool


def test_a_killed_attempt_does_not_count(tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Killed once inside the agent, then a failure: with --max-attempts 2 the task still gets
    its retry (the killed attempt never ended; an interrupted one does not count either)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text("- flaky\n  FAKE: write flaky.txt x\n  FAKE: fail 1\n")
    tool = agent_dawdling(work, tmp_path, "flaky", fake_claude)
    tool.kill()
    tool.wait()
    settle(tool.pid, fake_claude, "the kill")
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none",
                           "--max-attempts", "2"], cwd=work, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    path = work / ".agent-loop" / "state.json"
    task = from_bytes(path.read_bytes(), path).tasks[0]
    assert [a.outcome for a in task.history] == ["interrupted", "failed", "completed"]
    assert task.status == "completed" and task.attempts == 2


def test_a_task_is_on_disk_as_running_in_one_journal_line_before_its_agent_starts(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The attempt's opening and its run's record are saved together, before the agent starts:
    killed while it runs, the state says so in one line (not two saves back to back), and the
    next run neither counts that attempt nor loses the task."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text("- slow\n  FAKE: write slow.txt x\n")
    tool = agent_dawdling(work, tmp_path, "slow", fake_claude)
    store = Store(work)
    lines = [orjson.loads(line) for line in store.journal.path.read_bytes().splitlines()]
    tool.kill()
    tool.wait()
    settle(tool.pid, fake_claude, "the kill")
    saves = [line["task"] for line in lines if line["task"]["index"] == 1]
    assert len(saves) == 1, [(t["status"], len(t["history"])) for t in saves]
    assert saves[0]["status"] == "running" and saves[0]["attempts"] == 1
    assert [a["outcome"] for a in saves[0]["history"]] == ["running"]
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none"],
                          cwd=work, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    task = from_bytes(store.state_path.read_bytes(), store.state_path).tasks[0]
    assert [a.outcome for a in task.history] == ["interrupted", "completed"]
    assert task.status == "completed" and task.attempts == 1


def killed_at(work: Path, kind: str, env: dict[str, str], fake: FakeClaude, label: str,
              *extra: str) -> None:
    """One run with the crash wrapper, which must kill it."""
    out = work.parent / f"{work.name}.out"
    tool = start(work, kind, out, env, "--no-distill", *extra)
    code = ended(tool, out)
    settle(tool.pid, fake, label)
    assert code == -9, f"{label}: the run was not killed (exit {code}): {out.read_text()[-2000:]}"
    assert state_loads(work)


@pytest.mark.parametrize("where", [("--workplace", "checkout"), ("--workplace", "lane"),
                                   ("--parallel", "2")], ids=["checkout", "lane", "parallel"])
def test_jj_kill_in_the_recovery_that_keeps_a_finished_change(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude, where: tuple[str, str]) -> None:
    """Killed after finish's `jj commit` of the task's change, before the state said the task
    was done; the re-run's recovery keeps that change for the task's next begin to go on from,
    and is killed in turn before that begin: the state used to forget the change there, so the run
    after ran the task afresh on top of it, found nothing new and recorded the task as done
    with no change while history held its work (found by seed 20260102); in a lane the
    change never landed, and the task's file was lost. Since a sealed change is recorded by
    the re-run (test_jj_kill_after_the_change_was_sealed_pays_no_agent_again), the second kill
    comes in the next task's finish, and the last run finds below that task the empty change
    the recovering run took as its base: it is dropped, no blank change stays in history."""
    work = tmp_path / "work"
    # Two tasks a group in parallel too: the second kill needs a task finishing after the
    # recovery whatever the order the two groups sealed theirs in.
    groups, per_group = (2, 2) if where[0] == "--parallel" else (1, 2)
    new_repo(work, "jj", groups=groups, per_group=per_group, pause=0)
    killed_at(work, "jj", crash_env(tmp_path, "jj", "after", match=SEALS), fake_claude,
              "after the task's change was sealed", *where)
    killed_at(work, "jj", crash_env(tmp_path, "jj", "before", match=SEALS),
              fake_claude, "in the recovery, before the task began again", *where)
    tool = start(work, "jj", tmp_path / "last.out", None, "--no-distill", *where)
    assert tool.wait(timeout=120) == 0, (tmp_path / "last.out").read_text()[-2000:]
    problems = check(work, "jj", "jj", per_group=per_group)
    # The resume killed before its describe had put an empty base below the change: the next
    # resume takes that one, and close drops it.
    blank = [c for c, d, f in jj_history(work)[:-1] if not d and not f]
    assert not problems and not blank, "\n".join(problems + [f"empty changes left: {blank}"])


def task_runs(fake: FakeClaude) -> list[str]:
    """The first line of each task prompt the agent was paid to work on, in order."""
    return [next((line for line in c["stdin"].splitlines() if line.startswith("task ")), "?")
            for c in fake.calls() if "stream-json" in c["argv"]]


@pytest.mark.parametrize("where", ["checkout", "lane"])
def test_jj_kill_after_the_change_was_sealed_pays_no_agent_again(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude, where: str) -> None:
    """Killed after finish's `jj commit` of the task's change (its description the message
    finish wrote, with the task's trailers, and a new empty @ on it), before the state said
    the task was done: the re-run used to take the change up again and run its agent a second
    time, as git's recovery never does; in a lane, before the change landed, the same. It
    records the task done with that change (landed first, in a lane), and only the next task's
    agent runs."""
    work = tmp_path / "work"
    new_repo(work, "jj", groups=1, per_group=2, pause=0)
    killed_at(work, "jj", crash_env(tmp_path, "jj", "after", match=SEALS), fake_claude,
              "after the task's change was sealed", "--workplace", where)
    assert task_runs(fake_claude) == ["task 01"]
    tool = start(work, "jj", tmp_path / "last.out", None, "--no-distill", "--workplace", where)
    assert tool.wait(timeout=120) == 0, (tmp_path / "last.out").read_text()[-2000:]
    problems = check(work, "jj", "jj", per_group=2)
    assert not problems, "\n".join(problems)
    assert task_runs(fake_claude) == ["task 01", "task 02"], "an agent was paid twice"


def test_jj_reset_after_a_kill_takes_up_no_old_change(tmp_path: Path, jj_bin: str,
                                                      fake_claude: FakeClaude) -> None:
    """--reset after a run killed once task 2's change was sealed: the old state's open change
    was kept for the next begin, as the recovery keeps one, and the reset's first task (task
    1) took it up: task 1 was recorded with task 2's change and file, task 2 as done with no
    change. The reset drops it for good; each task ends with a change of its own."""
    work = tmp_path / "work"
    new_repo(work, "jj", groups=1, per_group=2, pause=0)
    where = ("--no-distill", "--workplace", "checkout")
    first = start(work, "jj", tmp_path / "first.out", None, *where, "--task", "1")
    assert first.wait(timeout=120) == 0, (tmp_path / "first.out").read_text()[-2000:]
    killed_at(work, "jj", crash_env(tmp_path, "jj", "after", match=SEALS), fake_claude,
              "after task 2's change was sealed", "--workplace", "checkout")
    tool = start(work, "jj", tmp_path / "last.out", None, *where, "--reset")
    assert tool.wait(timeout=120) == 0, (tmp_path / "last.out").read_text()[-2000:]
    path = work / ".agent-loop" / "state.json"
    state = from_bytes(path.read_bytes(), path)
    history = {c: (d, f) for c, d, f in jj_history(work)}
    problems = []
    for n, task in enumerate(state.tasks, 1):
        mine = f"f{n:02d}.txt"
        if task.status != "completed":
            problems.append(f"task {n} is {task.status}")
        # Task 1's change from before the reset holds its file already: done again, it may
        # find nothing new. Task 2's old change is gone, so its file is made again.
        if task.change_id is None and n == 1:
            continue
        if task.change_id not in history or history[task.change_id] != (subject(n, 2), [mine]):
            problems.append(f"task {n} is recorded with change {task.change_id}: "
                            f"{history.get(task.change_id)}")
        if (work / mine).read_text() != f"content {n}\n":
            problems.append(f"{mine} lost its content")
    holding = [c for c, (d, f) in history.items() if "f02.txt" in f]
    if holding != [state.tasks[1].change_id]:
        problems.append(f"f02.txt is in changes {holding}")
    assert not problems, "\n".join(problems + [f"history: {history}"])


def test_jj_kill_before_the_fold_of_an_agents_commit_is_no_seal(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude) -> None:
    """The agent ran `jj commit` and wrote more after it; finish described the task's change
    with its message (trailers and all) and was killed before it folded the agent's later
    work in: that change is not sealed, and recording it would leave g01.txt out of the task.
    The task goes on from the agent's work instead, and its change ends with both files; the
    agent, which had finished, is not run (paid) again."""
    work = tmp_path / "work"
    new_repo(work, "jj", groups=1, per_group=2, pause=0)
    (work / "tasks.md").write_text(
        "## Group 1\n\n- task 01\n  FAKE: write f01.txt content 1\n  FAKE: bash jj commit -m wip\n"
        "  FAKE: write g01.txt more 1\n- task 02\n  FAKE: write f02.txt content 2\n")
    killed_at(work, "jj", crash_env(tmp_path, "jj", "before", match=" squash --from [k-z]*..@ "),
              fake_claude, "before finish folded the agent's commit", "--workplace", "checkout")
    tool = start(work, "jj", tmp_path / "last.out", None, "--no-distill", "--workplace",
                 "checkout")
    assert tool.wait(timeout=120) == 0, (tmp_path / "last.out").read_text()[-2000:]
    path = work / ".agent-loop" / "state.json"
    state = from_bytes(path.read_bytes(), path)
    history = {c: f for c, d, f in jj_history(work)}
    assert [t.status for t in state.tasks] == ["completed", "completed"]
    assert history.get(state.tasks[0].change_id or "") == ["f01.txt", "g01.txt"], history
    assert task_runs(fake_claude) == ["task 01", "task 02"]
