"""Two checkouts of one repository (`git worktree add ../wt -b side`), a plan at the same path in
each: lane branches and worktree registrations live in the repository's common git dir, so a
plan's lanes in the linked checkout are named apart from the same plan's in the main checkout,
which keeps the names it always had. Neither checkout's run moves, sweeps or deletes the other's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj, state_of
from tests.support.runner import agent_loop

PLAN = """\
## G
- task one
  FAKE: write one.txt 1
- task two
  FAKE: write two.txt 2
"""
ARGS = ("--vcs", "git", "--no-distill")


def _killed_in_lane(checkout: Path, directives: Path) -> str:
    """`agent-loop tasks.md` in `checkout`, SIGKILLed once task two's agent has committed its
    work in the run's lane (committed there, not landed); that commit."""
    directives.write_text(json.dumps({"task two": ["FAKE: commit wip-two", "FAKE: pause 60"]}))
    tool = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *ARGS], cwd=checkout,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "FAKE_CLAUDE_DIRECTIVES": str(directives)},
                            start_new_session=True)
    deadline, commit = time.monotonic() + 60, ""
    while not commit and time.monotonic() < deadline:
        time.sleep(0.05)
        # (`--all` fails on a lane's registration half made: asked again)
        commit = subprocess.run(["git", "log", "--all", "--format=%H", "--grep=wip-two"],
                                cwd=checkout, capture_output=True, text=True).stdout.strip()
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=30)
    assert commit, "task two's agent never committed"
    return commit


def _lane_branches(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname:short) %(objectname)",
              "refs/heads/agent-loop/")
    return dict(line.split() for line in out.splitlines())


def _twins(tmp_path: Path, kind: str = "git") -> tuple[Path, Path]:
    """A repository with the plan committed, and a second checkout of it at `wt`: a linked
    `git worktree` on branch side, or a second jj workspace."""
    main, wt = tmp_path / "main", tmp_path / "wt"
    main.mkdir()
    (main / "README.md").write_text("hello\n")
    init_repo(main, kind)
    (main / "tasks.md").write_text(PLAN)
    if kind == "jj":
        jj(main, "commit", "-m", "the plan")
        jj(main, "workspace", "add", str(wt))
        return main, wt
    git(main, "add", "tasks.md")
    git(main, "commit", "-qm", "the plan")
    git(main, "worktree", "add", "-q", str(wt), "-b", "side")
    return main, wt


def test_a_run_in_the_main_checkout_leaves_the_linked_checkouts_lane_alone(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    wip = _killed_in_lane(wt, tmp_path / "directives.json")
    (held,) = [b for b, tip in _lane_branches(main).items() if tip == wip]
    # The main checkout runs the same plan (its own copy of tasks.md) to the end.
    done = agent_loop(main, *ARGS)
    assert done.returncode == 0, done.stdout + done.stderr
    # The linked checkout's lane still holds its committed work, on its branch, registered.
    assert _lane_branches(main).get(held) == wip, done.stdout
    lane = wt / ".agent-loop" / "lanes" / held.removeprefix("agent-loop/")
    assert git(lane, "rev-parse", "HEAD").strip() == wip
    assert (lane / "two.txt").read_text().strip() == "2"
    # Its next run goes on from there and lands on its own branch, each task paid once.
    before = len(fake_claude.task_runs())
    again = agent_loop(wt, *ARGS)
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(wt)["tasks"]] == ["completed", "completed"]
    assert git(wt, "show", "side:two.txt").strip() == "2"
    assert git(main, "show", "main:two.txt").strip() == "2"
    assert len(fake_claude.task_runs()) - before == 1  # task two, resumed
    assert [t["status"] for t in state_of(main)["tasks"]] == ["completed", "completed"]


def test_the_main_checkout_keeps_its_lane_names(tmp_path: Path,
                                                fake_claude: FakeClaude) -> None:
    # The name the released version gave: a lane a killed run of it left is found again.
    main, _ = _twins(tmp_path)
    wip = _killed_in_lane(main, tmp_path / "directives.json")
    assert _lane_branches(main) == {"agent-loop/tasks.c63cd8-serial": wip}
    again = agent_loop(main, *ARGS)
    assert again.returncode == 0, again.stdout + again.stderr
    assert git(main, "show", "main:two.txt").strip() == "2"
    assert [t["status"] for t in state_of(main)["tasks"]] == ["completed", "completed"]


