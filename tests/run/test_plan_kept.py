"""The plan never vanishes silently: an agent's `jj undo` deletes a task file jj had not recorded
yet (no VCS has a copy of the plan, which is never part of a task's change); the run puts it back
as it last read it and says so in one line, before the next task and at the run's end."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo, state_of
from tests.support.runner import agent_loop

PLAN = ("# P\n## A\n- [ ] T1\n  FAKE: write a.txt a\n- [ ] T2 undo\n  FAKE: write b.txt b\n"
        "  FAKE: bash {undo}\n- [ ] T3\n  FAKE: write c.txt c\n")


def test_a_plan_an_agents_jj_undo_deleted_is_put_back(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "jj")
    plan = PLAN.format(undo="jj undo")
    (work / "tasks.md").write_text(plan)  # written after jj's last snapshot: jj never saw it
    done = agent_loop(work, "--vcs", "jj", "--workplace", "checkout", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text() == plan
    assert done.stdout.count("tasks.md vanished from disk") == 1
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert agent_loop(work, "--status").returncode == 0


def test_a_plan_the_last_task_deleted_is_put_back_at_the_end(tmp_path: Path,
                                                             fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git")
    plan = "- [ ] T1\n  FAKE: write a.txt a\n  FAKE: bash rm tasks.md\n"
    (work / "tasks.md").write_text(plan)
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill",
                      "--allow-dirty")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text() == plan
    assert "tasks.md vanished from disk" in done.stdout + done.stderr


COPIED = "## A\n- [ ] one\n  FAKE: write one.txt one\n  FAKE: bash rm {plan}\n" \
    "- [ ] two\n  FAKE: write two.txt two\n"


@pytest.mark.parametrize("ticks", [(), ("--tick-boxes",)])
def test_a_copy_of_the_plan_beside_it_is_no_rename(tmp_path: Path, fake_claude: FakeClaude,
                                                  ticks: tuple[str, ...]) -> None:
    """`cp tasks.md tasks.md.bak`, then task one's agent deletes tasks.md (as `git clean` or
    `jj undo` would). The backup held the same bytes, so the run took it for the plan renamed:
    tasks.md was not put back, no task started after (exit 4), the state was saved under
    tasks.md.bak and --tick-boxes ticked the backup. A copy is another file (a rename keeps
    the file: its inode), so the plan is put back and the run goes on."""
    work = make_repo(tmp_path / "project", "git")
    plan = COPIED.format(plan=work / "tasks.md")
    (work / "tasks.md").write_text(plan)
    shutil.copy(work / "tasks.md", work / "tasks.md.bak")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill",
                      "--allow-dirty", *ticks)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "renamed" not in out, out
    assert "tasks.md vanished from disk" in out, out
    assert (work / "tasks.md.bak").read_text() == plan   # the backup is as you made it
    # Task one's box: the plan was gone when it landed (said, and put back before task two).
    assert (work / "tasks.md").read_text().count("- [x]") == (1 if ticks else 0)
    state = state_of(work)
    assert state["task_file"] == "tasks.md"
    assert [t["status"] for t in state["tasks"]] == ["completed"] * 2
    assert len(fake_claude.task_runs()) == 2


def _save_as_an_editor_does(path: Path) -> str:
    """A shell line that rewrites `path` as many editors save: a new file renamed over it (a
    new inode), a task added at its end."""
    return (f"bash cp {path} {path}.swp && printf -- '- [ ] three\\n  FAKE: write three.txt "
            f"three\\n' >> {path}.swp && mv {path}.swp {path}")


@pytest.mark.parametrize("ticks", [(), ("--tick-boxes",)])
def test_a_plan_saved_by_an_editor_then_renamed_is_still_a_rename(
        tmp_path: Path, fake_claude: FakeClaude, ticks: tuple[str, ...]) -> None:
    """The plan saved as editors save (a new file over it: another inode) while task one
    works, and (with --tick-boxes, ticked: another inode again) renamed while task two works:
    the run knows the file it read last, so the rename is still one and the plan is not put
    back by its old name."""
    work = make_repo(tmp_path / "project", "git")
    path = work / "tasks.md"
    save = _save_as_an_editor_does(path)
    path.write_text(f"## A\n- [ ] one\n  FAKE: write one.txt one\n  FAKE: {save}\n"
                    "- [ ] two\n  FAKE: write two.txt two\n"
                    f"  FAKE: bash mv {path} {work / 'plan.md'}\n")
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill",
                      "--allow-dirty", *ticks)
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert not path.exists(), out
    assert "tasks.md was renamed plan.md" in out, out
    assert state_of(work)["task_file"] == "plan.md"
    assert (work / "plan.md").read_text().count("- [x]") == (2 if ticks else 0)


def test_a_renamed_plan_deleted_after_its_rename_was_said_is_put_back_by_its_own_name(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """`mv tasks.md plan.md` while a run works (said: `agent-loop plan.md` goes on), then
    `rm plan.md`: the run put tasks.md back, yet its closing lines said both that it was put
    back and that plan.md goes on, and --status named plan.md, which is gone."""
    work = make_repo(tmp_path / "project", "git")
    state, moved = work / ".agent-loop" / "state.json", work / "plan.md"
    waiter = tmp_path / "wait_then_rm.py"
    waiter.write_text(
        "import json, os, pathlib, time\n"
        f"state, moved = pathlib.Path({str(state)!r}), {str(moved)!r}\n"
        "end = time.monotonic() + 60\n"
        "while time.monotonic() < end:\n"
        "    try:\n"
        "        if json.loads(state.read_text())['task_file'] == 'plan.md': break\n"
        "    except (OSError, ValueError): pass\n"
        "    time.sleep(0.02)\n"
        "os.remove(moved)\n")
    plan = (f"## A\n- [ ] one\n  FAKE: write one.txt one\n  FAKE: bash mv {work / 'tasks.md'} "
            f"{moved}\n- [ ] three\n  FAKE: write three.txt three\n"
            "## B\n- [ ] two\n  FAKE: write two.txt two\n"
            f"  FAKE: bash {sys.executable} {waiter}\n")
    (work / "tasks.md").write_text(plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--allow-dirty", "--parallel", "2")
    out = done.stdout + done.stderr
    assert "tasks.md was renamed plan.md" in out and not moved.exists(), out
    assert (work / "tasks.md").read_text() == plan, out
    closing = out[out.index("agent-loop done"):]
    assert "put back" in closing and "agent-loop plan.md" not in closing, closing
    assert "`agent-loop tasks.md` goes on" in closing, closing
    assert state_of(work)["task_file"] == "tasks.md"
    status = agent_loop(work, "--status", plan=None)
    assert "plan.md" not in status.stdout and "tasks.md" in status.stdout, status.stdout


@pytest.mark.parametrize("lanes", ["1", "2"])
def test_a_plan_written_while_an_agent_ran_is_said_so(tmp_path: Path, fake_claude: FakeClaude,
                                                      lanes: str) -> None:
    # Task a1's agent, without --sandbox, ticks a2 and b1 in your plan and appends a task of
    # its own: time alone cannot tell its write from yours, but it fell while an agent ran,
    # and the lines say so (they said "while this run worked", as of any edit of yours).
    work = make_repo(tmp_path / "project", "git")
    plan = work / "tasks.md"
    edit = (f"sed -i 's/- \\[ \\] b1/- [x] b1/; s/- \\[ \\] a2/- [x] a2/' {plan}; "
            f"printf '## Evil\\n- [ ] evil task\\n  FAKE: write evil.txt E\\n' >> {plan}")
    plan.write_text(f"# P\n## A\n- [ ] a1\n  FAKE: bash {edit}\n  FAKE: write a1.txt A\n"
                    "- [ ] a2\n  FAKE: write a2.txt A2\n## B\n- [ ] b1\n  FAKE: pause 1\n"
                    "  FAKE: write b1.txt B1\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", lanes)
    assert done.returncode == 0, done.stdout + done.stderr
    during = "while an agent ran (by it, or you)"
    assert f"task 2 (a2) was ticked in the plan {during}: skipped" in done.stdout, done.stdout
    if lanes == "1":   # with two lanes b1 is running as the plan changes
        assert f"task 3 (b1) was ticked in the plan {during}: skipped" in done.stdout
    assert f"tasks.md changed {during} (1 task added" in done.stdout, done.stdout
    assert "while this run worked" not in done.stdout
