"""jj history rewritten under a run, in its lane, by you or by the agent: `jj undo` after a Ctrl+C
brings the stopped task's change back, and an agent's `jj edit @-` moves the lane's @ onto the
change of a task landed before. With real jj and files: the work stays the task's, no landed
change takes another task's files, and your checkout is never left stale."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from agentloop.vcs import lanes
from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, state_of
from tests.support.runner import agent_loop, half_done_in_the_serial_lane

pytestmark = pytest.mark.usefixtures("jj_bin")

PLAN = """\
## G
- t1
  FAKE: write f1.txt 1
- t2
  FAKE: write f2.txt 2
{extra}- t3
  FAKE: write f3.txt 3
"""


def project(work: Path, extra: str = "") -> None:
    jj(work, "git", "init")
    (work / "tasks.md").write_text(PLAN.format(extra=extra))
    jj(work, "commit", "-m", "plan")
    (work / "mine.txt").write_text("mine\n")  # your edit, in your checkout's @


def files_of(work: Path, change: str) -> list[str]:
    return sorted(jj(work, "diff", "--name-only", "-r", change).split())


def on_the_line(work: Path) -> list[str]:
    """The first lines of the descriptions of the changes below your checkout's @."""
    return jj(work, "log", "--no-graph", "-r", "::@-", "-T",
              'description.first_line() ++ "\\n"').splitlines()


