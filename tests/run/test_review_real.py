"""The reviewer with the REAL Claude Code CLI against the fake Messages API: the diff reaches the
reviewer's request, feedback goes back to the developer's session in the same change, a reviewer
that says "not APPROVED" is not approving, rounds run out, and the reviewer cannot edit files.

The developer runs on opus (its replies come from the task's WRITE/SAY lines); the reviewer on
sonnet (its replies are scripted with `model="sonnet"`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import orjson

from agentloop.agents import AgentRun
from agentloop.agents.claude import READ_ONLY_FLAGS, ClaudeAgent
from tests.support.claude_cli import agent_loop_env, claude_env, oauth_login, run_claude
from tests.support.fakeapi import (
    FakeApi,
    Request,
    Text,
    ToolUse,
    all_text,
    last_user_text,
    overloaded,
    usage_limit,
)
from tests.support.repos import git_commits, jj_changes
from tests.support.runner import agent_loop

REVIEWER_MODEL = "claude-sonnet-5-5"


def project(tmp_path: Path, api: FakeApi, claude_bin: Path, tasks: str,
            vcs: str = "git") -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    if vcs == "git":
        for argv in (["init", "-q"], ["add", "README.md"], ["commit", "-qm", "initial"]):
            subprocess.run(["git", *argv], cwd=work, check=True)
    (work / "tasks.md").write_text(tasks)
    env = agent_loop_env(tmp_path, api, claude_bin)
    env["NO_COLOR"] = "1"
    return work, env


def reviews(api: FakeApi) -> list[Request]:
    """The reviewer's first request of each round (later ones of a round follow a tool call)."""
    return [r for r in api.requests_for_messages()
            if r.model == REVIEWER_MODEL and len(r.body["messages"]) <= 2]


def tasks(work: Path) -> list[dict]:
    return orjson.loads((work / ".agent-loop" / "state.json").read_bytes())["tasks"]


