"""The plan never vanishes silently: an agent's `jj undo` deletes a task file jj had not recorded
yet (no VCS has a copy of the plan, which is never part of a task's change); the run puts it back
as it last read it and says so in one line, before the next task and at the run's end."""

from __future__ import annotations

import re
import shlex
import shutil
import stat
import subprocess
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


def test_a_plan_put_back_is_readable_as_it_was_not_its_owner_s_only(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """Put back through a scratch file made 0600, the plan stayed 0600: an editor, a
    colleague's account or a web server that read it before could not any more."""
    work = make_repo(tmp_path / "project", "git")
    (work / "tasks.md").write_text("- [ ] T1\n  FAKE: write a.txt a\n  FAKE: bash rm tasks.md\n")
    (work / "tasks.md").chmod(0o644)
    done = agent_loop(work, "--vcs", "git", "--workplace", "checkout", "--no-distill",
                      "--allow-dirty")
    assert "tasks.md vanished from disk" in done.stdout + done.stderr
    assert stat.S_IMODE((work / "tasks.md").stat().st_mode) & 0o044 == 0o044


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
    begun = tmp_path / "b-begun"   # A renames the plan once B's agent works, not before B starts
    plan = (f"## A\n- [ ] one\n  FAKE: write one.txt one\n  FAKE: bash for i in $(seq 1200); "
            f"do test -e {begun} && break; sleep 0.05; done; mv {work / 'tasks.md'} {moved}\n"
            "- [ ] three\n  FAKE: write three.txt three\n"
            f"## B\n- [ ] two\n  FAKE: bash touch {begun}\n  FAKE: write two.txt two\n"
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


MOVES = {
    # Into another folder (git's own rename, as `git mv` makes it).
    "subdir": ("sub/plan.md", "mkdir -p {work}/sub && mv {work}/tasks.md {work}/sub/plan.md", ""),
    # Renamed and edited at once (a task added at its end).
    "edited": ("plan.md", "mv {work}/tasks.md {work}/plan.md && printf -- '- [ ] four\\n  "
               "FAKE: write four.txt four\\n' >> {work}/plan.md", "four"),
}


@pytest.mark.parametrize("how", sorted(MOVES))
def test_a_plan_moved_into_another_folder_or_renamed_and_edited_is_not_put_back(
        tmp_path: Path, fake_claude: FakeClaude, how: str) -> None:
    """`mv tasks.md sub/plan.md` (or a rename with an edit) while task one works. The run looked
    for the rename beside the plan only, by its inode and its bytes: it found none, put
    tasks.md back, ran every task under its old name, and `agent-loop sub/plan.md` (a plan with
    no state, its old name there again) paid every task a second time. The run holds the file
    it read open: the file lives on, so it is not put back, the state follows it, and the
    new name's run pays only what is left."""
    work = make_repo(tmp_path / "project", "git")
    new, move, added = MOVES[how]
    plan = (f"## A\n- [ ] one\n  FAKE: write one.txt one\n  FAKE: bash {move.format(work=work)}\n"
            "- [ ] two\n  FAKE: write two.txt two\n- [ ] three\n  FAKE: write three.txt three\n")
    (work / "tasks.md").write_text(plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--allow-dirty")
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert not (work / "tasks.md").exists(), out          # not put back by its old name
    assert f"tasks.md was renamed {new} while this run worked" in out, out
    assert state_of(work)["task_file"] == new
    assert len(fake_claude.task_runs()) == 1
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--allow-dirty", plan=new)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    # Two and three, and the task the edit added: one is not paid again.
    assert len(fake_claude.task_runs()) == (4 if added else 3), out
    assert "[1/" in out and "task 1:" not in out, out
    if added:
        assert (work / "four.txt").exists()


GONE = {
    # An NFS client renames a removed file it holds open `.nfsXXXX` beside it until it is
    # closed (the run holds the plan open): a deletion (`git clean`, `jj undo`) on NFS.
    "nfs": "mv {work}/tasks.md {work}/.nfs00000000deadbeef00000001",
    # "Move to Trash" on the same filesystem (gio trash, trash-cli) is a rename out of the
    # repository: a deletion as the user means it.
    "outside": "mkdir -p {tmp}/Trash/files && mv {work}/tasks.md {tmp}/Trash/files/tasks.md",
    "trash": "mkdir -p {work}/.Trash-1000/files && mv {work}/tasks.md "
             "{work}/.Trash-1000/files/tasks.md",
    "vcs": "mv {work}/tasks.md {work}/.git/tasks.md",
}


@pytest.mark.parametrize("how", sorted(GONE))
def test_a_plan_moved_to_a_stand_in_a_trash_or_out_of_the_repository_is_put_back(
        tmp_path: Path, fake_claude: FakeClaude, how: str) -> None:
    """The plan renamed where no plan lives (an NFS client's `.nfsXXXX` stand-in for a removed
    file, a trash folder, outside the repository, into .git) while task one works. The run
    took the name its open file has now for the plan's new name: it said `agent-loop
    .nfs…` goes on, saved the state under that name, started no new task; on NFS the
    stand-in vanishes at the end, and the plan with it. It is a deletion: put back, the run
    goes on."""
    work = make_repo(tmp_path / "project", "git")
    plan = (f"## A\n- [ ] one\n  FAKE: write one.txt one\n"
            f"  FAKE: bash {GONE[how].format(work=work, tmp=tmp_path)}\n"
            "- [ ] two\n  FAKE: write two.txt two\n")
    (work / "tasks.md").write_text(plan)
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--allow-dirty")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "renamed" not in out, out
    assert "tasks.md vanished from disk" in out, out
    assert (work / "tasks.md").read_text() == plan
    state = state_of(work)
    assert state["task_file"] == "tasks.md"
    assert [t["status"] for t in state["tasks"]] == ["completed"] * 2
    assert len(fake_claude.task_runs()) == 2


def test_an_nfs_stand_in_beside_the_plan_is_no_rename(tmp_path: Path) -> None:
    """Where the system cannot name an open file's path, the plan's rename is looked for
    beside it: an NFS client's stand-in there is that very file with its bytes, and is still
    no rename."""
    from agentloop.run.plan_kept import _renamed, file_id

    stand_in = tmp_path / ".nfs00000000deadbeef00000001"
    stand_in.write_bytes(b"- [ ] one\n")
    assert _renamed(tmp_path / "tasks.md", b"- [ ] one\n", file_id(stand_in.stat())) is None
    renamed = tmp_path / "plan.md"
    stand_in.rename(renamed)
    assert _renamed(tmp_path / "tasks.md", b"- [ ] one\n", file_id(renamed.stat())) == "plan.md"


def test_the_plans_file_is_let_go_when_the_runs_wind_up_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run holds its plan's file open while it works: an error in its last steps (the
    state's last save, the plan put back) left that file open for as long as the process
    lived (a test, an embedding program), since it was let go only after them."""
    from agentloop.run import loop
    from tests.support.harness import OK, STOP, ScriptedAdvisor, ScriptedAgent, make

    runner, _, _ = make(tmp_path, "- [ ] one\n", ScriptedAgent([OK]), ScriptedAdvisor(STOP))

    def broken(*args: object) -> None:
        assert runner.ctx.shared.plan_fd is not None   # held while the run worked
        raise OSError("disk full")

    monkeypatch.setattr(loop, "_wound_up", broken)
    with pytest.raises(OSError, match="disk full"):
        runner.run()
    assert runner.ctx.shared.plan_fd is None


@pytest.mark.parametrize("to", ["plans/plan.md", "other/tasks.md"])
def test_a_plan_kept_outside_the_repository_is_followed_only_beside_where_it_was(
        tmp_path: Path, fake_claude: FakeClaude, to: str) -> None:
    """A plan kept outside the repository (`agent-loop ../plans/tasks.md`): renamed beside
    where it was, it is renamed (not put back); moved to another folder outside the
    repository, it is gone as any plan moved out is, and put back."""
    work = make_repo(tmp_path / "project", "git")
    (tmp_path / "plans").mkdir()
    (tmp_path / "other").mkdir()
    plan = tmp_path / "plans" / "tasks.md"
    plan.write_text(f"## A\n- [ ] one\n  FAKE: write one.txt one\n"
                    f"  FAKE: bash mv {plan} {tmp_path / to}\n"
                    "- [ ] two\n  FAKE: write two.txt two\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", plan=str(plan))
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    if to.startswith("plans/"):
        assert "was renamed" in out and not plan.exists(), out
        assert len(fake_claude.task_runs()) == 1
    else:
        assert done.returncode == 0 and "vanished from disk" in out and plan.exists(), out
        assert len(fake_claude.task_runs()) == 2


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


def test_a_plan_gone_with_your_switch_to_another_branch_is_not_put_back_in_your_way(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # While T2's agent works you `git switch old`, a branch with no plan: the plan, committed
    # on main, leaves your checkout with your switch. It was put back there, an untracked
    # file in the way of the `git switch main` the run itself printed ("untracked working
    # tree files would be overwritten by checkout"). main holds it as the run read it: it is
    # left to git, the run goes on, and your switch back works.
    from tests.support.repos import git

    work = make_repo(tmp_path / "project", "git", {"README.md": "hi\n",
                                                   ".gitignore": ".agent-loop/\n"})
    git(work, "branch", "old")
    # Your switch, no agent's mark in the reflog; the landing of T1 may hold the index a moment.
    switch = f"until env -u GIT_REFLOG_ACTION git -C {work} switch -q old; do sleep 0.05; done"
    plan = PLAN.format(undo=switch)
    (work / "tasks.md").write_text(plan)
    git(work, "add", "tasks.md")
    git(work, "commit", "-qm", "plan")
    done = agent_loop(work, "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "vanished from disk" not in done.stdout + done.stderr
    assert "cannot be read now" not in done.stdout, done.stdout   # it did not change
    assert "tasks.md left your checkout with your switch to another branch" in done.stdout, \
        done.stdout
    assert not (work / "tasks.md").exists()
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    # The closing line's `--status`, pasted where you stand (on old, no plan there).
    status = re.search(r"`([^`]*agent-loop [^`]*--status)` lists every task's change",
                       done.stdout)
    assert status is not None, done.stdout
    shown = subprocess.run(["bash", "-c", status.group(1).replace(
        "agent-loop", f"{shlex.quote(sys.executable)} -m agentloop")],
                           cwd=work, capture_output=True, text=True)
    assert shown.returncode == 0 and "completed" in shown.stdout, (status.group(1), shown.stderr)
    git(work, "switch", "-q", "main")   # as the run printed it
    assert (work / "tasks.md").read_text() == plan
    assert sorted(git(work, "ls-tree", "--name-only", "HEAD").split()) == [
        ".gitignore", "README.md", "a.txt", "b.txt", "c.txt", "tasks.md"]


def test_a_plan_your_jj_undo_deleted_while_a_killed_run_worked_is_never_lost(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """You `jj undo` in your colocated checkout while a run works, which rolls back jj's
    snapshot of your untracked plan and deletes it; the run is then killed (kill -9), before
    it could put the plan back. The next run said only that the plan does not exist; it now
    says, before any agent runs (and so do --status and --dry-run), where the last run kept
    it and how to put it back, which works as pasted, and the run after it goes on, task one
    not paid again."""
    import os
    import signal

    from tests.run.test_serial_lane_leftovers import THREE
    from tests.support.repos import init_repo, jj
    from tests.support.runner import half_done_in_the_serial_lane

    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    init_repo(work, "colocated")
    (work / "tasks.md").write_text(THREE)
    args = ["--vcs", "jj", "--no-distill"]
    tool, _ = half_done_in_the_serial_lane(work, tmp_path / "directives.json", "task two", args)
    jj(work, "status")  # jj snapshots the plan…
    jj(work, "undo")    # …and your undo rolls that back, the plan with it
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=60)
    assert not (work / "tasks.md").exists()
    paid = len(fake_claude.task_runs())
    gone = agent_loop(work, *args)
    said = gone.stdout + gone.stderr
    assert gone.returncode == 1, said
    assert len(fake_claude.task_runs()) == paid, said
    lines = [line for line in said.splitlines() if "tasks.md does not exist" in line]
    assert len(lines) == 1 and "the same SHA-256" in lines[0], said
    for look in ("--status", "--dry-run"):  # where you look first: each says the same
        shown = agent_loop(work, look)
        assert shown.returncode == 1 and lines[0] in shown.stderr, shown.stdout + shown.stderr
    back = re.search(r"`(cp [^`]+)`", lines[0])
    assert back is not None, said
    subprocess.run(["bash", "-c", back.group(1)], cwd=work, check=True)
    assert (work / "tasks.md").read_text() == THREE
    done = agent_loop(work, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert len([p for p in fake_claude.task_prompts() if "write one.txt" in p]) == 1


def test_a_plan_deleted_while_a_run_killed_before_its_first_agent_ran_its_checks_is_never_lost(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    """The run's checks run once before its first agent (its baseline), for minutes in a
    real project. You delete the plan meanwhile (your `jj undo`, here the check itself) and the
    run is killed (kill -9) before any agent started: the next run says where the plan's copy
    is, as the run read it, and no agent is paid."""
    import os
    import signal
    import time

    work = make_repo(tmp_path / "project", "git")
    plan = "- [ ] T1\n  FAKE: write a.txt a\n"
    (work / "tasks.md").write_text(plan)
    ran = tmp_path / "check-ran"
    check = (f"rm {shlex.quote(str(work / 'tasks.md'))}; touch {shlex.quote(str(ran))}; "
             "sleep 60")
    args = ["--vcs", "git", "--no-distill"]
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args,
                             "--check", check], cwd=work, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while not ran.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ran.exists()
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=60)
    assert not (work / "tasks.md").exists()
    gone = agent_loop(work, *args)
    said = gone.stdout + gone.stderr
    assert gone.returncode == 1, said
    assert fake_claude.task_runs() == [], said
    lines = [line for line in said.splitlines() if "tasks.md does not exist" in line]
    assert len(lines) == 1 and "the same SHA-256" in lines[0], said
    back = re.search(r"`(cp [^`]+)`", lines[0])
    assert back is not None, said
    subprocess.run(["bash", "-c", back.group(1)], cwd=work, check=True)
    assert (work / "tasks.md").read_text() == plan
