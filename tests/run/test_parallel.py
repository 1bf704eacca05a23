"""--parallel K: groups side by side, each in a git worktree of its own, every task landing on the
main line as one commit of its own, the user's checkout left as the user has it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentloop.vcs import lanes
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, state_of
from tests.support.runner import agent_loop

# The Right group's lane: its plan's key, then its number and name.
RIGHT = lanes.plan_lane(lanes.plan_key("tasks.md"), 2, "Right")


def plan(groups: int, tasks: int = 2, extra: str = "") -> str:
    out = []
    for g in range(1, groups + 1):
        out.append(f"## Group {g}")
        for t in range(1, tasks + 1):
            out.append(f"- task {g}.{t}\n  FAKE: write g{g}t{t}.txt {g}.{t}{extra}")
        out.append("")
    return "\n".join(out)


def test_four_groups_at_once_land_one_commit_per_task(work: Path,
                                                      fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(4, extra="\n  FAKE: sleep 1"))
    done = agent_loop(work, "--vcs", "git", "--parallel", "4", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    commits = git_commits(work)
    assert sorted(f for _, _, files in commits for f in files) == sorted(
        f"g{g}t{t}.txt" for g in range(1, 5) for t in (1, 2))
    assert all(len(files) == 1 for _, _, files in commits)
    # One commit per task, linear on main, named in the state as it is on main.
    assert git(work, "rev-list", "--merges", "main").strip() == ""
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    assert sorted(t["change_id"] for t in state["tasks"]) == sorted(c for c, _, _ in commits)
    # Within a group, order kept; the user's checkout follows the branch.
    subjects = [s for _, s, _ in commits]
    for g in range(1, 5):
        assert subjects.index(f"agent-loop: Group {g} / task {g}.1") < \
            subjects.index(f"agent-loop: Group {g} / task {g}.2")
    assert git(work, "status", "--porcelain", "--untracked-files=no").strip() == ""
    assert sorted(p.name for p in work.glob("g*.txt")) == sorted(
        f"g{g}t{t}.txt" for g in range(1, 5) for t in (1, 2))
    # Each group's second task resumed its first's session, in the group's worktree.
    calls = [c for c in fake_claude.calls() if "--output-format" in c["argv"]]
    by_cwd: dict[str, list[list[str]]] = {}
    for c in calls:
        by_cwd.setdefault(c["cwd"], []).append(c["argv"])
    assert len(by_cwd) == 4 and all("/.agent-loop/lanes/" in cwd for cwd in by_cwd)
    assert all(sum("--resume" in argv for argv in runs) == 1 for runs in by_cwd.values())
    # They ran at once: every group's first task started before any group's second.
    # Nothing is left behind: no worktree, no lane branch, no landed record.
    assert git(work, "worktree", "list").count("\n") == 1
    assert "agent-loop/" not in git(work, "branch", "--list")
    assert "refs/agent-loop/landed" not in git(work, "for-each-ref", "refs/agent-loop/")
    lines = (work / ".agent-loop" / "events.jsonl").read_text().splitlines()
    lanes = {json.loads(line).get("lane") for line in lines}
    assert {f"Group {g}" for g in range(1, 5)} <= lanes
    assert "[Group 3] " in done.stdout


def test_the_users_staged_and_unstaged_work_is_never_swept_in(work: Path,
                                                             fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "notes.txt").write_text("mine\n")
    git(work, "add", "notes.txt")
    git(work, "commit", "-qm", "notes")
    (work / "tasks.md").write_text(plan(2, 1))
    (work / "notes.txt").write_text("mine, staged\n")
    git(work, "add", "notes.txt")
    (work / "README.md").write_text("edited, not staged\n")
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill", "--allow-dirty")
    assert done.returncode == 0, done.stdout + done.stderr
    commits = git_commits(work)
    assert sorted(f for _, _, files in commits for f in files) == ["g1t1.txt", "g2t1.txt"]
    assert git(work, "status", "--porcelain", "--untracked-files=no").splitlines() == [
        " M README.md", "M  notes.txt"]
    assert (work / "README.md").read_text() == "edited, not staged\n"


CONFLICT_PLAN = """\
## Left
- left edit
  FAKE: write shared.txt left
  FAKE: sleep {left}

