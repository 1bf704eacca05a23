"""What a careless user does beside a run (edits the plan while an agent works, pipes the output
into tee, makes a commit of their own in the middle of a task), with real git and files: no
work lost, nothing said that is not so."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import committed_plan, git, git_commits, init_repo, jj, state_of, tasks_of
from tests.support.runner import agent_loop


def test_your_edit_of_the_plan_while_an_agent_works_is_no_agent_writing_outside_its_lane(
        work: Path, fake_claude: FakeClaude) -> None:
    """Editing the plan while a run works is said to be safe; the lane's check of your
    checkout said after that task that tasks.md "changed while this lane's agent ran (an
    agent writing outside its lane, or you)", a warning about the one edit the run invites."""
    init_repo(work, "git")
    plan = work / "tasks.md"
    committed_plan(work,
        "## A\n"
        "- [ ] one\n"
        "  FAKE: write one.txt one\n"
        f"  FAKE: bash printf -- '- [ ] three\\n  FAKE: write three.txt three\\n' >> {plan}\n"
        "- [ ] two\n"
        "  FAKE: write two.txt two\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "changed while this lane's agent ran" not in done.stdout, done.stdout
    # The task you added runs next time, as the closing lines say.
    assert "1 task added" in done.stdout, done.stdout
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    assert (work / "three.txt").read_text() == "three\n"


THREE = """\
## A
- [ ] one
  FAKE: write one.txt one
{extra}
- [ ] two
  FAKE: write two.txt two

## B
- [ ] three
  FAKE: write three.txt three
"""


def three_committed(work: Path, extra: str) -> None:
    """The plan (three tasks; `extra` goes under task one) committed in the git repository
    `work` (made when there is none)."""
    if not (work / ".git").exists():
        init_repo(work, "git")
    committed_plan(work, THREE.format(extra=extra))


def test_your_branch_renamed_while_a_task_runs_loses_no_task(work: Path,
                                                             fake_claude: FakeClaude) -> None:
    """`git branch -m main trunk` while task one's agent works. The run ended in git's own
    words (`git rev-parse refs/heads/main` failed ... ambiguous argument), task one's commit
    left on the lane's branch; the run after it said task one "completed, but the task changed
    no files", deleted the lane's branch and with it the only ref to task one's commit: one.txt
    was on no branch, paid for twice, and --status called it done."""
    init_repo(work, "git")
    mine = git(work, "symbolic-ref", "--short", "HEAD").strip()
    three_committed(work, f"  FAKE: bash git -C {work} branch -m {mine} trunk")
    first = agent_loop(work, "--vcs", "git", "--no-distill")
    assert "fatal:" not in first.stdout + first.stderr, first.stdout + first.stderr
    if first.returncode != 0:
        again = agent_loop(work, "--vcs", "git", "--no-distill")
        assert again.returncode == 0, again.stdout + again.stderr
    assert git(work, "symbolic-ref", "HEAD").strip() == "refs/heads/trunk"
    on_trunk = [files for _, _, files in git_commits(work)]
    assert on_trunk == [["one.txt"], ["two.txt"], ["three.txt"]], on_trunk


@pytest.mark.parametrize("mark", [None, "agent-loop agent"])
def test_a_commit_you_make_while_the_agent_works_in_your_checkout_stays_yours(
        work: Path, fake_claude: FakeClaude, mark: str | None) -> None:
    """`--workplace checkout`: while task one's agent works, you commit a file of your own
    (from your terminal, so without the agent's environment). Your commit was folded into
    the task's: its message and author gone, your file reverted with the task. The agent's
    own commits (task two's) are still folded into its task's one commit. `mark`: agent-loop
    and you in a shell that has an agent's reflog mark already (an agent of another run's):
    your commit carries that one, not this run's, and was folded all the same."""
    shell = "env -u GIT_REFLOG_ACTION" if mark is None else f"env GIT_REFLOG_ACTION='{mark}'"
    yours = (f"{shell} GIT_AUTHOR_NAME=Me GIT_AUTHOR_EMAIL=me@example.com "
             f"sh -c 'cd {work} && echo mine > mine.txt && git add mine.txt && "
             "git commit -qm \"my own commit\"'")
    init_repo(work, "git")
    committed_plan(work,
        "## A\n"
        "- [ ] one\n"
        "  FAKE: write one.txt one\n"
        f"  FAKE: bash {yours}\n"
        "- [ ] two\n"
        "  FAKE: write two.txt two\n"
        "  FAKE: commit the agent's own commit\n"
        "  FAKE: write more.txt more\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", "checkout",
                      env=None if mark is None else {**os.environ, "GIT_REFLOG_ACTION": mark})
    assert done.returncode == 0, done.stdout + done.stderr
    out = git(work, "log", "--reverse", "--format=%x00%an|%s", "--name-only")
    rows = [chunk.split() for chunk in out.split("\0") if chunk.strip()]
    assert [" ".join(row) for row in rows[-3:]] == [
        "Me|my own commit mine.txt",
        "Test Author|agent-loop: A / one one.txt",
        "Test Author|agent-loop: A / two more.txt two.txt"], rows
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2


@pytest.mark.parametrize("kind", ["colocated", "jj"])
def test_your_jj_undo_while_an_agent_works_is_named_as_the_command_you_typed(
        work: Path, fake_claude: FakeClaude, jj_bin: str, kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`jj undo` in your checkout while task two's agent works: the run stops before it lands
    anything, naming the command and the way back. It said "an agent ran `jj undo:`" (jj's
    description cut at its first word, colon and all), blamed the agent alone, and quoted two
    operation ids of 128 hex digits each. Its way back, `jj op revert <the undo>`, typed as
    printed, left your working-copy change divergent (your undone snapshot back beside the
    one taken since); now it restores the operation before your undo, which only the lane's
    own step followed: task one stays below your working copy, nothing is divergent, `jj st`
    works, and the next run pays only task two's agent."""
    init_repo(work, kind)
    hostile = f"  FAKE: bash cd {work} && jj undo\n"
    (work / "tasks.md").write_text(
        "## A\n"
        "- [ ] one\n"
        "  FAKE: write one.txt one\n"
        "- [ ] two\n"
        "  FAKE: write two.txt two\n"
        f"{hostile}")
    done = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert done.returncode != 0, done.stdout + done.stderr
    said = next(line for line in done.stderr.splitlines() if "error:" in line)
    assert "`jj undo` ran while the lane's agent worked" in said and "by the agent or by you" \
        in said, said
    assert not re.search(r"[0-9a-f]{32}", said), said
    # You type the line later than the run's pinned clock: with one clock for both, a snapshot
    # of yours re-made the very commit your undo dropped, and jj refused it ("Newly-created
    # commit ... already exists"), which no user with a clock that moves meets.
    monkeypatch.setenv("JJ_TIMESTAMP", "2026-01-01T00:05:00+00:00")
    for command in re.findall(r"`([^`]+)`", said.split("see and repair it with ", 1)[1]):
        jj(work, *shlex.split(command)[1:])
    status = jj(work, "st")
    assert "stale" not in status, status
    one = state_of(work)["tasks"][0]["change_id"]
    assert jj(work, "log", "--no-graph", "-r", f"::@- & {one[:12]}", "-T", "change_id"), said
    assert not jj(work, "log", "--no-graph", "-r", "divergent()", "-T", "change_id"), said
    calls = len(fake_claude.calls())
    (work / "tasks.md").write_text((work / "tasks.md").read_text().replace(hostile, ""))
    again = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.calls()) == calls + 1, again.stdout
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 2
    assert (work / "one.txt").exists() and (work / "two.txt").exists()


def test_a_run_stopped_by_its_budget_leaves_no_branch_behind(work: Path,
                                                             fake_claude: FakeClaude) -> None:
    """`--budget` reached once group A is done and landed, before group B starts: nothing is
    left in the serial lane, yet its worktree and branch (agent-loop/tasks...-serial) stayed
    in the repository, where "a branch is never left behind" and the lane "goes after the
    last group"."""
    three_committed(work, "")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--budget", "0.02")
    assert done.returncode == 1 and "budget reached before task 3" in done.stderr, \
        done.stdout + done.stderr
    assert [files for _, _, files in git_commits(work)] == [["one.txt"], ["two.txt"]]
    assert git(work, "for-each-ref", "--format=%(refname)", "refs/heads/") == \
        f"refs/heads/{git(work, 'symbolic-ref', '--short', 'HEAD').strip()}\n"
    assert len(git(work, "worktree", "list").splitlines()) == 1


@pytest.mark.parametrize("edit", ["rename the group", "move the task to another group"])
def test_a_done_task_under_a_renamed_heading_is_not_paid_for_again(
        work: Path, fake_claude: FakeClaude, edit: str) -> None:
    """A finished plan, then `## A` renamed `## Alpha` (or the done task `one` moved under
    `## B`): its tasks were matched by group and text, so each done task under the new
    heading was a new task, run and paid for again (and "completed, but the task changed no
    files"), its record archived as removed."""
    three_committed(work, "")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = len(fake_claude.calls())
    plan = (work / "tasks.md").read_text()
    if edit == "rename the group":
        plan = plan.replace("## A\n", "## Alpha\n")
    else:
        one = "- [ ] one\n  FAKE: write one.txt one\n\n"
        plan = plan.replace(one, "") + one.rstrip("\n") + "\n"
    (work / "tasks.md").write_text(plan)
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.calls()) == calls, again.stdout
    tasks = state_of(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed"] * 3, tasks
    assert "changed no files" not in again.stdout, again.stdout
    assert [files for _, _, files in git_commits(work)] == [["one.txt"], ["two.txt"],
                                                            ["three.txt"]]


def test_a_held_task_landing_at_the_next_run_is_said_under_its_own_heading(
        work: Path, fake_claude: FakeClaude) -> None:
    """Task one is held by your untracked notes.txt; you move it away and run again: the
    task lands first thing, and its line (`change …: 1 file(s) changed`) came before any
    `[n/m] task n:` heading, so nothing said which task it was."""
    three_committed(work, "")
    plan = (work / "tasks.md").read_text().replace("write one.txt one", "write notes.txt agent")
    (work / "tasks.md").write_text(plan)
    git(work, "commit", "-qam", "the plan, notes")
    (work / "notes.txt").write_text("mine\n")
    held = agent_loop(work, "--vcs", "git", "--no-distill", "--lane-wait", "1s")
    assert held.returncode == 4, held.stdout + held.stderr
    (work / "notes.txt").unlink()
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 0, again.stdout + again.stderr
    lines = [line for line in again.stdout.splitlines() if line.strip()]
    first_change = next(i for i, line in enumerate(lines) if line.strip().startswith("change "))
    assert any("task 1" in line for line in lines[:first_change]), again.stdout


@pytest.mark.parametrize("workplace", ["checkout", "lane"])
def test_your_squash_of_two_landed_tasks_mid_run_loses_nothing_and_keeps_nothing_aside(
        work: Path, fake_claude: FakeClaude, workplace: str) -> None:
    """While task three's agent works you squash tasks one and two into one commit with a
    message of your own (their trailers gone). Their changes are on your branch, in your
    commit; the run stopped saying commit one "is no longer on it" with a `git cherry-pick`
    to bring it back (which would apply it twice), and the run after it kept the lane's
    branch as refs/agent-loop/kept/... "held commits that are not on the main line"."""
    init_repo(work, "git")
    once = work.parent / "squashed-once"
    squash = (f"[ -e {once} ] || (touch {once} && cd {work} && env -u GIT_REFLOG_ACTION sh -c "
              "'git reset -q --soft HEAD~2 && git commit -qm \"one and two, squashed\"')")
    committed_plan(work,
        "## A\n"
        "- [ ] one\n"
        "  FAKE: write one.txt one\n"
        "- [ ] two\n"
        "  FAKE: write two.txt two\n"
        "- [ ] three\n"
        "  FAKE: write three.txt three\n"
        f"  FAKE: bash {squash}\n")
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace)
    said = first.stdout + first.stderr
    assert "is no longer on it" not in said and "cherry-pick" not in said, said
    if first.returncode != 0:
        again = agent_loop(work, "--vcs", "git", "--no-distill", "--workplace", workplace)
        said = again.stdout + again.stderr
        assert again.returncode == 0, said
    assert "kept as" not in said, said
    assert git(work, "for-each-ref", "refs/agent-loop/kept") == ""
    assert [t["status"] for t in state_of(work)["tasks"]] == ["completed"] * 3
    for name in ("one", "two", "three"):
        assert git(work, "show", f"HEAD:{name}.txt") == f"{name}\n"


