"""A plan whose name starts with a dash (`-dash.md`, run as `agent-loop -- -dash.md` or
`agent-loop ./-dash.md`): every agent-loop command a line prints for it runs as pasted into bash
where the run was started, with the plan in the repository's top or in a subfolder, instead of
click reading the plan's name as options (`-d`, `-a`, …)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_agent import FakeClaude
from tests.support.repos import make_repo
from tests.support.runner import agent_loop

PLAN = "- write a\n  FAKE: write a.txt A\n- fail b\n  FAKE: exit 1\n"
# (the folder the run starts in, below the repository; the plan as typed there)
WHERE = [("", ("--", "-dash.md")), ("", ("./-dash.md",)), ("sub", ("--", "-dash.md")),
         ("sub", ("./-dash.md",))]


def project(tmp_path: Path, folder: str) -> Path:
    """A git repository with the plan `-dash.md` in `folder` (its top, or sub/); that folder."""
    work = make_repo(tmp_path / "project", "git")
    (work / "sub").mkdir()
    (work / folder / "-dash.md").write_text(PLAN)
    return work / folder


def paste(cwd: Path, tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    """`command` run by bash in `cwd` as a person pastes it, `agent-loop` on PATH being this
    agent-loop; it ran (a task failed, exit 4, is a run too), no option refused."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "agent-loop"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m agentloop \"$@\"\n")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"}
    ran = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert ran.returncode in (0, 4), (command, ran.stderr)
    return ran


def pasted(cwd: Path, tmp_path: Path, text: str) -> list[subprocess.CompletedProcess[str]]:
    """Every backquoted `agent-loop …` command of `text` (and one after a `with:`), pasted."""
    commands = re.findall(r"`(agent-loop [^`]+)`", text) + re.findall(
        r"(?:Resume with|Continue with|Continue with a higher budget): (agent-loop .+)$", text,
        re.MULTILINE)
    assert commands, text
    return [paste(cwd, tmp_path, command) for command in commands]


@pytest.mark.parametrize("folder,plan", WHERE)
def test_the_status_lines_a_finished_run_prints(tmp_path: Path, fake_claude: FakeClaude,
                                                folder: str, plan: tuple[str, ...]) -> None:
    cwd = project(tmp_path, folder)
    done = agent_loop(cwd, "--no-distill", "--max-attempts", "1", *plan, plan=None)
    assert done.returncode == 4, done.stdout + done.stderr
    for ran in pasted(cwd, tmp_path, done.stdout):
        assert "2 task(s): 1 completed, 1 failed" in ran.stdout, ran.stdout


@pytest.mark.parametrize("folder,plan", WHERE)
def test_the_resume_line_of_a_run_its_budget_stopped(tmp_path: Path, fake_claude: FakeClaude,
                                                     folder: str, plan: tuple[str, ...]) -> None:
    cwd = project(tmp_path, folder)
    (cwd / "-dash.md").write_text("- write a\n  FAKE: write a.txt A\n  FAKE: cost 0.5\n"
                                  "- write b\n  FAKE: write b.txt B\n")
    done = agent_loop(cwd, "--no-distill", "--budget", "0.4", *plan, plan=None)
    assert "Continue with a higher budget" in done.stderr, done.stdout + done.stderr
    assert not (tmp_path / "project" / "b.txt").exists()
    pasted(cwd, tmp_path, done.stderr)
    assert (tmp_path / "project" / "b.txt").read_text() == "B\n"