## Right
- right edit
  FAKE: write shared.txt right
  FAKE: sleep {right}
- right follow-up
  FAKE: write after.txt after
"""
CONFLICT_FIRST_LINE = (
    "Your change for the task above does not fit the main line: other groups changed the same "
    "lines and their work landed first. Your working copy now holds the main line as it is, with "
    "your change applied on top; git marked each conflict (<<<<<<< / ======= / >>>>>>>) in:")


def conflict_project(work: Path, tmp_path: Path, monkeypatch, resolution: list[str]) -> None:
    init_repo(work, "git")
    (work / "shared.txt").write_text("base\n")
    git(work, "add", "shared.txt")
    git(work, "commit", "-qm", "shared")
    (work / "tasks.md").write_text(CONFLICT_PLAN.format(left=0, right=2))
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({CONFLICT_FIRST_LINE: resolution}))
    monkeypatch.setenv("FAKE_CLAUDE_DIRECTIVES", str(directives))


def test_a_conflict_is_resolved_by_the_groups_own_session(work: Path, tmp_path: Path,
                                                          fake_claude: FakeClaude,
                                                          monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: write shared.txt left right"])
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conflicts with the main line in shared.txt" in done.stdout
    assert (work / "shared.txt").read_text() == "left right\n"
    subjects = [s for _, s, _ in git_commits(work)]
    assert subjects == ["agent-loop: Left / left edit", "agent-loop: Right / right edit",
                        "agent-loop: Right / right follow-up"]
    state = state_of(work)
    assert [t["status"] for t in state["tasks"]] == ["completed"] * 3
    # The resolution ran in the Right group's own session, which its follow-up resumed too.
    right = state["tasks"][1]
    resolved = [a for a in right["history"] if a.get("round")]
    assert resolved and resolved[0]["resumed"]
    assert state["tasks"][2]["session_id"] == right["session_id"]
    assert git(work, "show", "main:shared.txt") == "left right\n"


def test_an_unresolved_conflict_keeps_the_work_on_a_branch_and_exits_4(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert done.returncode == 4, done.stdout + done.stderr
    state = state_of(work)
    assert [t["status"] for t in state["tasks"]] == ["completed", "conflicted", "pending"]
    kept = state["tasks"][1]["change_id"]
    # Every line either agent wrote is reachable: left on main, right on the lane's branch.
    assert git(work, "show", "main:shared.txt") == "left\n"
    assert git(work, "show", f"agent-loop/{RIGHT}:shared.txt") == "right\n"
    assert git(work, "rev-parse", f"agent-loop/{RIGHT}").strip() == kept
    assert f"git log -p main..agent-loop/{RIGHT}" in done.stdout
    status = agent_loop(work, "--status")
    assert "conflicted" in status.stdout
    # Resolved by hand in the lane's worktree, a plain re-run lands it and goes on.
    lane = work / ".agent-loop" / "lanes" / RIGHT
    (lane / "shared.txt").write_text("left and right\n")
    git(lane, "commit", "-qam", "by hand")
    git(lane, "rebase", "-q", "-X", "theirs", "main")
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert (work / "shared.txt").read_text() == "left and right\n"
    assert (work / "after.txt").exists()


OTHER_PLAN = """\
## Left
- other left
  FAKE: write other-left.txt left

## Right
- other right
  FAKE: write other-right.txt right
