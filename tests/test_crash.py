"""Crash consistency: SIGKILL the whole tool at seeded random moments, run it again until done.

Each round is a fresh repository with 20 tasks in four groups; every task has the fake agent
write its own file after a short pause, so kills land in start-up (and the recovery a re-run
does), in the VCS step before and after the agent, in the agent run and in the state writes.
After every kill state.json must load, and no agent process may outlive the tool. After a round
every task is completed exactly once, and the history holds exactly one change (jj) or commit
(git) per task, holding exactly that task's file.

The seed and the number of kills can be changed from the environment, to hunt for more:
    AGENT_LOOP_CRASH_SEED=7 AGENT_LOOP_CRASH_KILLS=300 pytest tests/test_crash.py -s
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from agentloop import proc
from agentloop.state import from_bytes
from tests.conftest import FakeClaude

GROUPS, PER_GROUP = 4, 5
TASKS = GROUPS * PER_GROUP
KILLS = int(os.environ.get("AGENT_LOOP_CRASH_KILLS", "100"))
SEEDS = {"git": 20260101, "jj": 20260102}
# Most kills land in the first 400 ms (start-up, recovery, the first tasks); some later ones
# let a round move on. A round that took this many kills gets one run without a kill.
SHORT, LONG, LONG_SHARE, MAX_KILLS_PER_ROUND = 0.4, 1.5, 0.15, 60
# Files a task may not hold: everything in the repository that is not its own.
OWN_FILES = {"README.md", ".gitignore", "tasks.md"}


def task_file() -> str:
    lines = []
    for g in range(GROUPS):
        lines.append(f"## Group {g + 1}\n")
        for i in range(PER_GROUP):
            n = g * PER_GROUP + i + 1
            lines.append(f"- task {n:02d}\n  FAKE: write f{n:02d}.txt content {n}\n"
                         "  FAKE: sleep 0.05\n")
        lines.append("\n")
    return "".join(lines)


def subject(n: int) -> str:
    return f"agent-loop: Group {(n - 1) // PER_GROUP + 1} / task {n:02d}"


@dataclass
class Tally:
    """What the kills hit, by the last line the tool printed before it died."""

    kills: int = 0
    rounds: int = 0
    phases: Counter[str] = field(default_factory=Counter)
    waited_for: int = 0  # VCS processes the dead tool left running, waited for before a re-run


def phase(out: str) -> str:
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    last = next((line for line in reversed(lines)
                 if line.startswith(("[", "jj: created", "claude: running", "completed in",
                                     "change ", "jj: abandoned"))), "")
    if not last:
        return "start-up and recovery"
    if last.startswith("claude: running"):
        return "agent run"
    if last.startswith("completed in"):
        return "VCS finish and state write"
    if last.startswith("change "):
        return "between tasks"
    return "VCS begin and state write"


def _stat(pid: str) -> tuple[str, int] | None:
    """(state letter, session id) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[3])


def _alive(match: Callable[[str], bool]) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and match(entry):
            st = _stat(entry)
            if st is not None and st[0] not in "ZX":
                found.append(entry)
    return found


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


def settle(tool_pid: int, fake: FakeClaude, where: str) -> int:
    """After a kill: no agent may be left; VCS commands the tool started are waited for.

    The kernel kills the agent with the tool (it runs in a session of its own). A git or jj
    command the tool was running when it died finishes its work: a user's re-run seconds later
    finds it done, so the next run waits for it too. Returns how many there were.
    """
    agent = str(fake.bin)
    deadline = time.monotonic() + 2
    while (agents := _alive(lambda p: agent in _cmdline(p))) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not agents, f"{where}: agent process(es) {agents} outlived the killed tool"
    leftovers = _alive(lambda p: (_stat(p) or ("", 0))[1] == tool_pid)
    deadline = time.monotonic() + 20
    while _alive(lambda p: (_stat(p) or ("", 0))[1] == tool_pid):
        assert time.monotonic() < deadline, f"{where}: the killed tool's children still run"
        time.sleep(0.01)
    return len(leftovers)


