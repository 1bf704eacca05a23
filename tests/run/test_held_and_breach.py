"""What a lane's VCS checks find comes to a decision the controller applies: a landing that
waits too long on the user's edits is `held` (its group stops, its work kept on its lane, the
others go on, the run exits 4, the next run lands it), and an agent that acted outside its task
stops its group with one line that says what happened and how to repair it. Real git worktrees,
agent-loop as a process, the fake claude."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, state_of
from tests.support.runner import agent_loop

PLAN = """\
## Left
- left one
  FAKE: write f.txt from the task

## Right
- right one
  FAKE: write r.txt right
"""


def test_a_landing_held_on_your_edit_stops_its_group_only_and_exits_4(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "f.txt").write_text("base\n")
    git(work, "add", "f.txt")
    git(work, "commit", "-qm", "f")
    (work / "f.txt").write_text("your edit, not committed\n")
    (work / "tasks.md").write_text(PLAN)
    # The lane wait cut from ten minutes to a second: here it only has to end.
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill",
                      "--allow-dirty", "--lane-wait", "1s")
    said = done.stdout + done.stderr
    assert done.returncode == 4, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["held", "completed"], said
    assert "Left stopped: task 1 (Left) is held: your uncommitted edits to f.txt" in said
    assert "1 completed, 1 held" in said
    assert "1 held, 1 completed" in agent_loop(work, "--status").stdout
    # Nothing of the held task landed; its work is on its lane's branch, and your edit is yours.
    assert (work / "f.txt").read_text() == "your edit, not committed\n"
    assert git(work, "show", f"{tasks[0]['change_id']}:f.txt") == "from the task\n"
    # You put your edit aside: a plain run lands the held task first, and pays no agent for it.
    git(work, "checkout", "f.txt")
    calls = len(fake_claude.calls())
    again = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2
    assert (work / "f.txt").read_text() == "from the task\n"
    assert len(fake_claude.calls()) == calls
    # The landing names what it brought, as the task's own landing would have (it said
    # "0 file(s) changed", and the record kept no file).
    landed = state_of(work)["tasks"][0]
    assert landed["files"] == ["f.txt"], landed
    assert f"change {landed['change_id'][:12]}: 1 file(s) changed" in again.stdout, again.stdout


def test_a_held_task_s_commit_message_writer_is_paid_for_in_the_totals(
        work: Path, fake_claude: FakeClaude) -> None:
    # The distiller writes each task's commit message before it lands ($0.0010 a call from
    # the fake): the held task's call was paid all the same, and counts in its receipt, the
    # closing line and --status (it went into no total: $0.0210 of $0.0220 spent).
    init_repo(work, "git")
    (work / "f.txt").write_text("base\n")
    git(work, "add", "f.txt")
    git(work, "commit", "-qm", "f")
    (work / "f.txt").write_text("your edit, not committed\n")
    (work / "tasks.md").write_text(PLAN)
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--allow-dirty",
                      "--lane-wait", "1s")
    said = done.stdout + done.stderr
    assert done.returncode == 4, said
    assert len(fake_claude.calls()) == 4, said  # two agents, two messages
    assert "1 completed, 1 held; cost $0.0220;" in said, said
    status = agent_loop(work, "--status").stdout
    assert "cost $0.0220;" in status and "total: $0.0220 " in status, status
    assert any(line.split()[:2] == ["1", "held"] and "$0.0110" in line
               for line in status.splitlines()), status
    # events.jsonl's costs add up to its total: the agents' and their messages' writers'.
    events = [json.loads(line) for line in
              (work / ".agent-loop" / "events.jsonl").read_text().splitlines()]
    paid = sum(e.get("cost_usd", 0.0) for e in events
               if e["type"] in ("AgentFinished", "MessageDistilled"))
    total = next(e["cost_usd"] for e in events if e["type"] == "RunFinished")
    assert round(paid, 6) == round(total, 6) == 0.022, events


def test_an_agent_that_rewinds_its_lane_stops_its_group_with_the_repair_line(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "b.txt").write_text("before\n")
    git(work, "add", "b.txt")
    git(work, "commit", "-qm", "b")
    (work / "tasks.md").write_text(
        "## Left\n- left one\n  FAKE: bash git reset -q --hard HEAD~1\n  FAKE: write l.txt L\n"
        "- left two\n  FAKE: write l2.txt L\n\n"
        "## Right\n- right one\n  FAKE: write r.txt right\n")
    tip = git(work, "rev-parse", "main").strip()
    done = agent_loop(work, "--vcs", "git", "--parallel", "2", "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    # One line says what the agent did and the commands that show and repair it.
    [line] = [s for s in done.stderr.splitlines() if "reset --hard" in s]
    assert "see and repair it with" in line
    tasks = state_of(work)["tasks"]
    # Not the task's attempt and not landed; its group stopped, the other group went on.
    assert [t["status"] for t in tasks] == ["interrupted", "pending", "completed"], said
    assert tasks[0]["attempts"] == 0 and "reset --hard" in tasks[0]["error"]
    last = tasks[0]["history"][-1]
    assert last["outcome"] == "stopped" and "reset --hard" in last["reason"]
    assert "Left stopped: " in said
    assert "l.txt" not in git(work, "log", "--format=", "--name-only", "main")
    assert git(work, "merge-base", "--is-ancestor", tip, "main") == ""


def test_an_agent_that_removes_its_jj_lanes_workspace_never_moves_your_checkouts_change(
        work: Path, fake_claude: FakeClaude, jj_bin: str) -> None:
    # The lane is a jj workspace inside your checkout: with its .jj gone, jj run from the lane's
    # folder finds your checkout's workspace above it, and the lane's `jj new` took your @.
    init_repo(work, "colocated")
    (work / "tasks.md").write_text(
        "## G\n- t1\n  FAKE: write f1.txt 1\n- t2\n  FAKE: write f2.txt 2\n"
        "  FAKE: bash rm -rf .jj\n- t3\n  FAKE: write f3.txt 3\n")
    jj(work, "commit", "-m", "plan")
    (work / "mine.txt").write_text("mine\n")   # your edit, in your checkout's @

    def yours() -> tuple[str, str]:
        return (jj(work, "log", "--no-graph", "-r", "default@", "-T", "change_id").strip(),
                jj(work, "diff", "--git", "-r", "default@"))

    def wc_at(op: str) -> str:
        return jj(work, "--ignore-working-copy", "--at-op", op, "log", "--no-graph", "-r",
                  "default@", "-T", "commit_id")

    before = yours()
    done = agent_loop(work, "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    [line] = [s for s in done.stderr.splitlines() if "jj workspace was removed" in s]
    assert "see and repair it with" in line
    assert "G stopped: " in said
    assert [t["status"] for t in state_of(work)["tasks"]][0] == "completed", said
    assert yours() == before, said
    assert (work / "mine.txt").read_text() == "mine\n"
    # Task 2 began (its `jj describe` in the lane), then its agent removed the lane's .jj: no
    # operation since has moved or rewritten your checkout's @.
    ops = [r.split("\t", 1) for r in jj(
        work, "--ignore-working-copy", "op", "log", "--no-graph", "-T",
        'id ++ "\t" ++ attributes ++ "\x1e"').split("\x1e") if "\t" in r]
    began = next(i for i, (_, args) in enumerate(ops) if "describe -m 'agent-loop: G / t2" in args)
    assert {wc_at(op) for op, _ in ops[:began + 1]} == {wc_at(ops[began][0])}, ops[:began]