"""


def test_another_plan_with_the_same_group_never_touches_this_plans_lane(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    assert agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill").returncode == 4
    kept = git(work, "rev-parse", f"agent-loop/{RIGHT}").strip()
    (work / "other.md").write_text(OTHER_PLAN)
    other = subprocess.run([sys.executable, "-m", "agentloop", "other.md", "--vcs", "git",
                            "--parallel", "2", "--no-distill"], cwd=work, capture_output=True,
                           text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert other.returncode == 0, other.stdout + other.stderr
    # Its own lanes came and went; plan tasks.md's conflicted lane is as it was.
    assert git(work, "rev-parse", f"agent-loop/{RIGHT}").strip() == kept
    assert (work / ".agent-loop" / "lanes" / RIGHT).is_dir()
    lane = work / ".agent-loop" / "lanes" / RIGHT
    (lane / "shared.txt").write_text("left and right\n")
    git(lane, "commit", "-qam", "by hand")
    git(lane, "rebase", "-q", "-X", "theirs", "main")
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert (work / "shared.txt").read_text() == "left and right\n"


def test_a_lane_an_older_version_left_is_adopted_by_its_plans_next_run(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch) -> None:
    conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    assert agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill").returncode == 4
    # As the version before plan keys left it: branch agent-loop/2-right, lane 2-right.
    lanes_dir = work / ".agent-loop" / "lanes"
    git(work, "worktree", "move", str(lanes_dir / RIGHT), str(lanes_dir / "2-right"))
    git(work, "branch", "-m", f"agent-loop/{RIGHT}", "agent-loop/2-right")
    lane = lanes_dir / "2-right"
    (lane / "shared.txt").write_text("left and right\n")
    git(lane, "commit", "-qam", "by hand")
    git(lane, "rebase", "-q", "-X", "theirs", "main")
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert (work / "shared.txt").read_text() == "left and right\n"
    assert "agent-loop/" not in git(work, "branch", "--list")


LIMIT_PLAN = """\
## Limited
- meets the limit
  FAKE: fail 1
  FAKE: status 429
  FAKE: write limited.txt limited

## Busy
- busy when the limit comes
  FAKE: sleep 1.5
  FAKE: write busy1.txt one
- after the limit
  FAKE: write busy2.txt two