def test_a_lane_the_released_version_left_in_a_linked_checkout_is_found_there(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    wip = _killed_in_lane(wt, tmp_path / "directives.json")
    # As the released version left it: under the main checkout's name for the plan's lane.
    (held,) = [b for b, tip in _lane_branches(main).items() if tip == wip]
    released = "tasks.c63cd8-serial"
    assert held != "agent-loop/" + released
    lanes = wt / ".agent-loop" / "lanes"
    git(wt, "worktree", "move", str(lanes / held.removeprefix("agent-loop/")),
        str(lanes / released))
    git(wt, "branch", "-m", held, "agent-loop/" + released)
    # Its open attempt's record names that branch, as the released version wrote it.
    record = Path(git(lanes / released, "rev-parse", "--absolute-git-dir").strip()) / \
        "agent-loop-attempt.json"
    fields = json.loads(record.read_text())
    assert fields["ref"] == "refs/heads/" + held
    record.write_text(json.dumps({**fields, "ref": "refs/heads/agent-loop/" + released}))
    # The main checkout's run neither moves nor takes it; the linked checkout's adopts it.
    done = agent_loop(main, *ARGS)
    assert done.returncode != 0 and "a lane of another checkout" in done.stdout + done.stderr
    assert _lane_branches(main).get("agent-loop/" + released) == wip, done.stdout + done.stderr
    assert git(lanes / released, "rev-parse", "HEAD").strip() == wip
    before = len(fake_claude.task_runs())
    again = agent_loop(wt, *ARGS)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) - before == 1  # task two, resumed
    # Gone on from the agent's commit, not set aside as no task's.
    assert "the task goes on from them" in again.stdout, again.stdout
    assert "no task's to go on from" not in again.stdout
    assert git(wt, "show", "side:two.txt").strip() == "2"
    assert not (lanes / released).exists()
    assert "agent-loop/" + released not in _lane_branches(main)