@pytest.mark.parametrize("ticks", [(), ("--tick-boxes",)])
@pytest.mark.parametrize("move", ["mv", "git mv"])
def test_your_plan_renamed_while_a_task_runs_is_not_put_back_and_nothing_is_paid_twice(
        work: Path, fake_claude: FakeClaude, ticks: tuple[str, ...], move: str) -> None:
    """`mv tasks.md plan.md` while task one's agent works. The run put tasks.md back (as the
    run last read it) and went on with it, so `agent-loop plan.md` afterwards found tasks.md
    there, had no state to take over and paid every task again (six agent runs for three).
    Now no old name comes back: the run starts no new task and says where the plan went, and
    the run of the new name takes its state over, each task run once. (`git mv` renames the
    file as `mv` does: the same inode, which is how the run knows it from a copy.)"""
    how = "mv" if move == "mv" else f"git -C {work} mv"
    three_committed(work, f"  FAKE: bash {how} {work / 'tasks.md'} {work / 'plan.md'}")
    first = agent_loop(work, "--vcs", "git", "--no-distill", *ticks)
    out = first.stdout + first.stderr
    assert "Traceback" not in out, out
    assert not (work / "tasks.md").exists(), out
    said = [line for line in first.stdout.splitlines() if "tasks.md was renamed plan.md" in line]
    assert said and "agent-loop plan.md" in said[0], out
    assert "agent-loop tasks.md" not in out, out   # the closing lines name the plan there is
    again = agent_loop(work, "--vcs", "git", "--no-distill", *ticks, plan="plan.md")
    assert again.returncode == 0, again.stdout + again.stderr
    assert not (work / "tasks.md").exists()
    assert len(fake_claude.task_runs()) == 3, again.stdout
    for name in ("one", "two", "three"):
        assert git(work, "show", f"HEAD:{name}.txt") == f"{name}\n"
    if ticks:
        assert (work / "plan.md").read_text().count("- [x]") == 3