"""


def test_a_usage_limit_in_one_lane_holds_every_lane(work: Path,
                                                    fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(LIMIT_PLAN)
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill", "--backoff", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("waiting until") == 1  # one wait, one line
    events = [json.loads(line) for line in
              (work / ".agent-loop" / "events.jsonl").read_text().splitlines()]
    wait = next(e for e in events if e["type"] == "LimitWait")
    calls = [c for c in fake_claude.calls() if "stream-json" in c["argv"]]
    limited_at = next(c["time"] for c in calls if "meets the limit" in c["stdin"])
    # No agent request anywhere between the limit and its reset: the busy lane's second task
    # waited although its lane was free, and its first finished in its own time.
    later = [c["time"] for c in calls if c["time"] > limited_at + 0.2]
    assert later and min(later) >= wait["until"] - 0.1
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}
    limited = state_of(work)["tasks"][0]
    assert [a["outcome"] for a in limited["history"]] == ["limited", "completed"]


def test_ctrl_c_stops_every_lane_and_a_rerun_finishes(work: Path,
                                                      fake_claude: FakeClaude) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(3, extra="\n  FAKE: sleep 30"))
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--parallel", "3", "--no-distill"], cwd=work, text=True,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while len([c for c in fake_claude.calls() if "stream-json" in c["argv"]]) < 3:
        assert time.monotonic() < deadline, "the three lanes never started"
        time.sleep(0.1)
    time.sleep(0.5)
    started = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, out + err
    assert time.monotonic() - started < 15  # every agent stopped, not waited for
    assert err.count("Resume with: agent-loop tasks.md --vcs git --parallel 3") == 1, err
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} <= {"interrupted", "pending"}
    assert all(a["outcome"] != "running" for t in state["tasks"] for a in t["history"])
    (work / "tasks.md").write_text(plan(3))  # quick this time
    again = agent_loop(work, "--vcs", "git", "--parallel", "3", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(s for _, s, _ in git_commits(work)) == sorted(
        f"agent-loop: Group {g} / task {g}.{t}" for g in (1, 2, 3) for t in (1, 2))


def test_ctrl_c_stops_every_lane_s_agent_at_once_within_the_line_s_promise(
        work: Path, fake_claude: FakeClaude) -> None:
    import os
    import signal
    import time

    # Agents that only SIGKILL ends: each is asked (SIGINT), then told (SIGTERM) 3s later,
    # then killed 3s after that. One after another, three would take 18s, the line saying 6s.
    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(3, 1, extra="\n  FAKE: pause 60\n  FAKE: deaf"))
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--parallel", "3", "--no-distill"], cwd=work, text=True,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    # Each agent has written its file, so it has its handlers set: every lane is at work.
    while len(list((work / ".agent-loop" / "lanes").glob("*/g*t1.txt"))) < 3:
        assert time.monotonic() < deadline and child.poll() is None, "the lanes never started"
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=90)
    assert child.returncode == 130, out + err
    got = fake_claude.signals()
    # Every agent was asked to end before any was made to: one limit for them all.
    assert [name for _, name in got] == ["SIGINT"] * 3 + ["SIGTERM"] * 3, got
    assert len({session for session, _ in got}) == 3, got
    assert "agent-loop: stopping: waiting for 3 agents to end (cut short within 6s)" in out
    events = [json.loads(x) for x in (work / ".agent-loop" / "events.jsonl").read_text()
              .splitlines()]
    assert [(e["agents"], e["within"]) for e in events if e["type"] == "Stopping"] == [(3, 6.0)]
    assert {t["status"] for t in state_of(work)["tasks"]} == {"interrupted"}


def test_ctrl_c_cuts_a_lane_s_advisor_call_short_as_it_stops_the_agents(
        work: Path, fake_claude: FakeClaude, tmp_path: Path) -> None:
    import os
    import signal
    import time

    # Group 1's first attempt fails and its retry advisor (the agent's program, asked in the
    # lane's thread) takes 60s; group 2's agent is at work. A Ctrl+C then stops both at once:
    # the advisor does not hold the stop (said to take 6s at most) until it answers, and no
    # attempt begins after it.
    started = tmp_path / "advisor-started"
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "claude").write_text(
        "#!/bin/sh\n"
        f'case "$*" in *--no-session-persistence*) touch "{started}"; exec sleep 60;; esac\n'
        f'exec "{fake_claude.bin}" "$@"\n')
    (slow / "claude").chmod(0o755)
    init_repo(work, "git")
    (work / "tasks.md").write_text("## Group 1\n- first\n  FAKE: write one.txt 1\n"
                                   "  FAKE: fail 1\n\n## Group 2\n- second\n"
                                   "  FAKE: write two.txt 2\n  FAKE: pause 60\n")
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--parallel", "2", "--no-distill"], cwd=work, text=True,
                             env={**os.environ, "NO_COLOR": "1", "IS_SANDBOX": "1",
                                  "PATH": f"{slow}{os.pathsep}{os.environ['PATH']}"},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and child.poll() is None, "no advisor was asked"
        time.sleep(0.1)
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    asked = time.monotonic()
    out, _ = child.communicate(timeout=90)
    took = time.monotonic() - asked
    assert child.returncode == 130, out
    assert took < 15, f"the stop took {took:.0f}s\n{out}"
    assert "(attempt 2)" not in out, out
    assert {t["status"] for t in state_of(work)["tasks"]} == {"interrupted"}


DEPENDS_PLAN = """\
## Setup
- make the base
  FAKE: write base.txt base
  FAKE: sleep 1

## Api
Depends on: Setup

- add the api
  FAKE: write api.txt api

## Docs
- write the docs
  FAKE: write docs.txt docs