def test_jj_a_run_in_the_first_workspace_leaves_another_workspaces_lane_alone(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude) -> None:
    from tests.support.runner import half_done_in_the_serial_lane

    main, wt = _twins(tmp_path, "jj")
    tool, lane = half_done_in_the_serial_lane(wt, tmp_path / "directives.json", "task two",
                                              ["--vcs", "jj", "--no-distill"])
    os.killpg(tool.pid, signal.SIGKILL)
    tool.wait(timeout=30)
    held = "agent-loop-" + lane.name
    assert held in jj(main, "workspace", "list")
    done = agent_loop(main, "--vcs", "jj", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    # The other workspace's lane is still a workspace of the repository, its files there.
    assert held in jj(main, "workspace", "list"), done.stdout
    assert (lane / "half.txt").exists()
    again = agent_loop(wt, "--vcs", "jj", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(wt)["tasks"]] == ["completed", "completed"]
    assert held not in jj(main, "workspace", "list")


def test_both_checkouts_at_once_in_lanes_of_their_own(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    both = """\
## A
- a1
  FAKE: write a1.txt 1
  FAKE: sleep 0.5
- a2
  FAKE: write a2.txt 2

## B
- b1
  FAKE: write b1.txt 1
  FAKE: sleep 0.5
- b2
  FAKE: write b2.txt 2
"""
    # Each checkout's agents write their own text: the fake agent's commits, alike to the
    # second, would otherwise be one commit in both.
    for checkout in (main, wt):
        (checkout / "tasks.md").write_text(both.replace(" 1\n", f" 1 {checkout.name}\n"))
    argv = [sys.executable, "-m", "agentloop", "tasks.md", *ARGS, "--parallel", "2"]
    runs = [subprocess.Popen(argv, cwd=c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
            for c in (main, wt)]
    said = [r.communicate(timeout=120)[0].decode() for r in runs]
    assert [r.returncode for r in runs] == [0, 0], "\n=====\n".join(said)
    for branch in ("main", "side"):
        landed = git(main, "log", "--format=%s", f"{branch}~4..{branch}").splitlines()
        assert sorted(landed) == [f"agent-loop: {g} / {t}" for g, t in
                                  (("A", "a1"), ("A", "a2"), ("B", "b1"), ("B", "b2"))], said
    assert len(fake_claude.task_runs()) == 8  # each task once in each checkout
    assert _lane_branches(main) == {}


def test_the_main_checkouts_sweep_keeps_off_a_linked_checkouts_older_lanes(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    two = PLAN + "\n## H\n- task three\n  FAKE: write three.txt 3\n"
    # Lanes as a killed run of the released version leaves them in the linked checkout: a
    # worktree on its branch for each group, under the main checkout's names, each holding a
    # commit of its own.
    lanes = wt / ".agent-loop" / "lanes"
    for name in ("tasks.c63cd8-1-g", "tasks.c63cd8-2-h"):
        git(wt, "worktree", "add", "-q", "-b", "agent-loop/" + name, str(lanes / name))
        (lanes / name / "mine.txt").write_text(name)
        git(lanes / name, "add", "mine.txt")
        git(lanes / name, "commit", "-qm", "in " + name)
    tips = _lane_branches(main)
    (main / "tasks.md").write_text(two)
    ran = agent_loop(main, *ARGS)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "kept as" not in ran.stdout, ran.stdout
    assert git(main, "for-each-ref", "refs/agent-loop/kept/") == ""
    assert _lane_branches(main) == tips


def test_a_rehearsal_in_each_checkout_keeps_its_own_branch(tmp_path: Path,
                                                           fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    done = agent_loop(wt, "--rehearse")
    assert done.returncode == 0, done.stdout + done.stderr
    (theirs,) = _lane_branches(main).items()
    again = agent_loop(main, "--rehearse")
    assert again.returncode == 0, again.stdout + again.stderr
    # The main checkout's under the name it always had; the linked checkout's as it left it.
    branches = _lane_branches(main)
    assert theirs in branches.items() and "agent-loop/rehearsal-tasks-md" in branches
    assert len(branches) == 2


def test_jj_the_first_workspaces_run_keeps_off_another_workspaces_older_lanes(
        tmp_path: Path, jj_bin: str, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path, "jj")
    # Lanes as the released version leaves them in the other workspace: under the names the
    # first workspace's lanes have (its group's, its one sequential lane).
    (wt / ".agent-loop" / "lanes").mkdir(parents=True)
    (wt / ".agent-loop" / ".gitignore").write_text("*\n")
    for name in ("tasks.c63cd8-1-g", "tasks.c63cd8-serial"):
        jj(wt, "workspace", "add", "--name", "agent-loop-" + name,
           str(wt / ".agent-loop" / "lanes" / name))
        (wt / ".agent-loop" / "lanes" / name / "half.txt").write_text(name)
    ran = agent_loop(main, "--vcs", "jj", "--no-distill")
    said = ran.stdout + ran.stderr
    assert ran.returncode != 0 and "a lane of another checkout" in said, said
    listed = jj(main, "workspace", "list")
    assert "agent-loop-tasks.c63cd8-1-g" in listed and "agent-loop-tasks.c63cd8-serial" in listed
    assert all((wt / ".agent-loop" / "lanes" / n / "half.txt").exists()
               for n in ("tasks.c63cd8-1-g", "tasks.c63cd8-serial"))


def test_a_rehearsal_the_released_version_left_in_a_linked_checkout_is_taken_up_there(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    main, wt = _twins(tmp_path)
    done = agent_loop(wt, "--rehearse")
    assert done.returncode == 0, done.stdout + done.stderr
    # As the released version left it: under the main checkout's name for the rehearsal.
    lanes = wt / ".agent-loop" / "lanes"
    git(wt, "worktree", "move", str(lanes / "rehearsal-tasks-md.wt"),
        str(lanes / "rehearsal-tasks-md"))
    git(wt, "branch", "-m", "agent-loop/rehearsal-tasks-md.wt", "agent-loop/rehearsal-tasks-md")
    status = agent_loop(wt, "--status", "--rehearse")
    # Before: "its working copy .agent-loop/lanes/rehearsal-tasks-md.wt is gone".
    assert "its changes are on branch agent-loop/rehearsal-tasks-md, in " in status.stdout, \
        status.stdout
    blocked = agent_loop(main, "--rehearse")
    assert blocked.returncode != 0 and "--rehearse" in blocked.stdout + blocked.stderr
    # The linked checkout's next rehearsal takes it up under its own name; the main
    # checkout's rehearses then (before: refused again and again, its lane left there).
    again = agent_loop(wt, "--rehearse")
    assert again.returncode == 0, again.stdout + again.stderr
    assert not (lanes / "rehearsal-tasks-md").exists()
    assert (lanes / "rehearsal-tasks-md.wt").is_dir()
    ours = agent_loop(main, "--rehearse")
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert set(_lane_branches(main)) == {"agent-loop/rehearsal-tasks-md",
                                         "agent-loop/rehearsal-tasks-md.wt"}


def test_one_run_names_its_lanes_by_one_key_however_its_git_file_changes(
        tmp_path: Path) -> None:
    """The linked checkout's id in a plan's lane key is read from its `.git` file, which you or
    an agent may rewrite while a run works: read where each lane was named, it named one run's
    lanes under two keys (a lane opened after, or its lock put back, under a key its sweep
    never took). One run, one key, in every lane's view of the run."""
    import dataclasses

    from agentloop.run import scheduler
    from agentloop.vcs.none import NoneVcs
    from tests.support.harness import FakeClock, make_run

    _, wt = _twins(tmp_path)
    run = make_run(wt, PLAN, None, NoneVcs(), lambda *_: None, FakeClock(), []).ctx
    key = scheduler._plan_key(run)
    (wt / ".git").write_text(f"gitdir: {tmp_path / 'elsewhere' / 'worktrees' / 'other'}\n")
    lane_run = dataclasses.replace(run, workdir=tmp_path / "lane")
    assert scheduler._plan_key(run) == key
    assert scheduler._plan_key(lane_run) == key
    assert scheduler._plan_key(run, released=True) != key  # the released version's, as ever
