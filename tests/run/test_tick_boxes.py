"""The `tick-boxes` setting with the fake claude and real git: a landed task's box is ticked in
the plan, never committed; the user's own edits of the plan during the run stay; a line that
reads differently is left alone; the next run (and one without `.agent-loop/`) pays for nothing
it ticked."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, git_commits, init_repo, jj, jj_changes, state_of
from tests.support.runner import agent_loop, invoke


def user_edit(tmp_path: Path, work: Path, old: str, new: str, after: str = "") -> str:
    """A FAKE line that replaces `old` by `new` in the plan, as the user's editor would; once the
    plan holds `after`, when given (20 s at most): an edit that read the plan just before a
    tick and wrote it just after would undo that tick, as an editor holding the old text does,
    and a busy machine can stretch the few microseconds between its read and its write."""
    script = tmp_path / f"edit{len(list(tmp_path.glob('edit*.py')))}.py"
    script.write_text("import pathlib, sys, time\np = pathlib.Path(sys.argv[1])\n"
                      "end = time.monotonic() + 20\n"
                      f"while {after!r} not in p.read_text() and time.monotonic() < end:\n"
                      "    time.sleep(0.02)\n"
                      f"p.write_text(p.read_text().replace({old!r}, {new!r}))\n")
    return f"FAKE: bash {sys.executable} {script} {work / 'tasks.md'}"


@pytest.mark.parametrize("lanes", ["1", "2"])
def test_landed_tasks_are_ticked_and_the_users_edits_stay(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, lanes: str) -> None:
    init_repo(work, "git")
    mine = user_edit(tmp_path, work, "Notes: none yet", "Notes: my own words")
    # Task 2's agent runs while task 1 lands and is ticked (the landing beside the next agent):
    # the reword comes once that tick is in.
    reword = user_edit(tmp_path, work, "- [ ] second\n", "- [ ] second, reworded\n",
                       after="- [x] first\n")
    (work / "tasks.md").write_text(
        "# Plan\n\nNotes: none yet\n\n"
        f"## One\n- [ ] first\n  FAKE: write a.txt a\n  {mine}\n"
        f"- [ ] second\n  FAKE: write b.txt b\n  {reword}\n\n"
        # After One: a user's edit that reads the plan before a tick and writes it after
        # would undo the tick (as an editor holding the old text does); none overlaps here.
        "## Two\nDepends on: One\n- [ ] T003 [P] third, on\n  two lines\n  FAKE: write c.txt c\n"
        "- [ ] fourth\n  FAKE: write d.txt d\n- a note\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes", "--parallel", lanes)
    assert done.returncode == 0, done.stdout + done.stderr
    plan = (work / "tasks.md").read_text()
    assert "Notes: my own words" in plan                  # the user's edit is kept
    assert "- [x] first\n" in plan and "- [x] T003 [P] third, on\n  two lines\n" in plan
    # Reworded while it ran: not ticked, and the run says why.
    assert "- [ ] second, reworded\n" in plan
    assert "tick-boxes: task 2's box was not ticked: the plan no longer has it" in done.stdout
    assert "- [x] fourth\n" in plan and "- a note\n" in plan
    # Never committed: the plan is in no task's commit, and it is the user's change to make.
    assert all("tasks.md" not in files for _, _, files in git_commits(work))
    assert len(git_commits(work)) == 4
    assert git(work, "status", "--porcelain", "--", "tasks.md").startswith("??")
    calls = len(fake_claude.task_prompts())
    assert calls == 4
    # Reworded while it ran, then done: as if reworded after it was done, it stays done (not
    # paid for again) and the next run says so, with the --again that runs the new words.
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "task 2's words changed after it was done" in again.stdout
    assert len(fake_claude.task_prompts()) == calls
    # ... and its box is ticked under its new words: the plan says done, as the run does.
    assert "- [x] second, reworded\n" in (work / "tasks.md").read_text()
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    assert len(fake_claude.task_prompts()) == calls


def test_a_mixed_crlf_checklist_ends_with_every_box_ticked_and_nothing_else_changed(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    plan = ("# Plan\r\n\r\n- [ ] first\r\n  FAKE: write a.txt a\r\n  - [ ] its step\r\n"
            "  - a detail\r\n- a note\r\n- [ ] second\r\n  FAKE: write b.txt b\r\n"
            "- another note\r\n")
    (work / "tasks.md").write_bytes(plan.encode())
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not ticked" not in done.stdout
    assert (work / "tasks.md").read_bytes() == plan.replace("[ ]", "[x]").encode()
    # The next run: nothing to do (the notes are notes), both tasks still known as completed.
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_prompts()) == 2
    status = agent_loop(work, "--status")
    assert status.stdout.count("completed") >= 2, status.stdout


def test_a_tick_is_no_news_and_the_next_run_pays_for_nothing(
        work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    (work / "tasks.md").write_text(
        "## One\n- [ ] first\n  FAKE: write a.txt a\n- [ ] second\n  FAKE: write b.txt b\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed while" not in done.stdout   # the ticks are not the user's
    assert "- [x] first\n" in (work / "tasks.md").read_text()
    assert "- [x] second\n" in (work / "tasks.md").read_text()
    assert state_of(work)["task_file_hash"] == \
        "sha256:" + __import__("hashlib").sha256((work / "tasks.md").read_bytes()).hexdigest()
    assert len(fake_claude.task_prompts()) == 2
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    # Without .agent-loop/ (a fresh clone with the plan copied over): ticked is done.
    shutil.rmtree(work / ".agent-loop")
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    assert len(fake_claude.task_prompts()) == 2


def test_a_box_a_run_could_not_tick_is_ticked_by_the_next_run(
        work: Path, tmp_path: Path, fake_claude: FakeClaude) -> None:
    """A tick that failed (here the plan held by a hard link, which a replaced file would not
    keep; a plan renamed before the run first read it was another) left the box unticked for
    good: the next run saw a finished task and nothing to tick. The next run ticks it."""
    init_repo(work, "git")
    link = tmp_path / "link.md"
    (work / "tasks.md").write_text(
        "## One\n- [ ] first\n  FAKE: write a.txt a\n"
        f"  FAKE: bash ln {work / 'tasks.md'} {link}\n"
        "- [ ] second\n  FAKE: write b.txt b\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "task 1's box was not ticked: the plan has other hard links" in done.stdout
    assert "the next run with the setting ticks it" in done.stdout
    assert "- [ ] first\n" in (work / "tasks.md").read_text()
    link.unlink()
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "not ticked" not in again.stdout, again.stdout
    assert (work / "tasks.md").read_text().count("- [x]") == 2
    assert len(fake_claude.task_prompts()) == 2
    assert "not ticked" not in agent_loop(work, "--vcs", "git", "--no-distill",
                                          "--tick-boxes").stdout


def test_a_box_owed_stays_owed_when_a_stop_comes_before_it_is_ticked(
        work: Path, tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch,
        ) -> None:
    """The list of owed boxes was deleted as it was read, before any box was ticked or the
    state saved: a Ctrl+C (or a kill) in between left those boxes unticked for good."""
    init_repo(work, "git")
    link = tmp_path / "link.md"
    (work / "tasks.md").write_text(
        "## One\n- [ ] first\n  FAKE: write a.txt a\n"
        f"  FAKE: bash ln {work / 'tasks.md'} {link}\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert "task 1's box was not ticked" in done.stdout, done.stdout + done.stderr
    link.unlink()
    from agentloop.plan import tick

    def stopped(*args: object) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.chdir(work)
        patch.setattr(tick, "tick", stopped)
        code, out, err = invoke("tasks.md", "--vcs", "git", "--no-distill", "--tick-boxes")
    assert code == 130 and "interrupted" in out + err, out + err
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--tick-boxes")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "- [x] first\n" in (work / "tasks.md").read_text(), again.stdout
    assert len(fake_claude.task_prompts()) == 1


def test_without_the_setting_the_plan_is_not_touched(work: Path, fake_claude: FakeClaude) -> None:
    init_repo(work, "git")
    text = "- [ ] first\n  FAKE: write a.txt a\n- [ ] second\n  FAKE: write b.txt b\n"
    (work / "tasks.md").write_text(text)
    assert agent_loop(work, "--vcs", "git", "--no-distill").returncode == 0
    assert (work / "tasks.md").read_text() == text


def test_with_jj_the_tick_stays_out_of_every_task_change(
        work: Path, jj_bin: str, fake_claude: FakeClaude) -> None:
    init_repo(work, "jj")
    (work / "tasks.md").write_text(
        "- [ ] first\n  FAKE: write a.txt a\n- [ ] second\n  FAKE: write b.txt b\n")
    jj(work, "describe", "-m", "my plan")   # the plan is tracked, in the user's own change
    jj(work, "new")
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--tick-boxes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text().count("- [x] ") == 2
    changes = jj_changes(work)
    assert [files for _, _, files in changes] == [["a.txt"], ["b.txt"]]


def test_a_rehearsal_ticks_nothing(work: Path) -> None:
    init_repo(work, "git")
    text = "- [ ] first\n- [ ] second\n"
    (work / "tasks.md").write_text(text)
    done = agent_loop(work, "--rehearse", "--tick-boxes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / "tasks.md").read_text() == text