"""


def test_a_group_that_waits_starts_from_the_main_line_after_its_dependency(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(DEPENDS_PLAN)
    assert "waiting: Api waits for Setup" in agent_loop(work, "--status").stdout
    dry = agent_loop(work, "--vcs", "git", "--parallel", "3", "--dry-run")
    assert "wave 1: Setup" in dry.stdout and "wave 1: Docs" in dry.stdout
    assert "wave 2: Api (waits for Setup)" in dry.stdout
    as_json = json.loads(agent_loop(work, "--parallel", "3", "--dry-run", "--json").stdout)
    assert {"wave": 2, "group": "Api", "waits_for": ["Setup"]} in as_json["schedule"]
    done = agent_loop(work, "--vcs", "git", "--parallel", "3", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    subjects = [s for _, s, _ in git_commits(work)]
    assert subjects.index("agent-loop: Setup / make the base") < \
        subjects.index("agent-loop: Api / add the api")
    # Api's lane began from the main line with Setup's work in it.
    api_call = next(c for c in fake_claude.calls() if "add the api" in c["stdin"])
    assert (work / "base.txt").exists()
    assert git(work, "merge-base", "--is-ancestor",
               git_commits(work)[subjects.index("agent-loop: Setup / make the base")][0],
               git_commits(work)[subjects.index("agent-loop: Api / add the api")][0]) == ""
    api = lanes.plan_lane(lanes.plan_key("tasks.md"), 2, "Api")
    assert api_call["cwd"].endswith("/lanes/" + api)


def test_every_line_of_a_lanes_task_says_its_group(work: Path, fake_claude: FakeClaude) -> None:
    # The lines the controller says for a lane (a task's change, a roll-back, the advisor's
    # word) came untagged, between other lanes' lines: `change …` under `[Group 2] …` was
    # Group 1's. events.jsonl had no lane for them either.
    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(2, extra="\n  FAKE: sleep 1").replace(
        "1.1\n", "1.1\n  FAKE: fail 1\n", 1))
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stdout.splitlines()
            if "file(s) changed" in line or "advisor" in line or "rolled back" in line]
    assert len(said) == 6, done.stdout
    assert all(line.startswith("[Group ") for line in said), done.stdout
    events = [json.loads(line) for line in
              (work / ".agent-loop" / "events.jsonl").read_text().splitlines()]
    told = [e for e in events if e["type"] in ("TaskFinished", "RetryDecided", "ChangeAbandoned")]
    assert told and all(e.get("lane", "").startswith("Group ") for e in told), told
    # `--status --follow` from another terminal says them as the run did: it dropped the
    # `lane` events.jsonl gives the events with no field of their own.
    followed = agent_loop(work, "--status", "--follow").stdout
    again = [line for line in followed.splitlines()
             if "file(s) changed" in line or "advisor" in line or "rolled back" in line]
    assert again == said, followed


def test_a_finished_group_is_not_said_to_wait(work: Path, fake_claude: FakeClaude) -> None:
    # A task added to Setup after the run: Api, every task of it done, waits for nothing.
    init_repo(work, "git")
    (work / "tasks.md").write_text(DEPENDS_PLAN)
    done = agent_loop(work, "--vcs", "git", "--parallel", "3", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    (work / "tasks.md").write_text(DEPENDS_PLAN.replace(
        "  FAKE: sleep 1\n", "  FAKE: sleep 1\n- one more\n  FAKE: write more.txt more\n"))
    status = agent_loop(work, "--status").stdout
    assert "one more" in status and "waits for" not in status, status


def test_four_groups_with_the_real_cli(work: Path, tmp_path: Path, fake_api,
                                       claude_bin: Path) -> None:
    from tests.support.claude_cli import agent_loop_env

    init_repo(work, "git")
    text = "\n".join(f"## Group {g}\n- WRITE g{g}t1.txt: {g}.1\n- WRITE g{g}t2.txt: {g}.2\n"
                     for g in range(1, 5))
    (work / "tasks.md").write_text(text)
    env = agent_loop_env(tmp_path, fake_api, claude_bin)
    done = agent_loop(work, "--vcs", "git", "--parallel", "4", "--no-distill", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    commits = git_commits(work)
    assert sorted(f for _, _, files in commits for f in files) == sorted(
        f"g{g}t{t}.txt" for g in range(1, 5) for t in (1, 2))
    assert all(len(files) == 1 for _, _, files in commits)
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    for g in range(4):
        first, second = state["tasks"][2 * g], state["tasks"][2 * g + 1]
        assert second["history"][-1]["resumed"] and second["session_id"] == first["session_id"]
    assert fake_api.unexpected() == []


def test_stop_after_running_lets_running_tasks_land_then_stops(work: Path,
                                                               fake_claude: FakeClaude) -> None:
    import os
    import subprocess
    import sys
    import time

    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(3, extra="\n  FAKE: sleep 2"))
    assert agent_loop(work, "--stop-after-running").returncode == 1  # nothing runs yet
    child = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                              "--parallel", "2", "--no-distill"], cwd=work, text=True,
                             env={**os.environ, "NO_COLOR": "1"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while len([c for c in fake_claude.calls() if "stream-json" in c["argv"]]) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    asked = agent_loop(work, "--stop-after-running")
    assert asked.returncode == 0 and "stop after its running tasks" in asked.stdout
    out, err = child.communicate(timeout=60)
    assert child.returncode == 4, out + err  # stopped with tasks left
    assert "no new task starts" in out
    statuses = [t["status"] for t in state_of(work)["tasks"]]
    assert statuses == ["completed", "pending", "completed", "pending", "pending", "pending"]
    assert len(git_commits(work)) == 2


# -- jj ------------------------------------------------------------------------------------------

def jj_task_changes(work: Path) -> list[tuple[str, str, list[str]]]:
    from tests.support.repos import jj_changes
    return jj_changes(work)


@pytest.mark.parametrize("colocated", [False, True])
def test_jj_four_groups_at_once_one_change_per_task(work: Path, jj_bin: str,
                                                    fake_claude: FakeClaude,
                                                    colocated: bool) -> None:
    from tests.support.repos import jj
    if colocated:
        init_repo(work, "git")
        jj(work, "git", "init", "--colocate")
    else:
        jj(work, "git", "init")
    (work / "tasks.md").write_text(plan(4, extra="\n  FAKE: sleep 1"))
    done = agent_loop(work, "--vcs", "jj", "--parallel", "4", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    changes = jj_task_changes(work)
    assert sorted(f for _, _, files in changes for f in files) == sorted(
        f"g{g}t{t}.txt" for g in range(1, 5) for t in (1, 2))
    assert all(len(files) == 1 for _, _, files in changes)
    state = state_of(work)
    assert {t["status"] for t in state["tasks"]} == {"completed"}
    assert sorted(t["change_id"] for t in state["tasks"]) == sorted(c for c, _, _ in changes)
    assert sorted(p.name for p in work.glob("g*.txt")) == sorted(
        f"g{g}t{t}.txt" for g in range(1, 5) for t in (1, 2))
    assert jj(work, "workspace", "list", "-T", 'name ++ "\\n"').split() == ["default"]
    calls = [c for c in fake_claude.calls() if "stream-json" in c["argv"]]
    assert sum("--resume" in c["argv"] for c in calls) == 4
    assert jj(work, "log", "-r", "conflicts()", "--no-graph", "-T", "change_id").strip() == ""
    # One task taken back alone, as in a sequential run.
    jj(work, "abandon", changes[0][0])
    assert not (work / changes[0][2][0]).exists()


def jj_conflict_project(work: Path, tmp_path: Path, monkeypatch, resolution: list[str]) -> None:
    from tests.support.repos import jj
    jj(work, "git", "init")
    (work / "shared.txt").write_text("base\n")
    jj(work, "commit", "-m", "shared")
    (work / "tasks.md").write_text(CONFLICT_PLAN.format(left=0, right=2))
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({CONFLICT_FIRST_LINE: resolution}))
    monkeypatch.setenv("FAKE_CLAUDE_DIRECTIVES", str(directives))


def test_jj_a_conflict_is_resolved_by_the_groups_own_session(
        work: Path, tmp_path: Path, jj_bin: str, fake_claude: FakeClaude, monkeypatch) -> None:
    from tests.support.repos import jj
    jj_conflict_project(work, tmp_path, monkeypatch, ["FAKE: write shared.txt left right"])
    done = agent_loop(work, "--vcs", "jj", "--parallel", "2", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conflicts with the main line in shared.txt" in done.stdout
    assert [d for _, d, _ in jj_task_changes(work)] == [
        "agent-loop: Left / left edit", "agent-loop: Right / right edit",
        "agent-loop: Right / right follow-up"]
    assert (work / "shared.txt").read_text() == "left right\n"
    assert jj(work, "log", "-r", "conflicts()", "--no-graph", "-T", "change_id").strip() == ""
    assert {t["status"] for t in state_of(work)["tasks"]} == {"completed"}


def test_jj_an_unresolved_conflict_stays_under_a_bookmark_and_exits_4(
        work: Path, tmp_path: Path, jj_bin: str, fake_claude: FakeClaude, monkeypatch) -> None:
    from tests.support.repos import jj
    jj_conflict_project(work, tmp_path, monkeypatch, ["FAKE: say I could not"])
    done = agent_loop(work, "--vcs", "jj", "--parallel", "2", "--no-distill")
    assert done.returncode == 4, done.stdout + done.stderr
    state = state_of(work)
    assert [t["status"] for t in state["tasks"]] == ["completed", "conflicted", "pending"]
    kept = state["tasks"][1]["change_id"]
    assert jj(work, "log", "--no-graph", "-r", f"agent-loop/{RIGHT}", "-T",
              "change_id").strip() == kept
    # Both sides are in the conflicted change; the main line holds the left side only.
    both = jj(work, "file", "show", "-r", f"agent-loop/{RIGHT}", "shared.txt")
    assert "left" in both and "right" in both
    assert (work / "shared.txt").read_text() == "left\n"
    assert f"jj new agent-loop/{RIGHT}" in done.stdout
    # Resolved by hand, a plain re-run lands it and goes on.
    lane = work / ".agent-loop" / "lanes" / RIGHT
    (lane / "shared.txt").write_text("left and right\n")
    jj(lane, "squash")
    again = agent_loop(work, "--vcs", "jj", "--parallel", "2", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert (work / "shared.txt").read_text() == "left and right\n"
    assert (work / "after.txt").exists()


def test_the_budget_counts_the_whole_plan_across_lanes(work: Path,
                                                       fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(plan(2, extra="\n  FAKE: sleep 1.5"))
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill",
                      "--budget", "0.005")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "budget reached" in done.stdout + done.stderr
    # The first task ran alone (no task of the plan had a cost yet, so nothing starts blind
    # beside it); with 0.01 spent of 0.005, no lane started another.
    statuses = [t["status"] for t in state_of(work)["tasks"]]
    assert sorted(statuses) == ["completed", "pending", "pending", "pending"]
    assert statuses[1] == statuses[3] == "pending"  # each lane's second task
    assert len(git_commits(work)) == 1


@pytest.mark.parametrize("vcs", ["git", "jj"])
def test_codex_two_groups_at_once(tmp_path: Path, fake_openai, jj_bin: str, vcs: str) -> None:
    from tests.support.codex_cli import CODEX_PLAN, codex_project
    from tests.support.repos import jj_changes, tasks_of

    work, env = codex_project(tmp_path, fake_openai, vcs=vcs)
    done = agent_loop(work, "--agent", "codex", "--vcs", vcs, "--no-distill", "--parallel", "2",
                      env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = tasks_of(work)
    assert [t["status"] for t in tasks] == ["completed"] * 3
    assert tasks[0]["session_id"] == tasks[1]["session_id"] != tasks[2]["session_id"]
    changes = git_commits(work) if vcs == "git" else jj_changes(work)
    assert sorted(f for _, _, files in changes for f in files) == [
        "api-test.txt", "api.txt", "readme.txt"]
    assert (work / "api.txt").read_text() == "the api\n" and CODEX_PLAN


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_rehearsal_runs_in_parallel_and_resolves_its_own_conflicts(work: Path, jj_bin: str,
                                                                     kind: str) -> None:
    from tests.support.repos import jj
    if kind == "git":
        init_repo(work, "git")
    else:
        jj(work, "git", "init")
    (work / "tasks.md").write_text("## A\n- one\n- two\n\n## B\n- three\n")
    done = agent_loop(work, "--rehearse", "--parallel", "2", "--vcs", kind)
    assert done.returncode == 0, done.stdout + done.stderr
    # The rehearsal works in a copy of its own (agentloop.run.rehearsal), its lanes in there.
    notes = work / ".agent-loop" / "lanes" / "rehearsal-tasks-md" / "agent-loop-rehearsal.md"
    lines = notes.read_text().splitlines()
    assert sorted(lines) == ["- rehearsed task 1/3 one", "- rehearsed task 2/3 two",
                             "- rehearsed task 3/3 three"]


HOSTILE_PLAN = """\
## Group 1
- check out the user's branch
  FAKE: write g1.txt 1
  FAKE: bash git checkout -q --ignore-other-worktrees main

