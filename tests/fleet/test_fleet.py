"""A CI matrix played on one machine: a bare repository as the remote, one clone per group
running `--group N --push origin` as separate processes at once, then a fresh clone running
`--integrate --from origin` (agentloop.fleet.job, agentloop.fleet.integrate), in git and in jj."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentloop.fleet.job import open_job
from agentloop.options.record import RunOptions
from agentloop.plan import parse
from agentloop.state.project import open_project
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, jj

PLAN = """\
# Fleet

## Alpha
- alpha one
  FAKE: write a1.txt a1
- alpha two
  FAKE: sleep 3
  FAKE: write a2.txt a2

## Beta
- beta one
  FAKE: write b1.txt b1
- beta two
  FAKE: write b2.txt b2
"""

CONFLICT_PLAN = """\
# Clash

## Left
- left edit
  FAKE: write shared.txt left

## Right
- right edit
  FAKE: write shared.txt right
- right follow-up
  FAKE: write after.txt after
"""


def remote(tmp_path: Path, plan: str) -> Path:
    """origin.git, a bare repository whose main holds a README, shared.txt and the plan."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "README.md").write_text("hello\n")
    (seed / "shared.txt").write_text("base\n")
    (seed / "tasks.md").write_text(plan)
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "initial")
    git(seed, "push", "-q", str(origin), "main")
    return origin


def clone(tmp_path: Path, origin: Path, name: str, kind: str) -> Path:
    """A clone of origin, as a CI job checks one out (with full history); jj colocated."""
    dest = tmp_path / name
    git(tmp_path, "clone", "-q", str(origin), str(dest))
    if kind == "jj":
        jj(dest, "git", "init", "--colocate")
    return dest