def test_feedback_then_approval_two_developer_runs_one_session_one_commit(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    work, env = project(tmp_path, fake_api, claude_bin,
                        "## Greeter\n- WRITE hello.py: print('hello')\n")
    fake_api.script(
        # The reviewer tries to fix it itself first: Write is not even on offer.
        ToolUse("Write", {"file_path": str(work / "reviewer.txt"), "content": "mine\n"}),
        Text("The script works, but nothing tests it.\n"
             "FEEDBACK: add a test.\nWRITE test_hello.py: import hello"),
        Text("The test is there now.\nAPPROVED"), model="sonnet")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--review", env=env)
    assert done.returncode == 0, done.stderr

    first, second = reviews(fake_api)
    seen = all_text(first.body)
    assert "diff --git a/hello.py b/hello.py" in seen and "+print('hello')" in seen
    assert "<task>\nWRITE hello.py: print('hello')\n</task>" in seen
    assert "<group>Greeter</group>" in seen and "review round 1 of at most 3" in seen
    assert {t["name"] for t in first.body["tools"]} <= {"Read", "Grep", "Glob",
                                                        "DeferredToolPlaceholder"}
    assert "+import hello" in all_text(second.body) and "+print('hello')" in all_text(second.body)
    assert "<previous-feedback>\nadd a test." in all_text(second.body)
    assert not (work / "reviewer.txt").exists()

    developer = [r for r in fake_api.requests_for_messages() if r.model == "claude-opus-5-5"]
    fix = [r for r in developer if "did not approve it yet" in last_user_text(r.body)]
    assert fix, [last_user_text(r.body)[:80] for r in developer]
    # The fix ran in the developer's session: its request carries the first run's exchange.
    assert "WRITE hello.py: print('hello')" in orjson.dumps(fix[0].body["messages"]).decode()

    task = tasks(work)[0]
    assert task["status"] == "completed" and task["attempts"] == 1
    history = [(a["role"], a["round"], a["outcome"], a["verdict"]) for a in task["history"]]
    assert history == [("developer", 0, "feedback", None), ("reviewer", 1, "feedback", "feedback"),
                       ("developer", 1, "completed", None),
                       ("reviewer", 2, "approved", "approved")]
    dev = [a for a in task["history"] if a["role"] == "developer"]
    rev = [a for a in task["history"] if a["role"] == "reviewer"]
    assert dev[0]["session_id"] == dev[1]["session_id"] == task["session_id"]
    assert dev[1]["resumed"] and rev[0]["session_id"] != rev[1]["session_id"]
    assert rev[0]["session_id"] not in (dev[0]["session_id"], None)
    assert all(a["cost_usd"] > 0 for a in task["history"])
    assert task["cost_usd"] == round(sum(a["cost_usd"] for a in task["history"]), 6)
    assert [Path(a["log"]).name for a in task["history"]] == [
        "001-greeter--write-hello-py-print-hello.log",
        "001-greeter--write-hello-py-print-hello-review1.log",
        "001-greeter--write-hello-py-print-hello-fix1.log",
        "001-greeter--write-hello-py-print-hello-review2.log"]
    assert "-- prompt --" in (work / rev[0]["log"]).read_text()

    commits = git_commits(work)
    assert [(s, f) for _, s, f in commits] == [
        ("agent-loop: Greeter / WRITE hello.py: print('hello')", ["hello.py", "test_hello.py"])]
    for line in ("  review 1/3: reviewer checking…", "  review 1/3: feedback: add a test.",
                 "  review 2/3: reviewer checking…", "  review 2/3: approved ("):
        assert line in done.stdout, line


def test_jj_keeps_both_rounds_in_one_change(tmp_path: Path, fake_api: FakeApi, claude_bin: Path,
                                            jj_bin: str) -> None:
    work, env = project(tmp_path, fake_api, claude_bin, "## G\n- WRITE a.txt: one\n", vcs="jj")
    fake_api.script(Text("FEEDBACK: b.txt is missing\nWRITE b.txt: two"), Text("APPROVED"),
                    model="sonnet")
    done = agent_loop(work, "--vcs", "jj", "--no-distill", "--review", env=env)
    assert done.returncode == 0, done.stderr
    changes = jj_changes(work)
    assert [(d, sorted(f)) for _, d, f in changes] == [("agent-loop: G / WRITE a.txt: one",
                                                        ["a.txt", "b.txt"])]
    assert tasks(work)[0]["change_id"] == changes[0][0]
    assert "+one" in all_text(reviews(fake_api)[0].body)
    assert "+two" in all_text(reviews(fake_api)[1].body)


def test_not_approved_yet_is_feedback(tmp_path: Path, fake_api: FakeApi,
                                      claude_bin: Path) -> None:
    work, env = project(tmp_path, fake_api, claude_bin, "- WRITE a.txt: one\n")
    fake_api.script(Text("This is not APPROVED yet: a.txt should say two."),
                    Text("APPROVED"), model="sonnet")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--review", env=env)
    assert done.returncode == 0, done.stderr
    task = tasks(work)[0]
    assert [a["verdict"] for a in task["history"] if a["role"] == "reviewer"] == [
        "feedback", "approved"]
    developer = [r for r in fake_api.requests_for_messages() if r.model == "claude-opus-5-5"]
    assert ["This is not APPROVED yet: a.txt should say two." in last_user_text(r.body)
            for r in developer] == [False, False, True]  # the run with its Write, then the fix
    assert ": feedback: This is not APPROVED yet: a.txt should say two. ($" in done.stdout


def test_three_rounds_of_feedback_leave_the_task_unapproved_and_the_run_goes_on(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    work, env = project(tmp_path, fake_api, claude_bin,
                        "## G\n- WRITE a.txt: one\n- WRITE c.txt: three\n")
    fake_api.script(Text("FEEDBACK: not yet, round one"), Text("FEEDBACK: not yet, round two"),
                    Text("FEEDBACK: still not right\nthe name is wrong"), Text("APPROVED"),
                    model="sonnet")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--review", env=env)
    assert done.returncode == 4, done.stderr  # unapproved
    first, second = tasks(work)
    assert first["status"] == "unapproved" and second["status"] == "completed"
    assert first["error"] == "not approved after 3 review rounds"
    assert first["feedback"] == "still not right\nthe name is wrong"
    assert len(reviews(fake_api)) == 4
    assert [a["round"] for a in first["history"] if a["role"] == "developer"] == [0, 1, 2]
    # Its change is kept, and says it was not approved.
    commits = git_commits(work)
    assert [(s, f) for _, s, f in commits] == [("agent-loop: G / WRITE a.txt: one", ["a.txt"]),
                                               ("agent-loop: G / WRITE c.txt: three", ["c.txt"])]
    message = subprocess.run(["git", "log", "-1", "--format=%B", commits[0][0]], cwd=work,
                             capture_output=True, text=True, check=True).stdout
    assert "unapproved: not approved after 3 review rounds" in message
    assert first["change_id"] == commits[0][0]
    assert "  task 1 unapproved: not approved after 3 review rounds; its change" in done.stdout
    assert "1 completed, 1 unapproved" in done.stdout
    assert ("look at: task 1 is unapproved (not approved after 3 review rounds); its change "
            f"{commits[0][0][:12]} is kept for you to judge; the reviewer's last feedback: still "
            "not right") in done.stdout
    status = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--status"], cwd=work,
                            env=env, capture_output=True, text=True, timeout=60).stdout
    assert "unapproved" in status
    assert "feedback: still not right\n         the name is wrong" in status


def test_a_failing_reviewer_is_run_again_and_never_approves(tmp_path: Path, fake_api: FakeApi,
                                                            claude_bin: Path) -> None:
    work, env = project(tmp_path, fake_api, claude_bin, "- WRITE a.txt: one\n- WRITE b.txt: two\n")
    fake_api.script(overloaded(), Text("APPROVED"), overloaded(), overloaded(), model="sonnet")
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--review", "--backoff", "0", env=env)
    assert done.returncode == 4, done.stderr  # unapproved
    first, second = tasks(work)
    assert first["status"] == "completed"
    assert [a["outcome"] for a in first["history"] if a["role"] == "reviewer"] == [
        "failed", "approved"]
    assert second["status"] == "unapproved" and second["change_id"]
    assert second["error"].startswith("the reviewer failed twice in round 1: API error (HTTP 529")
    assert "reviewer failed: API error (HTTP 529" in done.stdout


def test_a_reviewer_usage_limit_waits_then_reviews_again(tmp_path: Path, fake_api: FakeApi,
                                                         claude_bin: Path) -> None:
    work, env = project(tmp_path, fake_api, claude_bin, "- WRITE a.txt: one\n")
    fake_api.script(usage_limit(int(time.time()) + 1), Text("APPROVED"), model="sonnet")
    started = time.monotonic()
    done = agent_loop(work, "--vcs", "git", "--no-distill", "--review", env=oauth_login(env))
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= 1
    task = tasks(work)[0]
    assert task["status"] == "completed" and task["attempts"] == 1
    assert [a["outcome"] for a in task["history"]] == ["completed", "limited", "approved"]
    assert "5-hour limit" in task["history"][1]["reason"] and "wait 1 of 5" in done.stdout


# -- the reviewer cannot edit files --------------------------------------------------------------

TRIES = ("reviewer-write.txt", "README.md", "reviewer-bash.txt", "outside.txt")


def hostile_project(tmp_path: Path) -> tuple[Path, list[Text | ToolUse]]:
    """A project that trusts itself to write: its settings allow Write, Edit and Bash, and the
    workspace is trusted (otherwise the CLI ignores those rules). And the reviewer's model tries
    to write a file, edit one, run a shell command, and write outside the project."""
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / "README.md").write_text("hello\n")
    (work / ".claude" / "settings.json").write_text(json.dumps({"permissions": {
        "allow": ["Write", "Edit", "Bash", "NotebookEdit"], "defaultMode": "bypassPermissions"}}))
    home = tmp_path / "claude-home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps(
        {"projects": {str(work): {"hasTrustDialogAccepted": True}}}))
    tries = [ToolUse("Write", {"file_path": str(work / TRIES[0]), "content": "mine\n"}),
             ToolUse("Edit", {"file_path": str(work / TRIES[1]), "old_string": "hello",
                              "new_string": "changed by the reviewer"}),
             ToolUse("Bash", {"command": f"touch {work / TRIES[2]}", "description": "t"}),
             ToolUse("Write", {"file_path": str(tmp_path / TRIES[3]), "content": "x\n"}),
             Text("APPROVED")]
    return work, tries