def check_state_loads(work: Path, where: str) -> bool:
    path = work / ".agent-loop" / "state.json"
    if not path.exists():
        return False
    from_bytes(path.read_bytes(), path)  # raises on anything torn or invalid
    return True


def new_repo(work: Path, kind: str) -> None:
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    if kind == "git":
        git(work, "init", "-q")
        git(work, "add", "README.md")
        git(work, "commit", "-qm", "initial")
    else:
        proc.run(["jj", "git", "init"], cwd=work)
    (work / "tasks.md").write_text(task_file())


def git(work: Path, *args: str) -> str:
    return proc.run(["git", *args], cwd=work).stdout


def jj(work: Path, *args: str) -> str:
    return proc.run(["jj", "--no-pager", "--color=never", "--ignore-working-copy", *args],
                    cwd=work).stdout


def run_round(work: Path, kind: str, rng: random.Random, fake: FakeClaude, tally: Tally,
              label: str) -> list[str]:
    """Start the tool, kill it at a random moment, again and again until a run ends by itself.

    Returns the problems found; every run's output is kept in `<round>.log` beside the folder.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    out_path, err_path = work.parent / f"{work.name}.out", work.parent / f"{work.name}.err"
    seen_state, kills = False, 0
    with open(work.parent / f"{work.name}.log", "w") as history:
        while True:
            short = rng.random() >= LONG_SHARE
            delay = rng.uniform(0, SHORT) if short else rng.uniform(SHORT, LONG)
            if kills >= MAX_KILLS_PER_ROUND:
                delay = 120.0
            with open(out_path, "w") as out, open(err_path, "w") as err:
                tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs",
                                         kind], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=err, start_new_session=True)
                try:
                    code = tool.wait(timeout=delay)
                except subprocess.TimeoutExpired:
                    code = None
                    tool.kill()
                    tool.wait()
            where = f"{label}, kill {kills + 1} (delay {delay:.3f}s)"
            history.write(f"=== {where}: exit {code}\n{out_path.read_text()}{err_path.read_text()}")
            if code is not None:
                tally.waited_for += settle(tool.pid, fake, f"{label}, final run")
                if code != 0:
                    return [f"{label}: a run after {kills} kill(s) failed (exit {code}): "
                            f"{err_path.read_text().strip()}"]
                return []
            kills += 1
            tally.kills += 1
            tally.phases[phase(out_path.read_text())] += 1
            tally.waited_for += settle(tool.pid, fake, where)
            try:
                loaded = check_state_loads(work, where)
            except Exception as exc:  # noqa: BLE001 - reported, and the round cannot go on
                return [f"{where}: state.json does not load: {exc}"]
            if seen_state and not loaded:
                return [f"{where}: state.json disappeared"]
            seen_state = loaded


def check_tasks(work: Path, label: str) -> tuple[list[str], list[str | None]]:
    """Every task completed exactly once; also returns the change id recorded per task."""
    path = work / ".agent-loop" / "state.json"
    state = from_bytes(path.read_bytes(), path)
    problems = []
    for n, t in enumerate(state.tasks, 1):
        outcomes = [a.outcome for a in t.history]
        if t.status != "completed" or outcomes.count("completed") != 1:
            problems.append(f"{label}: task {n} is {t.status}, attempts {outcomes}")
        if t.files != [f"f{n:02d}.txt"]:
            problems.append(f"{label}: task {n} completed with files {t.files} recorded, "
                            f"change {t.change_id}")
        if (work / f"f{n:02d}.txt").read_text() != f"content {n}\n":
            problems.append(f"{label}: f{n:02d}.txt is wrong")
    return problems, [t.change_id for t in state.tasks]


def check_git(work: Path, label: str, recorded: list[str | None]) -> list[str]:
    """One commit per task, in order, holding its file only; the state names those commits."""
    rows = git(work, "log", "--reverse", "--format=%H%x09%s").splitlines()
    commits = [row.split("\t", 1) for row in rows]
    found = [(subj, git(work, "show", "--name-only", "--format=", sha).split())
             for sha, subj in commits[1:]]
    expected = [(subject(n), [f"f{n:02d}.txt"]) for n in range(1, TASKS + 1)]
    problems = []
    if commits[0][1] != "initial" or found != expected:
        problems.append(f"{label}: history is not one commit per task: "
                        f"{[c for c in found if c not in expected]} besides the expected")
    shas = [sha for sha, _ in commits[1:]]
    for n, change in enumerate(recorded, 1):
        if change not in shas:
            problems.append(f"{label}: task {n}: the state names commit {change}, not in history")
    dirty = {line[3:] for line in git(work, "status", "--porcelain").splitlines()}
    if not dirty <= OWN_FILES:
        problems.append(f"{label}: left uncommitted: {sorted(dirty - OWN_FILES)}")
    return problems


JJ_ROW = ('change_id ++ "\\t" ++ description.first_line() ++ "\\t" ++ '
          'self.diff().files().map(|f| f.path()).join(",") ++ "\\t" ++ divergent ++ "\\n"')


def check_jj(work: Path, label: str, recorded: list[str | None]) -> list[str]:
    """One change per task, in order, holding its file only; no task file in any other change."""
    rows = [line.split("\t") for line in jj(work, "log", "--no-graph", "-r", "::@ ~ root()",
                                            "-T", JJ_ROW).splitlines()]
    rows.reverse()
    problems = []
    if any(r[3] == "true" for r in rows):
        problems.append(f"{label}: divergent changes: {[r for r in rows if r[3] == 'true']}")
    tasks = [(c, d, f.split(",") if f else []) for c, d, f, _ in rows if d.startswith("agent-loop")]
    expected = [(subject(n), [f"f{n:02d}.txt"]) for n in range(1, TASKS + 1)]
    found = [(d, f) for _, d, f in tasks]
    if found != expected:
        problems.append(f"{label}: history is not one change per task: "
                        f"{[(c, d, f) for c, d, f in tasks if (d, f) not in expected]} besides "
                        "the expected")
    ids = [c for c, _, _ in tasks]
    for n, change in enumerate(recorded, 1):
        if change not in ids:
            problems.append(f"{label}: task {n}: the state names change {change}, not in history")
    for c, d, f, _ in rows:
        if not d.startswith("agent-loop") and not set(filter(None, f.split(","))) <= OWN_FILES:
            problems.append(f"{label}: change {c} ({d!r}) holds task files: {f}")
    return problems


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_random_kills_lose_nothing_and_duplicate_nothing(tmp_path: Path, jj_bin: str,
                                                         fake_claude: FakeClaude,
                                                         kind: str) -> None:
    seed = int(os.environ.get("AGENT_LOOP_CRASH_SEED", SEEDS[kind]))
    rng = random.Random(seed)
    tally, problems = Tally(), []
    started = time.monotonic()
    while tally.kills < KILLS:
        tally.rounds += 1
        label = f"{kind}, seed {seed}, round {tally.rounds}"
        work = tmp_path / f"round{tally.rounds}"
        new_repo(work, kind)
        failed = run_round(work, kind, rng, fake_claude, tally, label)
        problems += failed
        if failed:
            continue  # the round cannot be judged; the next one starts afresh
        found, recorded = check_tasks(work, label)
        problems += found
        problems += (check_git if kind == "git" else check_jj)(work, label, recorded)
    print(f"\n{kind}: seed {seed}: {tally.kills} kills in {tally.rounds} rounds, "
          f"{time.monotonic() - started:.0f}s; by phase: {dict(tally.phases)}; "
          f"VCS commands left running by a kill: {tally.waited_for}")
    assert not problems, "\n".join(problems)