@pytest.mark.parametrize("then", ["newer.md", "tasks.md"])
def test_your_plan_renamed_twice_or_back_while_lanes_work_gets_every_tick_and_true_lines(
        work: Path, fake_claude: FakeClaude, then: str) -> None:
    """--parallel 2 --tick-boxes; `mv tasks.md new.md` while group A works, and once the run
    has said so, `mv new.md newer.md` (or back to tasks.md) while group B's task works. The
    run said "task 3's box was not ticked: the plan could not be read", b1's box stayed
    unticked, and the closing lines said "new.md changed while this run worked and cannot be
    read now" and "`agent-loop new.md --status` says why" of a file that was gone. Now the
    tick follows the plan where it went last, and the closing lines name that file."""
    init_repo(work, "git")
    new, last = work / "new.md", work / then
    said = work / ".agent-loop" / "events.jsonl"   # where the run says it saw the rename
    committed_plan(work,
        "## A\n- [ ] a1\n  FAKE: write a1.txt 1\n"
        f"  FAKE: bash mv {work / 'tasks.md'} {new}\n"
        "- [ ] a2\n  FAKE: write a2.txt 2\n\n"
        "## B\n- [ ] b1\n  FAKE: write b1.txt 1\n"
        f"  FAKE: bash for i in $(seq 300); do grep -qs 'renamed new[.]md' {said} "
        "&& break; sleep 0.1; "
        f"done; mv {new} {last}\n"
        "- [ ] b2\n  FAKE: write b2.txt 2\n")
    first = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2", "--tick-boxes")
    out = first.stdout + first.stderr
    assert "Traceback" not in out and not new.exists(), out
    assert "could not be read" not in out and "cannot be read now" not in out, out
    closing = out[out.index("agent-loop done"):]
    assert "agent-loop new.md" not in closing and f"agent-loop {then}" in closing, out
    plan = last.read_text()
    assert "- [x] a1" in plan and "- [x] b1" in plan, out + plan
    assert "- [ ] a2" in plan and "- [ ] b2" in plan, out + plan
    every = agent_loop(work, "--status", plan=None).stdout
    assert every.startswith(f"{then}: 4 task(s), 2 done") and "gone" not in every, every
    again = agent_loop(work, "--vcs", "git", "--no-distill", "--parallel", "2", "--tick-boxes",
                       plan=then)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(fake_claude.task_runs()) == 4, again.stdout
    assert last.read_text().count("- [x]") == 4