def untouched(tmp_path: Path, work: Path) -> bool:
    return (not (work / TRIES[0]).exists() and (work / TRIES[1]).read_text() == "hello\n"
            and not (work / TRIES[2]).exists() and not (tmp_path / TRIES[3]).exists())


def test_the_reviewer_cannot_edit_files(tmp_path: Path, fake_api: FakeApi,
                                        claude_bin: Path) -> None:
    work, tries = hostile_project(tmp_path)
    env = claude_env(tmp_path / "claude-home", fake_api)
    fake_api.script(*tries)
    log = tmp_path / "logs" / "review.log"
    request = AgentRun(prompt="Review this change.", model="sonnet", cwd=work, log=log,
                       raw_log=log.with_suffix(".jsonl"), read_only=True, timeout=60)
    result = ClaudeAgent(str(claude_bin), env).run(request, lambda line: None)
    assert result.ok, result.error
    assert result.text == "APPROVED" and len(fake_api.pending) == 0  # every try was made
    assert untouched(tmp_path, work)
    offered = {t["name"] for t in fake_api.requests_for_messages()[0].body["tools"]}
    assert not offered & {"Write", "Edit", "Bash", "NotebookEdit", "Agent"}, offered
    text = log.read_text()
    assert text.count("No such tool available") == 4
    assert "--dangerously-skip-permissions" not in text


def test_the_hostile_project_would_let_a_mere_permission_mode_write(
        tmp_path: Path, fake_api: FakeApi, claude_bin: Path) -> None:
    """The control for the test above: the same project and the same tries, with the reviewer's
    argv minus `--tools` (what a read-only reviewer would be with a permission mode alone),
    do change the files. So the test above fails if READ_ONLY_FLAGS loses what protects."""
    work, tries = hostile_project(tmp_path)
    env = claude_env(tmp_path / "claude-home", fake_api)
    fake_api.script(*tries)
    flags = list(READ_ONLY_FLAGS)
    del flags[flags.index("--tools"):flags.index("--tools") + 2]
    del flags[flags.index("--disallowedTools"):flags.index("--disallowedTools") + 2]
    run = run_claude([str(claude_bin), "-p", "--output-format", "stream-json", "--verbose",
                      "--model", "sonnet", *flags, "--", "Review this change."], work, env)
    assert run.result["result"] == "APPROVED"
    assert (work / TRIES[0]).exists() and (work / TRIES[2]).exists()
    assert (work / TRIES[1]).read_text() != "hello\n"
