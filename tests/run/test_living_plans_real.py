"""Plans that change while they are worked on, end to end: the real Claude Code CLI against the
fake Messages API, real git, agent-loop started as a user starts it."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.support.claude_cli import agent_loop_env
from tests.support.fakeapi import FakeApi, HttpError, Text, last_user_text
from tests.support.runner import agent_loop

PLAN = """\
# Greeter

Context: a tiny greeting project.

## Files
- [ ] WRITE a.txt: A
- [ ] WRITE b.txt: B
"""


def state(work: Path, folder: Path | None = None) -> dict:
    return orjson.loads(((folder or work / ".agent-loop") / "state.json").read_bytes())


def git(work: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", *args], cwd=work, capture_output=True, text=True,
                          check=True).stdout


def test_a_living_plan_with_the_real_cli(tmp_path: Path, fake_api: FakeApi,
                                         claude_bin: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    (work / "tasks.md").write_text(PLAN)
    env = agent_loop_env(tmp_path, fake_api, claude_bin)
    run = ["--vcs", "git", "--no-distill"]
    done = agent_loop(work, *run, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    first = state(work)["tasks"]
    assert [t["status"] for t in first] == ["completed", "completed"]
    # The fresh session got the plan's context; the resumed one did not need it again.
    prompts = [last_user_text(r.body) for r in fake_api.requests_for_messages()]
    assert "Context: a tiny greeting project." in prompts[0]

    # A task is appended and the agent ticked task 1 in the plan: only the new task runs. Its
    # group's session began in the checkout (the repository had no commit for a lane then); the
    # real CLI's earlier turns name the checkout's files by their full paths, so the task starts
    # a fresh session in its lane, and its file lands (it went to the checkout before).
    (work / "tasks.md").write_text(PLAN.replace("- [ ] WRITE a.txt", "- [x] WRITE a.txt")
                                   + "- [ ] WRITE c.txt: C\n")
    before = len(fake_api.requests_for_messages())
    done = agent_loop(work, *run, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 task added, 0 edited, 0 removed" in done.stdout
    tasks = state(work)["tasks"]
    assert [t["status"] for t in tasks] == ["completed", "completed", "completed"]
    assert "task 3 starts a fresh session: its group's session" in done.stdout, done.stdout
    assert tasks[2]["session_id"] != first[1]["session_id"]
    assert "c.txt" in git(work, "show", "--name-only", "--format=", "HEAD").split()
    assert not git(work, "status", "--short", "--", "c.txt")
    assert tasks[0]["change_id"] == first[0]["change_id"]    # kept, even though now ticked
    new = fake_api.requests_for_messages()[before:]
    assert {last_user_text(r.body).splitlines()[-1] for r in new} == {"WRITE c.txt: C"}

    # A second plan in the same repository; the first plan's state is untouched, and neither
    # plan's file is ever part of a task's commit (nor makes the tree "dirty" for the other).
    kept = (work / ".agent-loop" / "state.json").read_bytes()
    (work / "more.md").write_text("- [ ] WRITE d.txt: D\n")
    done = agent_loop(work, "--vcs", "git", "--no-distill", plan="more.md", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (work / ".agent-loop" / "state.json").read_bytes() == kept
    (folder,) = (work / ".agent-loop" / "plans").iterdir()
    assert state(work, folder)["tasks"][0]["status"] == "completed"
    assert "tasks.md" not in git(work, "log", "--format=", "--name-only")

    # --task 2 --again runs task 2 once more, in a new commit.
    commits = len(git(work, "log", "--format=%H").split())
    done = agent_loop(work, *run, "--task", "2", "--again", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(git(work, "log", "--format=%H").split()) == commits  # b.txt unchanged: empty
    again = state(work)["tasks"][1]
    assert again["status"] == "completed" and len(again["history"]) == 2

    # A run that ends with a failed task exits non-zero (4).
    with (work / "tasks.md").open("a") as out:
        out.write("- [ ] SAY this one fails\n")
    fake_api.script(*[HttpError(400, "invalid_request_error", "odd request (fake)")] * 6,
                    model="opus")
    fake_api.script(Text('{"retry": false, "reason": "not worth it", "hint": ""}'),
                    model="haiku")
    done = agent_loop(work, *run, env=env)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "not completed: task(s) 4" in done.stdout
    assert state(work)["tasks"][3]["status"] == "failed"