def test_ctrl_c_after_you_renamed_the_plan_says_to_resume_with_the_new_name(
        work: Path, fake_claude: FakeClaude) -> None:
    """`mv tasks.md plan.md` while task one's agent works, then Ctrl+C before the run looked
    at the plan again: the run said "Resume with: agent-loop tasks.md", and following that
    advice gave "error: task file .../tasks.md does not exist". The advice names plan.md."""
    # Its second run finds no tasks.md to move, and does not wait.
    three_committed(work, f"  FAKE: bash mv {work / 'tasks.md'} {work / 'plan.md'} && sleep 60")
    run = subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                            "--no-distill"], cwd=work, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                           start_new_session=True, env={**os.environ, "NO_COLOR": "1"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.poll() is None and \
            not (work / "plan.md").exists():
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGINT)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, out + err
    assert "Resume with: agent-loop plan.md --vcs git --no-distill" in err, out + err
    assert "agent-loop tasks.md" not in out + err, out + err
    again = agent_loop(work, "--vcs", "git", "--no-distill", plan="plan.md")
    assert again.returncode == 0, again.stdout + again.stderr
    assert not (work / "tasks.md").exists()
    for name in ("one", "two", "three"):
        assert git(work, "show", f"HEAD:{name}.txt") == f"{name}\n"