def start(work: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentloop", "tasks.md", *args], cwd=work,
                            env={**os.environ, "NO_COLOR": "1"}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def finish(child: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = child.communicate(timeout=120)
    return child.returncode, out


def job(work: Path, group: str, kind: str) -> subprocess.Popen[str]:
    return start(work, "--group", group, "--push", "origin", "--vcs", kind, "--no-distill")


def integrate(work: Path, *more: str) -> tuple[int, str]:
    return finish(start(work, "--integrate", "--from", "origin", "--no-distill", *more))


def main_subjects(work: Path) -> list[str]:
    out = git(work, "log", "--reverse", "--format=%s", "refs/heads/main")
    return [s for s in out.splitlines() if s.startswith("agent-loop:")]


def developer_prompts(fake: FakeClaude, text: str) -> int:
    return sum(1 for prompt in fake.task_prompts() if text in prompt)


def wait_for(origin: Path, ref: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if git(origin, "for-each-ref", ref).strip():
            return
        time.sleep(0.05)
    raise AssertionError(f"{ref} never reached the remote")


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_matrix_of_group_jobs_then_one_integration(tmp_path: Path, fake_claude: FakeClaude,
                                                     kind: str) -> None:
    origin = remote(tmp_path, PLAN)
    alpha = job(clone(tmp_path, origin, "alpha", kind), "1", kind)
    beta = job(clone(tmp_path, origin, "beta", kind), "beta", kind)
    # Alpha's job dies in its second task, after its first was pushed.
    wait_for(origin, "refs/heads/agent-loop/state/tasks/1-alpha")
    os.killpg(alpha.pid, signal.SIGKILL)
    alpha.wait()
    code, out = finish(beta)
    assert code == 0, out
    branches = git(origin, "for-each-ref", "--format=%(refname:short)").split()
    assert {"agent-loop/tasks/1-alpha", "agent-loop/tasks/2-beta",
            "agent-loop/state/tasks/1-alpha", "agent-loop/state/tasks/2-beta"} <= set(branches)
    # Re-run, as CI re-runs a job: in a fresh clone, it resumes from what was pushed.
    code, out = finish(job(clone(tmp_path, origin, "alpha-again", kind), "1", kind))
    assert code == 0, out
    assert "resumed group 1 (Alpha)" in out
    assert developer_prompts(fake_claude, "alpha one") == 1
    # Its session stayed with the dead job: the next task starts a fresh one; beta's, on one
    # machine, resumed its first task's session.
    def resumed(text: str) -> list[bool]:
        return ["--resume" in c["argv"] for c in fake_claude.task_runs() if text in c["stdin"]]
    assert resumed("alpha two")[-1] is False and resumed("beta two") == [True]
    assert git(origin, "log", "--format=%s", "agent-loop/tasks/1-alpha").count("alpha one") == 1

    # A job re-run after its group finished pushes what it has and runs nothing.
    calls = len(fake_claude.calls())
    code, out = finish(job(clone(tmp_path, origin, "beta-again", kind), "2", kind))
    assert code == 0, out
    assert "group 2 (Beta) has nothing left to run" in out
    assert len(fake_claude.calls()) == calls

    here = clone(tmp_path, origin, "integration", kind)
    code, out = integrate(here)
    assert code == 0, out
    assert main_subjects(here) == [
        "agent-loop: Alpha / alpha one", "agent-loop: Alpha / alpha two",
        "agent-loop: Beta / beta one", "agent-loop: Beta / beta two"]
    for name in ("a1", "a2", "b1", "b2"):
        assert git(here, "show", f"main:{name}.txt") == f"{name}\n"
    # Each commit names its plan and task in trailers; on the main line, its job's commit too.
    job_tip = git(origin, "rev-parse", "agent-loop/tasks/2-beta").strip()
    assert git(origin, "log", "-1", "--format=%(trailers)", job_tip) == \
        "Agent-Loop-Plan: tasks\nAgent-Loop-Task: 4\n\n"
    assert git(here, "log", "-1", "--format=%(trailers)", "main") == \
        f"Agent-Loop-Plan: tasks\nAgent-Loop-Task: 4\nAgent-Loop-Source: {job_tip}\n\n"
    status = json.loads(finish(start(here, "--status", "--json"))[1])
    assert [t["status"] for t in status["tasks"]] == ["completed"] * 4
    assert all(t["cost_usd"] > 0 for t in status["tasks"])
    # Four runs at $0.01 each: the killed one never reported a cost.
    assert "total cost of the groups' jobs and this integration: $0.0400" in out
    # Twice changes nothing; nor does a clone of the result (a later stage integrates again).
    tip = git(here, "rev-parse", "main")
    code, again = integrate(here)
    assert code == 0, again
    assert git(here, "rev-parse", "main") == tip
    assert "0 task(s) landed, 2 already there" in again
    assert git(origin, "for-each-ref", "refs/heads/main", "--format=%(objectname)").strip() \
        != tip.strip()   # it pushed nothing


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_conflict_the_agent_does_not_resolve_stays_on_its_branch(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch,
        kind: str) -> None:
    origin = remote(tmp_path, CONFLICT_PLAN)
    left = job(clone(tmp_path, origin, "left", kind), "1", kind)
    right = job(clone(tmp_path, origin, "right", kind), "2", kind)
    assert finish(left)[0] == 0 and finish(right)[0] == 0
    # The fresh session that gets the conflict leaves a marker in the file: not resolved.
    first = ("Another session did the task below on another machine, in group Right of this "
             "plan; it is done, and its change must now join the main line, where other groups' "
             "work landed first.")
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({first: ["FAKE: write shared.txt <<<<<<< still"]}))
    monkeypatch.setenv("FAKE_CLAUDE_DIRECTIVES", str(directives))
    here = clone(tmp_path, origin, "integration", kind)
    code, out = integrate(here)
    assert code == 4, out
    assert git(here, "show", "main:shared.txt") == "left\n"
    assert git(here, "show", "agent-loop/2-right:shared.txt") == "right\n"
    assert "git log -p main..agent-loop/2-right" in out
    assert "--integrate --from origin` again" in out
    if kind == "git":  # pasted as printed in a subfolder, the rebase runs in the lane, stops
        rebase = re.search(r"`(cd [^`]+ && git rebase main)`", out)
        assert rebase is not None, out
        (here / "docs").mkdir()
        pasted = subprocess.run(["bash", "-c", rebase.group(1)], cwd=here / "docs",
                                capture_output=True, text=True)
        assert "CONFLICT" in pasted.stdout, (rebase.group(1), pasted.stdout + pasted.stderr)
        git(here / ".agent-loop" / "lanes" / "2-right", "rebase", "--abort")
    status = json.loads(finish(start(here, "--status", "--json"))[1])
    assert [t["status"] for t in status["tasks"]] == ["completed", "conflicted", "pending"]
    assert status["tasks"][2]["cost_usd"] > 0   # done by its job: its cost is counted
    assert main_subjects(here) == ["agent-loop: Left / left edit"]
    # Resolved by hand on that branch as the message says, the same command lands it and the
    # rest of the group.
    lane = here / ".agent-loop" / "lanes" / "2-right"
    (lane / "shared.txt").write_text("left and right\n")
    git(lane, "commit", "-qam", "by hand")
    git(lane, "rebase", "-q", "-X", "theirs", "main")
    code, out = integrate(here)
    assert code == 0, out
    assert main_subjects(here) == ["agent-loop: Left / left edit",
                                   "agent-loop: Right / right edit",
                                   "agent-loop: Right / right follow-up"]
    assert git(here, "show", "main:shared.txt") == "left and right\n"
    assert git(here, "show", "main:after.txt") == "after\n"
    status = json.loads(finish(start(here, "--status", "--json"))[1])
    assert [t["status"] for t in status["tasks"]] == ["completed"] * 3
    assert "agent-loop/2-right" not in git(here, "branch", "--list")


STAGED_PLAN = """\
## Backend
- the api
  FAKE: write api.txt api

## Docs
- the guide
  FAKE: write guide.txt guide

## Frontend
Depends on: Backend

- the page
  FAKE: write page.txt page
"""


def test_dry_run_json_gives_the_stages_a_matrix_needs(tmp_path: Path) -> None:
    origin = remote(tmp_path, STAGED_PLAN)
    here = clone(tmp_path, origin, "plan", "git")
    code, out = finish(start(here, "--dry-run", "--json"))
    assert code == 0, out
    assert json.loads(out)["stages"] == [[1, 2], [3]]


def test_a_shallow_checkout_is_named_before_anything_runs(tmp_path: Path,
                                                          fake_claude: FakeClaude) -> None:
    origin = remote(tmp_path, PLAN)
    seed = tmp_path / "seed"
    (seed / "more.txt").write_text("more\n")
    git(seed, "add", "more.txt")
    git(seed, "commit", "-qm", "more")
    git(seed, "push", "-q", str(origin), "main")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    code, out = finish(job(shallow, "1", "git"))
    assert code == 1, out
    assert "is a shallow clone" in out and "fetch-depth: 0" in out
    assert fake_claude.calls() == []
    code, out = integrate(shallow)
    assert code == 1 and "is a shallow clone" in out, out


@pytest.mark.parametrize("args, message", [
    (("--push", "origin"), "--push goes with --group"),
    (("--integrate",), "--integrate goes with --from"),
    (("--from", "origin"), "--from goes with --integrate"),
    (("--integrate", "--from", "origin", "--group", "1"), "--integrate brings in every"),
    (("--integrate", "--from", "origin", "--dry-run"), "cannot be combined"),
])
def test_fleet_options_that_do_not_go_together(tmp_path: Path, args: tuple[str, ...],
                                               message: str) -> None:
    (tmp_path / "tasks.md").write_text(PLAN)
    code, out = finish(start(tmp_path, *args))
    assert code == 2 and message in out, out


def test_a_settings_files_parallel_does_not_stop_a_job(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    # A project that runs `parallel = 4` locally keeps it in agent-loop.toml; its CI jobs run
    # one group each, and the setting must not turn them away.
    origin = remote(tmp_path, STAGED_PLAN)
    work = clone(tmp_path, origin, "job", "git")
    (work / ".git" / "info" / "exclude").write_text("agent-loop.toml\n")
    (work / "agent-loop.toml").write_text("parallel = 4\n")
    code, out = finish(job(work, "2", "git"))
    assert code == 0, out
    assert git(work, "ls-remote", "origin").count("agent-loop/") >= 2


def test_a_group_whose_stage_ran_without_it_fails_the_integration(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Stage 1 is Backend and Docs; only Backend's job ran. The integration listed Docs "not run
    # yet" and exited 0: a CI job said success though a group of its stage never ran. Frontend
    # (stage 2) comes after this integration: not run yet, as it should be.
    origin = remote(tmp_path, STAGED_PLAN)
    assert finish(job(clone(tmp_path, origin, "stage1-1", "git"), "1", "git"))[0] == 0
    work = clone(tmp_path, origin, "integration", "git")
    code, out = integrate(work)
    assert code == 4, out
    assert "group 2 (Docs): never ran (no agent-loop/tasks/2-docs on the remote, though its " \
           "stage's jobs ran): run its job (`agent-loop tasks.md --group 2 --push origin`)" \
        in out, out
    assert "group 3 (Frontend): not run yet (no agent-loop/tasks/3-frontend on the remote)" \
        in out, out
    assert "group 1 (Backend): 1 task(s) landed" in out, out
    code, out = integrate(work, "--json")
    assert code == 4 and '"outcome": "never ran"' in out, out


def test_a_later_stage_starts_from_the_earlier_ones_integration(tmp_path: Path,
                                                                fake_claude: FakeClaude) -> None:
    origin = remote(tmp_path, STAGED_PLAN)
    first = [job(clone(tmp_path, origin, f"stage1-{g}", "git"), g, "git") for g in ("1", "2")]
    assert [finish(j)[0] for j in first] == [0, 0]
    one = clone(tmp_path, origin, "integration1", "git")
    code, out = integrate(one)
    assert code == 0, out
    assert "group 3 (Frontend): not run yet" in out
    git(one, "push", "-q", "origin", "HEAD:refs/heads/agent-loop-integration/tasks")
    # Stage 2's job starts from the integration branch: it sees stage 1's work.
    later = tmp_path / "stage2-3"
    git(tmp_path, "clone", "-q", "-b", "agent-loop-integration/tasks", str(origin), str(later))
    code, out = finish(job(later, "3", "git"))
    assert code == 0, out
    assert git(origin, "show", "agent-loop/tasks/3-frontend:api.txt") == "api\n"
    # The next integration, in a fresh clone of the integration branch, lands only stage 2.
    two = tmp_path / "integration2"
    git(tmp_path, "clone", "-q", "-b", "agent-loop-integration/tasks", str(origin), str(two))
    code, out = integrate(two, "--budget", "0.02")
    assert code == 0, out
    assert "total cost of the groups' jobs and this integration: $0.0300 of the plan's budget " \
        "$0.0200 (over it)" in out
    assert "group 1 (Backend): 0 task(s) landed, 1 already there" in out
    assert "group 3 (Frontend): 1 task(s) landed" in out
    subjects = git(two, "log", "--reverse", "--format=%s").splitlines()
    assert [s for s in subjects if s.startswith("agent-loop:")] == [
        "agent-loop: Backend / the api", "agent-loop: Docs / the guide",
        "agent-loop: Frontend / the page"]
    status = json.loads(finish(start(two, "--status", "--json"))[1])
    assert [t["status"] for t in status["tasks"]] == ["completed"] * 3


SQUASHED_PLAN = """\
## Backend
- the api
  FAKE: write api.txt api
- the schema
  FAKE: write schema.txt schema

## Frontend
Depends on: Backend

- the page
  FAKE: write page.txt page
"""


def test_a_squash_merged_group_counts_for_the_group_that_waits_for_it(tmp_path: Path) -> None:
    # Backend's job commits land on main as one commit (GitHub's "Squash and merge"): every
    # commit's message, with its trailers, one after the other. Frontend's job, re-run with the
    # state it pushed before Backend landed, must count both of Backend's tasks as landed.
    origin = remote(tmp_path, SQUASHED_PLAN)
    merger = clone(tmp_path, origin, "merger", "git")
    (merger / "api.txt").write_text("api\n")
    (merger / "schema.txt").write_text("schema\n")
    git(merger, "add", "-A")
    git(merger, "commit", "-qm", "Backend (#7)\n\n"
        "* agent-loop: Backend / the api\n\nAgent-Loop-Plan: tasks\nAgent-Loop-Task: 1\n\n"
        "* agent-loop: Backend / the schema\n\nAgent-Loop-Plan: tasks\nAgent-Loop-Task: 2\n")
    git(merger, "push", "-q", "origin", "main")
    work = clone(tmp_path, origin, "frontend", "git")
    project = open_project(work / "tasks.md", work)
    plan = parse.load(project.task_file)
    job = open_job(project, plan, RunOptions(group="2", push="origin"))
    assert job.landed == {1, 2}
    # A revert of the squash commit takes both back.
    git(work, "revert", "--no-edit", "HEAD")
    assert open_job(project, plan, RunOptions(group="2", push="origin")).landed == set()


def test_a_conflict_goes_to_a_fresh_session_given_the_task_and_both_diffs(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> None:
    origin = remote(tmp_path, CONFLICT_PLAN)
    jobs = [job(clone(tmp_path, origin, name, "git"), g, "git")
            for name, g in (("left", "1"), ("right", "2"))]
    assert [finish(j)[0] for j in jobs] == [0, 0]
    first = ("Another session did the task below on another machine, in group Right of this "
             "plan; it is done, and its change must now join the main line, where other groups' "
             "work landed first.")
    directives = tmp_path / "directives.json"
    directives.write_text(json.dumps({first: ["FAKE: write shared.txt left right"]}))
    monkeypatch.setenv("FAKE_CLAUDE_DIRECTIVES", str(directives))
    here = clone(tmp_path, origin, "integration", "git")
    code, out = integrate(here)
    assert code == 0, out
    assert git(here, "show", "main:shared.txt") == "left right\n"
    assert main_subjects(here) == ["agent-loop: Left / left edit",
                                   "agent-loop: Right / right edit",
                                   "agent-loop: Right / right follow-up"]
    prompt = next(c for c in fake_claude.calls() if c["stdin"].startswith("Another session"))
    assert "--resume" not in prompt["argv"]
    for part in ("right edit", "+right", "+left", "- task 1 (Left): left edit"):
        assert part in prompt["stdin"]
    # The integration's own session costs too: its total is the one --status gives.
    status = finish(start(here, "--status"))[1]
    total = re.search(r"total: (\$[0-9.]+)", status)
    assert total is not None, status
    assert f"total cost of the groups' jobs and this integration: {total[1]}" in out
    assert total[1] == "$0.0400"   # three tasks and the conflict's session, at $0.01 each


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_job_stopped_by_a_signal_pushes_its_state_and_a_rerun_goes_on(
        tmp_path: Path, fake_claude: FakeClaude, kind: str) -> None:
    origin = remote(tmp_path, PLAN)
    alpha = job(clone(tmp_path, origin, "alpha", kind), "1", kind)
    wait_for(origin, "refs/heads/agent-loop/state/tasks/1-alpha")
    deadline = time.monotonic() + 60
    while "alpha two" not in (fake_claude.log.read_text() if fake_claude.log.exists() else ""):
        assert time.monotonic() < deadline, "the second task's agent never started"
        time.sleep(0.05)
    os.killpg(alpha.pid, signal.SIGTERM)
    code, out = finish(alpha)
    assert code == 130, out
    pushed = json.loads(git(origin, "show", "agent-loop/state/tasks/1-alpha:state.json"))
    assert [t["status"] for t in pushed["tasks"][:2]] == ["completed", "interrupted"]
    code, out = finish(job(clone(tmp_path, origin, "alpha-again", kind), "1", kind))
    assert code == 0, out
    assert developer_prompts(fake_claude, "alpha one") == 1
    pushed = json.loads(git(origin, "show", "agent-loop/state/tasks/1-alpha:state.json"))
    assert [t["status"] for t in pushed["tasks"][:2]] == ["completed", "completed"]


def test_your_own_edits_on_a_tasks_file_stop_the_integration_and_it_goes_on_after(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    origin = remote(tmp_path, CONFLICT_PLAN)
    assert finish(job(clone(tmp_path, origin, "left", "git"), "1", "git"))[0] == 0
    here = clone(tmp_path, origin, "integration", "git")
    (here / "shared.txt").write_text("mine, not committed\n")
    code, out = integrate(here)
    assert code == 1, out
    assert "your uncommitted edits to shared.txt" in out
    assert main_subjects(here) == []
    git(here, "checkout", "shared.txt")
    code, out = integrate(here)
    assert code == 4 and "group 2 (Right): never ran" in out, out  # only Left's job ran
    assert main_subjects(here) == ["agent-loop: Left / left edit"]


def test_a_group_its_job_did_not_finish_is_left_out_and_named(tmp_path: Path,
                                                              fake_claude: FakeClaude) -> None:
    origin = remote(tmp_path, CONFLICT_PLAN.replace("FAKE: write after.txt after",
                                                    "FAKE: fail 9"))
    runs = [finish(start(clone(tmp_path, origin, f"g{g}", "git"), "--group", g, "--push",
                         "origin", "--vcs", "git", "--no-distill", "--max-attempts", "1"))
            for g in ("1", "2")]
    assert [code for code, _ in runs] == [0, 4], runs
    here = clone(tmp_path, origin, "integration", "git")
    code, out = integrate(here)
    assert code == 4, out
    assert "group 2 (Right): unfinished: 1 of 2 tasks not done: re-run its job" in out
    assert main_subjects(here) == ["agent-loop: Left / left edit"]
    status = json.loads(finish(start(here, "--status", "--json"))[1])
    assert [t["status"] for t in status["tasks"]] == ["completed", "pending", "failed"]