## Group 2
- an honest task
  FAKE: write g2.txt 2
"""


def test_an_agent_that_checks_out_your_branch_stops_its_group_and_nothing_else(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(HOSTILE_PLAN)
    main = git(work, "rev-parse", "main").strip()
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    lane = lanes.plan_lane(lanes.plan_key("tasks.md"), 1, "Group 1")
    assert "the agent checked out your branch main in its lane" in out
    assert f"switch agent-loop/{lane}" in out
    assert "Traceback" not in out and "uncommitted edits" not in out
    # The other group went on; nothing of group 1's step reached main; its file is kept.
    assert (work / "g2.txt").exists() and not (work / "g1.txt").exists()
    assert git(work, "log", "--format=%s", f"{main}..main").strip() == \
        "agent-loop: Group 2 / an honest task"
    assert (work / ".agent-loop" / "lanes" / lane / "g1.txt").exists()
    # A plain re-run says so again, and touches nothing, until it is repaired.
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert again.returncode != 0 and "checked out your branch main" in again.stdout + again.stderr
    assert "[Group 1] claude: running" not in again.stdout  # no agent paid to do it again
    assert (work / ".agent-loop" / "lanes" / lane / "g1.txt").exists()


@pytest.mark.parametrize("orphan", [False, True])
def test_parallel_on_a_branch_with_no_commit_yet_says_so(tmp_path: Path, fake_claude: FakeClaude,
                                                         orphan: bool) -> None:
    """`--parallel 2` in a new repository (or on an orphan branch) said `branch main, which
    this run lands its tasks on, is gone (deleted, or renamed …)`, and to `git branch main
    <commit>` where there is none."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    if orphan:
        (work / "old.txt").write_text("old\n")
        git(work, "add", "-A")
        git(work, "commit", "-qm", "old")
        git(work, "checkout", "-q", "--orphan", "fresh")
        git(work, "rm", "-rqf", ".")
    (work / "tasks.md").write_text(plan(2))
    done = agent_loop(work, "--parallel", "2", timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    branch = "fresh" if orphan else "main"
    assert f"branch {branch}, which this run lands its tasks on, has no commit yet" in lines[0]
    assert "without --parallel" in lines[0] and "is gone" not in lines[0]
    assert fake_claude.task_runs() == []