def test_an_agent_that_moves_your_branch_back_stops_the_run_and_lands_nothing_on_it(
        work: Path, fake_claude: FakeClaude) -> None:
    """Task one's agent runs `git -C <your checkout> reset --hard HEAD~1`: your last commit
    left your branch and your uncommitted edit was lost, and the run only said a file of
    your checkout changed, then landed the tasks on the rewound branch. Now it stops, in one
    line that names the branch, both commits and how to get yours back, landing nothing."""
    init_repo(work, "git")
    three_committed(work, f"  FAKE: bash git -C {work} reset -q --hard HEAD~1")
    (work / "mine.txt").write_text("my commit\n")
    git(work, "add", "mine.txt")
    git(work, "commit", "-qm", "my work")
    yours = git(work, "rev-parse", "HEAD").strip()
    (work / "README.md").write_text("my uncommitted edit\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "Traceback" not in out, out
    back = git(work, "rev-parse", "HEAD").strip()
    # Known for the agent's by the mark its reset wrote in your branch's reflog.
    assert f"an agent ran git in your checkout {work}, not in its lane, and moved your branch " \
           f"{git(work, 'branch', '--show-current').strip()} back from {yours[:12]} to " \
           f"{back[:12]}" in out, out
    assert f"reset --keep {yours[:12]}" in out and "README.md (back as committed) in" in out, out
    assert not (work / "one.txt").exists() and "agent-loop:" not in git(work, "log", "--format=%s")


def test_your_revert_that_deletes_a_file_the_next_task_changes_is_put_to_the_agent_as_it_is(
        work: Path, fake_claude: FakeClaude) -> None:
    """You revert task one (which made api.py) while task two's agent appends to api.py: the
    landing meets a modify/delete conflict, which git marks with no <<<<<<< at all. The
    prompt told the agent git had marked each conflict in api.py, so one that found no marker
    did nothing, and the task landed with api.py back, your revert undone without a word.
    The agent is now told what the conflict is and that it decides: keep the file or not."""
    init_repo(work, "git")
    # Your revert, made in your checkout as task two's agent works (not with its git mark).
    revert = (f"cd {work} && env -u GIT_REFLOG_ACTION git revert --no-edit "
              "HEAD >/dev/null")
    committed_plan(work,
        "## A\n"
        "- [ ] one\n"
        "  FAKE: write api.py v1\n"
        "- [ ] two\n"
        f"  FAKE: bash {revert}\n"
        "  FAKE: bash echo v2 >> api.py\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    said = done.stdout + done.stderr
    assert "conflicts with the main line in api.py" in said, said
    prompt = next(p for p in fake_claude.task_prompts() if "does not fit the main line" in p)
    line = next(p for p in prompt.splitlines() if p.startswith("- api.py"))
    assert "deleted" in line and "no marker" in line, prompt


def test_a_file_name_with_a_newline_is_said_on_one_line_as_git_quotes_it(
        work: Path, fake_claude: FakeClaude) -> None:
    """Your uncommitted edit to a file named "a<newline>b.txt", which task one changes too. The
    start line ("your 1 uncommitted file(s) (e.g. a") and the held lines broke in two at the
    name, the rest of the line read as a line of its own, and `--status`'s `error:` with them.
    Names are said as git says them (`"a\\nb.txt"`), each line whole."""
    init_repo(work, "git")
    odd = "a\nb.txt"
    (work / odd).write_text("base\n")
    git(work, "add", "--all")
    git(work, "commit", "-q", "-m", "odd name")
    committed_plan(work, "## A\n- [ ] one\n"
                         "  FAKE: bash printf 'agent\\n' > \"$(printf 'a\\nb.txt')\"\n")
    (work / odd).write_text("mine\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--lane-wait", "1s")
    said = done.stdout + done.stderr
    assert done.returncode == 4, said
    assert '(e.g. "a\\nb.txt") are left alone' in said, said
    held = [line for line in said.splitlines() if "held" in line and "overlap" in line]
    assert held and all('your uncommitted edits to "a\\nb.txt" in ' in line for line in held), said
    assert not any(line.startswith("b.txt") for line in said.splitlines()), said
    error = tasks_of(work)[0]["error"]
    assert '"a\\nb.txt"' in error and "\n" not in error, error
    assert (work / odd).read_text() == "mine\n"