def test_the_way_through_for_a_plan_of_another_repository(tmp_path: Path,
                                                          fake_claude: FakeClaude) -> None:
    here = make_repo(tmp_path / "here")
    other = make_repo(tmp_path / "other", files={"README.md": "other\n", "-dash.md": PLAN})
    done = agent_loop(here, "--max-attempts", "1", plan=str(other / "-dash.md"), timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    way = re.search(r"\((cd [^)]+ && agent-loop [^)]+)\)", done.stderr)
    assert way is not None, done.stderr
    paste(here, tmp_path, way.group(1))
    assert (other / "a.txt").read_text() == "A\n"


@pytest.mark.parametrize("folder", ["", "sub"])
def test_the_again_line_status_says_of_a_done_task_reworded(tmp_path: Path,
                                                            fake_claude: FakeClaude,
                                                            folder: str) -> None:
    cwd = project(tmp_path, folder)
    (cwd / "-dash.md").write_text("- wirte a\n  FAKE: write a.txt A\n")
    assert agent_loop(cwd, "--no-distill", "--", "-dash.md", plan=None).returncode == 0
    (cwd / "-dash.md").write_text("- write a\n  FAKE: write a.txt A\n")
    status = agent_loop(cwd, "--status", "--", "-dash.md", plan=None)
    assert "runs the new words" in status.stdout, status.stdout + status.stderr
    paste(cwd, tmp_path, re.findall(r"`(agent-loop [^`]+)`", status.stdout)[0])
    assert len(fake_claude.task_runs()) == 2


@pytest.mark.parametrize("folder", ["", "sub"])
def test_the_status_line_of_a_followed_run_that_was_killed(tmp_path: Path,
                                                           fake_claude: FakeClaude,
                                                           folder: str) -> None:
    cwd = project(tmp_path, folder)
    (cwd / "-dash.md").write_text("- write a\n  FAKE: write a.txt A\n")
    assert agent_loop(cwd, "--no-distill", "--", "-dash.md", plan=None).returncode == 0
    # Killed before its last event (kill -9): the log ends without the run's finish.
    log = next((tmp_path / "project" / ".agent-loop").rglob("events.jsonl"))
    lines = log.read_text().splitlines(keepends=True)
    assert '"type":"RunFinished"' in lines[-1], lines[-1]
    log.write_text("".join(lines[:-1]))
    done = agent_loop(cwd, "--status", "--follow", "--", "-dash.md", plan=None, timeout=30)
    assert "ended without finishing" in done.stderr, done.stdout + done.stderr
    paste(cwd, tmp_path, re.findall(r"`(agent-loop [^`]+)`", done.stderr)[0])


@pytest.mark.parametrize("folder", ["", "sub"])
def test_the_resume_line_names_the_plan_you_renamed_while_it_ran(
        tmp_path: Path, fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], folder: str) -> None:
    from agentloop.console.stops import report
    from agentloop.errors import RunStopped

    cwd = project(tmp_path, folder)
    (cwd / "-dash.md").rename(cwd / "-new.md")
    monkeypatch.chdir(cwd)
    stop = RunStopped("no new task starts")
    stop.renamed = (str(cwd / "-dash.md"), str(cwd / "-new.md"))  # type: ignore[attr-defined]
    report(stop, ["--max-attempts", "1", "--", "-dash.md"])
    paste(cwd, tmp_path, capsys.readouterr().err.split("Continue with: ")[1].strip())
    assert (tmp_path / "project" / "a.txt").read_text() == "A\n"


@pytest.mark.parametrize("folder", ["", "sub"])
def test_the_again_line_a_run_starts_with_for_a_done_task_reworded(
        tmp_path: Path, fake_claude: FakeClaude, folder: str) -> None:
    # The run's own start line (and --dry-run's), not --status's: the same command.
    cwd = project(tmp_path, folder)
    (cwd / "-dash.md").write_text("- wirte a\n  FAKE: write a.txt A\n")
    assert agent_loop(cwd, "--no-distill", "--", "-dash.md", plan=None).returncode == 0
    (cwd / "-dash.md").write_text("- write a\n  FAKE: write a.txt A\n")
    for args in (("--dry-run",), ("--no-distill",)):
        said = agent_loop(cwd, *args, "--", "-dash.md", plan=None)
        text = said.stdout + said.stderr
        again = [c for c in re.findall(r"`(agent-loop [^`]+)`", text) if "--again" in c]
        assert again and all(c.startswith("agent-loop ./-dash.md ") for c in again), text
    paste(cwd, tmp_path, again[0])
    assert len(fake_claude.task_runs()) == 2