def test_jj_undo_after_ctrl_c_gives_the_task_its_change_back_and_the_run_goes_on_in_it(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Ctrl+C while task 2's agent works (its change dropped, its file kept aside), then
    `jj undo` in your checkout (the drop undone: the change is back as the lane's @), then the
    same command again. The re-run stacked task 2 on that change: its agent's rewrite of f2.txt
    changed nothing, so task 2 read "completed, but the task changed no files", and the change
    with f2.txt stayed beside the line once task 3 landed. Now task 2 goes on in its change."""
    project(work)
    tool, _ = half_done_in_the_serial_lane(work, tmp_path / "directives.json", "t2",
                                           ["--vcs", "jj", "--no-distill"])
    os.killpg(tool.pid, signal.SIGINT)
    assert tool.wait(timeout=60) == 130
    undone = jj(work, "undo")
    assert state_of(work)["tasks"][1]["status"] == "interrupted", undone
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    assert "changed no files" not in said, said
    assert "task 2 goes on in its change" in said and "`jj undo`?" in said, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3, said
    assert [files_of(work, t["change_id"]) for t in tasks] == \
        [["f1.txt"], ["f2.txt", "half.txt"], ["f3.txt"]], said
    assert on_the_line(work)[:3] == ["agent-loop: G / t3", "agent-loop: G / t2",
                                     "agent-loop: G / t1"], said
    # Nothing of task 2's beside the line but the copy the Ctrl+C kept aside, as it said.
    beside = jj(work, "log", "--no-graph", "-r", "mutable() ~ ::@", "-T",
                'description.first_line() ++ "\\n"').splitlines()
    assert beside == ["rolled back by agent-loop: G / t2"], said
    assert (work / "mine.txt").read_text() == "mine\n"


@pytest.mark.parametrize("distill", [True, False], ids=["distilled", "plain"])
@pytest.mark.parametrize("then", ["", "; jj status >/dev/null"], ids=["quiet", "jj-status"])
def test_an_agents_jj_edit_onto_the_task_landed_before_is_put_back(
        work: Path, fake_claude: FakeClaude, distill: bool, then: str) -> None:
    """Task 2's agent runs `jj edit @-` in its lane (task 1's change, landed under your @) and
    writes its file there (while you edit a file in your checkout). The run stopped with "the
    working copy moved off the task's change", f2.txt inside task 1's landed change and your
    checkout stale (every jj command there refused). Now task 1's change is as it landed,
    f2.txt is task 2's, your edit is in your checkout, and the run goes on. `then`: the agent
    runs jj again after writing (its own snapshot rewrites task 1's change: put back too)."""
    project(work, f"  FAKE: bash jj edit -r @- 2>/dev/null; echo more >> {work}/mine.txt\n"
                  f"  FAKE: write f2.txt 2\n  FAKE: bash true{then}\n")
    done = agent_loop(work, "--vcs", "jj", *([] if distill else ["--no-distill"]))
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3, said
    assert [files_of(work, t["change_id"]) for t in tasks] == \
        [["f1.txt"], ["f2.txt"], ["f3.txt"]], said
    assert on_the_line(work)[:3] == ["agent-loop: G / t3", "agent-loop: G / t2",
                                     "agent-loop: G / t1"], said
    # Your checkout is up to date (a stale one refuses `jj st`), your edit still in its @.
    assert "mine.txt" in jj(work, "status")
    assert all((work / f).exists() for f in ("f1.txt", "f2.txt", "f3.txt"))
    if not then:  # the agent's edits never touched task 1's change: your edit is where it was
        assert (work / "mine.txt").read_text() == "mine\nmore\n"
        assert not jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id"), said
    else:  # its `jj status` rewrote it under your checkout, stale then: jj kept your edit
        assert "jj log -r 'divergent()'" in said, said
        copy = jj(work, "log", "--no-graph", "-r", "divergent() ~ @", "-T", "commit_id")
        assert jj(work, "file", "show", "-r", copy, "mine.txt") == "mine\nmore\n", said
    assert len(fake_claude.task_runs()) == 3, said
    # Said as it happens, and again among the closing lines.
    line, again = [s for s in done.stdout.splitlines() if "(`jj edit`)" in s]
    assert again == "look at: " + line.strip(), said
    assert "task 2: its agent moved the working copy onto change" in line, said


def test_a_lane_left_by_a_stopped_run_goes_once_a_run_in_your_checkout_finishes_every_task(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Ctrl+C in task 2 (in the run's lane), then the same plan run in your checkout
    (`--workplace checkout`) to the end: the lane's jj workspace stayed registered (and stale,
    its @ taken back by the re-run) with its folder, until some later run in lanes swept it."""
    project(work)
    tool, lane = half_done_in_the_serial_lane(work, tmp_path / "directives.json", "t2",
                                              ["--vcs", "jj", "--no-distill"])
    os.killpg(tool.pid, signal.SIGINT)
    assert tool.wait(timeout=60) == 130
    assert f"agent-loop-{lane.name}" in jj(work, "workspace", "list")
    again = agent_loop(work, "--vcs", "jj", "--no-distill", "--workplace", "checkout")
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3, said
    assert jj(work, "workspace", "list", "-T", 'name ++ "\\n"').split() == ["default"], said
    assert not lane.exists()
    assert (work / "f2.txt").exists() and (work / "mine.txt").read_text() == "mine\n"


def test_a_lane_whose_jj_was_removed_stays_for_the_repair_its_stop_line_names(
        work: Path, fake_claude: FakeClaude) -> None:
    """Task 2's agent writes its file and removes its lane's .jj; group H comes after. The
    close of G's lane met the gone .jj and raised the stop again in place of the step's, which
    skipped the note that the lane holds G's work: H then took that lane as a fresh one and
    deleted its folder, the agent's f2.txt with it, though the stop line says to repair it
    with `jj workspace list`."""
    jj(work, "git", "init")
    (work / "tasks.md").write_text(
        "## G\n- t1\n  FAKE: write f1.txt 1\n- t2\n  FAKE: write f2.txt 2\n"
        "  FAKE: bash rm -rf .jj\n\n## H\n- t3\n  FAKE: write f3.txt 3\n")
    jj(work, "commit", "-m", "plan")
    done = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert done.stdout.count("G stopped: the lane's jj workspace was removed") == 1, said
    assert [t["status"] for t in state_of(work)["tasks"]] == \
        ["completed", "interrupted", "completed"], said
    lane = work / ".agent-loop" / "lanes" / (lanes.plan_key("tasks.md") + "-serial")
    assert (lane / "f2.txt").read_text() == "2\n", said
    assert f"agent-loop-{lane.name}" in jj(work, "workspace", "list")


def test_an_agents_jj_edit_beside_another_group_landing_is_put_back(
        work: Path, fake_claude: FakeClaude) -> None:
    """The same with two groups at once: finish sealed the change the agent moved to with
    `jj commit` and reverted the newest operation, which was the other group's removal of its
    lane (`jj workspace forget`), and the run stopped."""
    jj(work, "git", "init")
    (work / "tasks.md").write_text(
        "## G\n- t1\n  FAKE: write f1.txt 1\n- t2\n"
        "  FAKE: bash jj edit -r @- 2>/dev/null; jj status >/dev/null\n"
        "  FAKE: write f2.txt 2\n\n## H\n- t3\n  FAKE: write f3.txt 3\n- t4\n"
        "  FAKE: write f4.txt 4\n")
    jj(work, "commit", "-m", "plan")
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--parallel", "2")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    tasks = state_of(work)["tasks"]
    assert [files_of(work, t["change_id"]) for t in tasks] == \
        [["f1.txt"], ["f2.txt"], ["f3.txt"], ["f4.txt"]], said
    assert jj(work, "workspace", "list", "-T", 'name ++ "\\n"').split() == ["default"], said


def your_edit(work: Path, said: str, rewritten: bool) -> None:
    """Your edit made in your checkout while the agent sat on task 1's change: on disk where
    you made it; or, when the agent's own jj command rewrote that change under your checkout
    (stale then), in the copy of your @ jj kept, which the run's line names."""
    if not rewritten:
        assert (work / "mine.txt").read_text() == "mine\nmore\n"
        assert not jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id"), said
        return
    assert not said or "jj log -r 'divergent()'" in said, said
    copy = jj(work, "log", "--no-graph", "-r", "divergent() ~ @", "-T", "commit_id")
    assert jj(work, "file", "show", "-r", copy, "mine.txt") == "mine\nmore\n", said


def kept_beside(work: Path) -> dict[str, list[str]]:
    """The changes beside the line (not below your checkout's @): first line -> files."""
    out = jj(work, "log", "--no-graph", "-r", "mutable() ~ ::@", "-T",
             'description.first_line() ++ "\\t" ++ '
             'self.diff().files().map(|f| f.path()).join(",") ++ "\\n"')
    return {line.split("\t")[0]: sorted(filter(None, line.split("\t")[1].split(",")))
            for line in out.splitlines()}


@pytest.mark.parametrize("then", ["", "; jj status >/dev/null"], ids=["quiet", "jj-status"])
def test_a_failed_attempt_whose_agent_ran_jj_edit_leaves_the_task_landed_before_as_it_was(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, then: str) -> None:
    """Task 2's first attempt runs `jj edit @-` in its lane (task 1's change, landed under your
    @), writes its file there and fails. `then`: it runs jj again after writing (its own
    snapshot takes f2.txt into task 1's change). The roll-back's own snapshot took the
    agent's f2.txt into task 1's landed change, and (its agent's jj command having rewritten
    that change) left your checkout stale. Now task 1's change is as it landed, the failed
    attempt's f2.txt is kept aside as any failed attempt's is, your checkout is up to date,
    and the retry lands task 2 (its agent does not move @)."""
    moved = tmp_path / "moved"
    project(work, f"  FAKE: bash [ -e {moved} ] || {{ touch {moved}; jj edit -r @- 2>/dev/null; "
                  f"echo more >> {work}/mine.txt; }}\n"
                  f"  FAKE: write f2.txt 2\n  FAKE: bash true{then}\n  FAKE: fail 1\n")
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--backoff", "0")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3, said
    assert [files_of(work, t["change_id"]) for t in tasks] == \
        [["f1.txt"], ["f2.txt"], ["f3.txt"]], said
    assert on_the_line(work)[:3] == ["agent-loop: G / t3", "agent-loop: G / t2",
                                     "agent-loop: G / t1"], said
    assert "mine.txt" in jj(work, "status")  # a stale checkout refuses `jj status`
    assert kept_beside(work).get("rolled back by agent-loop: G / t2") == ["f2.txt"], said
    [line] = [s for s in done.stdout.splitlines() if "(`jj edit`)" in s]
    assert "rolled back the attempt's change" in line and "is as it was" in line, said
    your_edit(work, said, rewritten=bool(then))
    assert len(fake_claude.task_runs()) == 4, said


def test_ctrl_c_while_an_agent_sits_on_the_task_landed_before_leaves_that_task_as_it_was(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Ctrl+C while task 2's agent, having run `jj edit @-` (task 1's landed change), written
    its file and run `jj status` there, works on: the roll-back left f2.txt in task 1's landed
    change and your checkout stale. Now task 1's change is as it landed, task 2's work is kept
    aside, your checkout is up to date, and the same command again finishes the plan."""
    project(work, f"  FAKE: bash jj edit -r @- 2>/dev/null; echo more >> {work}/mine.txt\n"
                  "  FAKE: write f2.txt 2\n  FAKE: bash jj status >/dev/null\n")
    tool, _ = half_done_in_the_serial_lane(work, tmp_path / "directives.json", "t2",
                                           ["--vcs", "jj", "--no-distill"])
    os.killpg(tool.pid, signal.SIGINT)
    assert tool.wait(timeout=60) == 130
    first = state_of(work)["tasks"][0]["change_id"]
    assert files_of(work, first) == ["f1.txt"]
    assert "mine.txt" in jj(work, "status")  # a stale checkout refuses `jj status`
    your_edit(work, "", rewritten=True)
    assert kept_beside(work).get("rolled back by agent-loop: G / t2") == \
        ["f2.txt", "half.txt"]
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    tasks = state_of(work)["tasks"]
    assert [files_of(work, t["change_id"]) for t in tasks] == \
        [["f1.txt"], ["f2.txt"], ["f3.txt"]], said
    assert "mine.txt" in jj(work, "status")
