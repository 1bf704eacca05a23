"""Your git's required filter that cannot run (`filter.NAME.required`, its clean command gone):
every commit of a file your attributes send to it fails on your setting, not on the agent's
work. Said before the first agent is paid; a failed keep is never said or recorded as kept."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.fake_agent import FakeClaude
from tests.support.repos import committed_plan, git, git_project, tasks_of
from tests.support.runner import agent_loop

PLAN = "- write data\n  FAKE: write data.bin x\n- write b\n  FAKE: write b.txt b\n"


def broken_filter(tmp_path: Path) -> Path:
    work = git_project(tmp_path, PLAN)
    (work / ".gitattributes").write_text("*.bin filter=broken\n")
    git(work, "add", ".gitattributes")
    git(work, "commit", "-q", "-m", "attributes")
    work = committed_plan(work, PLAN)
    git(work, "config", "filter.broken.clean", "no-such-program %f")
    git(work, "config", "filter.broken.smudge", "cat")
    git(work, "config", "filter.broken.required", "true")
    return work


def test_a_required_filter_that_cannot_run_stops_before_any_agent(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = broken_filter(tmp_path)
    stopped = agent_loop(work, "--vcs", "git", "--no-distill")
    said = stopped.stdout + stopped.stderr
    assert stopped.returncode == 1, said
    (line,) = [s for s in stopped.stderr.splitlines() if "error" in s]
    assert "filter.broken.required" in line and "`no-such-program`" in line, said
    assert fake_claude.task_runs() == []
    git(work, "config", "--unset", "filter.broken.required")  # as the line says
    done = agent_loop(work, "--vcs", "git", "--no-distill", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    assert git(work, "show", "HEAD~1:data.bin").strip() == "x"


def test_a_required_filter_without_a_smudge_command_stops_before_any_agent(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = broken_filter(tmp_path)
    git(work, "config", "filter.broken.clean", "cat")
    git(work, "config", "--unset", "filter.broken.smudge")  # every checkout of data.bin fails
    stopped = agent_loop(work, "--vcs", "git", "--no-distill", timeout=60)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "filter.broken.smudge is not set" in stopped.stderr, stopped.stderr
    assert fake_claude.task_runs() == []


def test_a_required_filter_nothing_is_sent_to_stops_nothing(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = broken_filter(tmp_path)
    (work / ".gitattributes").write_text("*.bin -text\n")
    git(work, "commit", "-q", "-am", "no filter")
    done = agent_loop(work, "--vcs", "git", "--no-distill")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_keep_that_failed_is_said_as_failed_never_as_kept(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = broken_filter(tmp_path)
    git(work, "config", "filter.broken.clean", "false %f")  # there, and failing every file
    stopped = agent_loop(work, "--vcs", "git", "--no-distill")
    said = stopped.stdout + stopped.stderr
    assert stopped.returncode == 1, said
    assert "the next run brings it back" not in said, said
    assert "no copy could be" not in said and "not rolled back and not kept yet" in said, said
    assert all(a["work_kept"] is None for a in tasks_of(work)[0]["history"])
    (line,) = [s for s in stopped.stderr.splitlines() if "error" in s]
    assert "filter.broken.required" in line, said
    assert len(fake_claude.task_runs()) == 1  # task 2 not paid for on a setting that fails
    # The same fault: the lane's files, which no copy holds yet, stop the run before any agent.
    again = agent_loop(work, "--vcs", "git", "--no-distill")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "filter.broken.required" in again.stderr, again.stdout + again.stderr
    assert "uncommitted file" not in again.stdout, again.stdout
    assert len(fake_claude.task_runs()) == 1, "an agent was paid while the filter still fails"
    # Fixed: the finished work lands, its agent not paid again.
    git(work, "config", "--unset", "filter.broken.required")
    fixed = agent_loop(work, "--vcs", "git", "--no-distill")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    assert git(work, "show", "HEAD~1:data.bin").strip() == "x"
    assert len(fake_claude.task_runs()) == 2, "task 1's agent was paid again"


def test_a_required_filter_run_from_home_stops_nothing(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # git runs a filter's command through the shell, which finds `~/bin/…` in your home.
    work = broken_filter(tmp_path)
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "passes").write_text("#!/bin/sh\ncat\n")
    (home / "bin" / "passes").chmod(0o755)
    git(work, "config", "filter.broken.clean", "~/bin/passes %f")
    done = agent_loop(work, "--vcs", "git", "--no-distill", env={**os.environ, "HOME": str(home)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(work, "show", "HEAD~1:data.bin").strip() == "x"


def test_a_required_filter_no_file_is_sent_to_stops_nothing(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # Your own attributes file (every repository's) names the filter for files this one lacks.
    work = broken_filter(tmp_path)
    (work / ".gitattributes").write_text("*.bin -text\n")
    git(work, "commit", "-q", "-am", "no filter here")
    home = tmp_path / "home"
    home.mkdir()
    (home / "attributes").write_text("*.psd filter=broken\n")
    git(work, "config", "core.attributesFile", "~/attributes")
    done = agent_loop(work, "--vcs", "git", "--no-distill", env={**os.environ, "HOME": str(home)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    (work / "art").mkdir()
    (work / "art" / "cover.psd").write_text("layers\n")  # one now: its commit would fail
    paid = len(fake_claude.task_runs())
    stopped = agent_loop(work, "--vcs", "git", "--no-distill", "--task", "1", "--again",
                         env={**os.environ, "HOME": str(home)})
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "filter.broken.required" in stopped.stderr, stopped.stderr
    assert len(fake_claude.task_runs()) == paid


def test_a_failed_keep_in_your_checkout_is_kept_by_the_next_run_as_said(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = broken_filter(tmp_path)
    git(work, "config", "filter.broken.clean", "false %f")
    here = ("--vcs", "git", "--no-distill", "--workplace", "checkout")
    stopped = agent_loop(work, *here)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert f"left as they are in {work}," in stopped.stdout, stopped.stdout
    assert "the next run keeps them before any agent runs, or stops on the same fault" in \
        stopped.stdout, stopped.stdout
    # The same fault: said as such, the agent's file not taken for yours.
    again = agent_loop(work, *here)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "filter.broken.required" in again.stderr, again.stderr
    assert "uncommitted file" not in again.stderr, again.stderr
    assert "--allow-dirty leaves its files as they are" in again.stderr, again.stderr
    git(work, "config", "--unset", "filter.broken.required")
    fixed = agent_loop(work, *here)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert [t["status"] for t in tasks_of(work)] == ["completed", "completed"]
    assert git(work, "show", "HEAD~1:data.bin").strip() == "x"
    assert len(fake_claude.task_runs()) == 2, "task 1's agent was paid again"


def test_dry_run_after_a_failed_keep_in_your_checkout_says_what_the_run_would_do(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = broken_filter(tmp_path)
    git(work, "config", "filter.broken.clean", "false %f")
    here = ("--vcs", "git", "--no-distill", "--workplace", "checkout")
    assert agent_loop(work, *here).returncode == 1
    # The run would stop on the keep, not refuse the agent's file as an uncommitted one of yours.
    dry = agent_loop(work, *here, "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "uncommitted file" not in dry.stdout, dry.stdout
    assert "the run would stop here: an earlier run stopped inside a task" in dry.stdout, \
        dry.stdout
    assert "no copy of its files could be kept" in dry.stdout, dry.stdout
    assert "filter.broken.required" in dry.stdout, dry.stdout
    # Fixed: the run keeps a copy and rolls them back, so nothing is in its way.
    git(work, "config", "--unset", "filter.broken.required")
    before = git(work, "status", "--porcelain", "--untracked-files=all")
    dry = agent_loop(work, *here, "--dry-run")
    assert "the run would stop here" not in dry.stdout, dry.stdout
    assert git(work, "status", "--porcelain", "--untracked-files=all") == before  # nothing kept
    assert len(fake_claude.task_runs()) == 1
