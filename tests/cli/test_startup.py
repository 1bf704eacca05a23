"""Start-up by need: what `--version`, `--help` and `--status` import, read off the real
program (`python -X importtime -m agentloop`), so a module that creeps into their start-up
fails here, ours and third-party alike."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloop.state.project import load_plan, open_project
from agentloop.vcs import history
from tests.support.audit import audited_run
from tests.support.fake_agent import FakeClaude
from tests.support.repos import jj, make_repo
from tests.support.runner import agent_loop, noting_git, noting_jj

# Ours that each may import, as names or as folders (a trailing dot); anything else fails.
# `--status` is answered before click is imported (agentloop.console.quick): every command
# reads its arguments there first.
QUICK = ("agentloop", "agentloop.console", "agentloop.console.quick",
         "agentloop.collector")   # the collector held back while the command starts
# Saying what happened, and the one dispatch both doors share.
SAYING = ("agentloop.errors",
          "agentloop.console.gone",   # a closed pipe must not stop any command
          "agentloop.console.stops", "agentloop.console.dispatch")
# The options record: every command click parses, never a quick --status.
PARSING = (*QUICK, *SAYING, "agentloop.options", "agentloop.options.record", "agentloop.cli",
           "agentloop.console.help",
           # the options' table, read first by a plain run's door (which leaves --help to click)
           "agentloop.options.table", "agentloop.console.plain",
           "agentloop.console.command",   # what both doors do once the options are read
           # the click types of --env and --env-exclude (not the settings' checks)
           "agentloop.settings", "agentloop.settings.click_types")
# --help lists the agents (their package's table only, never an agent's module); the default
# agent needs no look-up, so --status reads no table.
HELP = (*PARSING, "agentloop.agents", "agentloop.agents.environment",
        "agentloop.ondemand")   # the agents' records a run may never make
# No click, no settings, no options record: the state file read as plain records by the
# schema's table (never the record classes, their store or the receipts' records), and the
# plan's hash (never its parser, nor the records it parses into).
STATUS = (*QUICK, *SAYING, "agentloop.standing", "agentloop.console.render",
          "agentloop.state", "agentloop.state.plain", "agentloop.state.fields",
          "agentloop.state.status", "agentloop.state.tally",
          "agentloop.plan", "agentloop.plan.source", "agentloop.files.",
          # are the done tasks' changes still in the history: yes while it stands where the run
          # last found them (read off git's files: no process, so no process layer either)
          "agentloop.vcs", "agentloop.vcs.history", "agentloop.vcs.git", "agentloop.vcs.git.refs",
          # what it would ask of the history (how it reads the answer: only when it asks)
          "agentloop.state.whereabouts")
OURS = {"--version": ("agentloop",), "--help": HELP, "--status": STATUS}
# --status --json prints with orjson; --status as text reads the state with the standard
# library's JSON (orjson's import brings dataclasses).
THIRD_PARTY = {"--version": set(), "--help": {"click"}, "--status": set(), "--json": {"orjson"}}
# The standard library's starts a --status never needs: hashlib starts OpenSSL (the plan's
# hash comes from Python's own SHA-256, agentloop.files.digest); shlex quotes the command lines
# only a run's closing lines show; dataclasses (with inspect, ast, dis) and typing cost more
# than the rest of --status together, and its text needs neither.
NOT_FOR_STATUS = {"hashlib", "_hashlib", "shlex"}
NOT_FOR_STATUS_TEXT = {"dataclasses", "inspect", "typing"}
# --help needs the terminal's width, which click asks shutil for: shutil loads the compressors
# (zlib, bz2, lzma) as it loads, for its archives, and --help asks the width of os itself.
NOT_FOR_HELP = {"shutil", "bz2", "lzma", "zlib"}


def imported(args: list[str], cwd: Path, stdlib: bool = False) -> tuple[list[str], set[str]]:
    """Our modules and the third-party packages `agent-loop ARGS` imports, beyond what a bare
    interpreter of this environment imports (site's own start-up files); with `stdlib`, the
    standard library's modules too (all of them, by their full names)."""
    def names(argv: list[str]) -> list[str]:
        done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr[-2000:]
        return [line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line]

    bare = set(names(["-c", "pass"]))
    seen = [n for n in names(["-m", "agentloop", *args]) if n not in bare]
    ours = [n for n in seen if n.split(".")[0] == "agentloop"]
    others = {n.split(".")[0] for n in seen if n.split(".")[0] != "agentloop"}
    # A failed attempt is listed too (the stdlib's `copy` tries Jython's `org`): not a cost.
    found = {n for n in others if importlib.util.find_spec(n) is not None}
    if stdlib:
        return ours, {n for n in seen if n.split(".")[0] in sys.stdlib_module_names}
    return ours, found - set(sys.stdlib_module_names) - {"__main__"}


def allowed(name: str, allowlist: tuple[str, ...]) -> bool:
    """Whether `name` is one of `allowlist`'s modules or lies in one of its folders."""
    return any(name in (a, a.rstrip(".")) or (a.endswith(".") and name.startswith(a))
               for a in allowlist)


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A git repository with a three-task plan whose state is saved and matches the file, one
    task done in the commit HEAD is (the --status a user runs after a run)."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "tasks.md").write_text("## One\n- first\n- second\n## Two\n- third\n")
    subprocess.run(["git", "add", "tasks.md"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "plan"], cwd=tmp_path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, check=True,
                          capture_output=True, text=True).stdout.strip()
    project = open_project(Path("tasks.md"), tmp_path)
    state, _, _ = load_plan(project)
    state.vcs = "git"
    state.tasks[0].status, state.tasks[0].change_id = "completed", head
    # What the run's last look at the history leaves (agentloop.run.history_check.check_history).
    at = history.where("git", tmp_path)
    assert at is not None
    state.history_mark = history.mark(at, [head])
    project.store.snapshot(state, final=True)
    return tmp_path


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["tasks.md", "--status"],
                                  ["--json", "--status", "tasks.md"], ["--status"]])
def test_start_up_imports_only_what_the_command_needs(finished: Path, args: list[str]) -> None:
    mode = next(a for a in args if a in OURS)
    ours, others = imported(args, finished)
    assert ours, "no module of ours seen: is -X importtime read right?"
    extra = [n for n in ours if not allowed(n, OURS[mode])]
    assert not extra, f"{' '.join(args)} imports {extra}: import them where they are needed"
    third_party = THIRD_PARTY["--json" if "--json" in args else mode]
    assert others == third_party, f"{' '.join(args)} imports {sorted(others)}"


@pytest.mark.parametrize("args", [["tasks.md", "--status"], ["--status", "--json", "tasks.md"]])
def test_status_starts_none_of_the_standard_library_s_costly_modules(finished: Path,
                                                                     args: list[str]) -> None:
    _, stdlib = imported(args, finished, stdlib=True)
    assert stdlib, "no module of the standard library seen: is -X importtime read right?"
    assert not stdlib & NOT_FOR_STATUS, sorted(stdlib & NOT_FOR_STATUS)
    if "--json" not in args:
        assert not stdlib & NOT_FOR_STATUS_TEXT, sorted(stdlib & NOT_FOR_STATUS_TEXT)


def test_help_starts_none_of_the_standard_library_s_archivers(finished: Path) -> None:
    _, stdlib = imported(["--help"], finished, stdlib=True)
    assert "click" not in stdlib and "textwrap" in stdlib, "is -X importtime read right?"
    assert not stdlib & NOT_FOR_HELP, sorted(stdlib & NOT_FOR_HELP)


def status_json(work: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--status", "--json"],
                          cwd=work, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


# The files a command opens, as Python's audit hook sees them (every open(), os.open and
# io.open), printed as the process ends.
OPENED = """
import os, runpy, sys
opened = []
def noted(event, args):
    if event == "open" and isinstance(args[0], (str, os.PathLike)):
        opened.append(os.path.abspath(args[0]))
sys.addaudithook(noted)
leave = os._exit
def left(code):
    print("OPENED", opened, flush=True)
    leave(code)
os._exit = left
sys.argv = ["agent-loop", *sys.argv[1:]]
runpy.run_module("agentloop", run_name="__main__")
"""


def opened(args: list[str], cwd: Path) -> list[str]:
    """The files of `cwd` that `agent-loop ARGS` opens, from `cwd`, once for each opening."""
    done = subprocess.run([sys.executable, "-c", OPENED, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = ast.literal_eval(done.stdout.rsplit("OPENED ", 1)[1])
    return [os.path.relpath(p, cwd) for p in seen if p.startswith(str(cwd) + os.sep)]


def test_status_of_an_unchanged_plan_reads_its_state_once(finished: Path) -> None:
    # The state, the plan (its hash), whether a run lives, where the history stands: each once.
    # state.json, of thousands of records after a long plan, was read twice: to tell whose
    # it is, then as the state.
    files = opened(["tasks.md", "--status"], finished)
    assert files.count(".agent-loop/state.json") == 1, files
    assert files.count("tasks.md") == 1, files
    assert sorted(set(files)) == sorted(files), files


def test_status_asks_the_vcs_only_when_the_history_moved(finished: Path) -> None:
    # Where the run left it: no process at all (every process goes through agentloop.proc).
    ours, _ = imported(["tasks.md", "--status"], finished)
    assert "agentloop.vcs.history" in ours and "agentloop.proc" not in ours
    # A commit on top: one `git rev-list` finds the task's change still there.
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "user"], cwd=finished,
                   check=True)
    ours, _ = imported(["tasks.md", "--status"], finished)
    assert "agentloop.proc" in ours
    assert status_json(finished)["lost"] == []
    # Another history: the task's change is gone from it, and --status says so.
    subprocess.run(["git", "checkout", "-q", "--orphan", "other"], cwd=finished, check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "elsewhere"], cwd=finished,
                   check=True)
    assert status_json(finished)["lost"] == [1]


def test_status_of_an_unchanged_plan_asks_the_vcs_once(finished: Path) -> None:
    # The plan is not parsed: its hash is the state's.
    ours, _ = imported(["tasks.md", "--status"], finished)
    assert "agentloop.vcs.history" in ours
    assert not any(n.startswith(("agentloop.plan.markdown", "agentloop.state.reconcile"))
                   for n in ours)
    (finished / "tasks.md").write_text("## One\n- first\n- second, reworded\n## Two\n- third\n")
    ours, others = imported(["tasks.md", "--status"], finished)
    assert "agentloop.plan.markdown" in ours and "marko" in others   # an edited plan is read


@pytest.mark.parametrize("kind", ["git", "jj"])
def test_a_run_loads_the_git_library_and_the_plan_reader_only_when_it_needs_them(
        tmp_path: Path, kind: str, fake_claude: FakeClaude) -> None:
    # GitPython is what the git backend falls back on (packed refs, a dirty tree's blobs): a
    # task on a clean tree needs none of it, and jj never does.
    plan = "## One\n- first\n  FAKE: write a.txt A\n- second\n  FAKE: write b.txt B\n"
    work = make_repo(tmp_path / "project", kind, plan=plan)
    args = ["tasks.md", "--vcs", kind, "--no-distill"]
    ours, others = imported(args, work)
    assert "agentloop.vcs.git.backend" in ours or kind == "jj"
    assert not others & {"git", "gitdb"}, sorted(others)
    assert "marko" in others   # the plan is new: parsed once
    assert "filelock" not in others   # the locks are flock(2) taken directly (files.lock)
    # Again, nothing left to do: the state holds this very plan, which is not read again.
    ours, others = imported(args, work)
    assert not others & {"git", "gitdb", "marko"}, sorted(others)


# What a plain run (git, a clean tree, no review, no distilling, off a terminal) never needs,
# before its first task or after: the dashboard, the paths it does not take, jj's runner, the
# sandbox (--sandbox), the agents it does not drive, and OpenSSL's start (hashlib: every digest
# of a run is short, agentloop.files.digest).
NOT_FOR_A_PLAIN_RUN = ("agentloop.dashboard.", "agentloop.vcs.jj.", "agentloop.run.review",
                       "agentloop.run.review_prompt", "agentloop.run.distill",
                       "agentloop.console.confirm", "agentloop.sandbox.",
                       "agentloop.agents.codex", "agentloop.agents.codex_stream",
                       "agentloop.agents.rehearse",
                       "agentloop.fleet.", "agentloop.settings.show")


def test_a_plain_run_imports_nothing_of_paths_it_does_not_take(tmp_path: Path,
                                                                fake_claude: FakeClaude) -> None:
    plan = "## One\n- first\n  FAKE: write a.txt A\n- second\n  FAKE: write b.txt B\n"
    work = make_repo(tmp_path / "project", "git", plan=plan)
    ours, stdlib = imported(["tasks.md", "--vcs", "git", "--no-distill"], work, stdlib=True)
    assert "agentloop.run.attempt" in ours, "no task ran: is the run read right?"
    extra = [n for n in ours if allowed(n, NOT_FOR_A_PLAIN_RUN)]
    assert not extra, f"a plain run imports {extra}: import them where their path begins"
    assert not stdlib & {"hashlib", "_hashlib"}, sorted(stdlib & {"hashlib", "_hashlib"})
    # The third-party side, of the same plan run again from the start (--reset --yes: its
    # tasks run again, the question is not asked).
    _, others = imported(["tasks.md", "--vcs", "git", "--no-distill", "--reset", "--yes"],
                         work)
    assert not others & {"rich", "git", "gitdb"}, sorted(others)   # the live view: a terminal's


# What the first agent's way needs none of: tempfile (with shutil, random and the compressors
# shutil loads for its archives, ~3 ms) makes the agent's stderr file, made ready beside the
# lane's git (agentloop.proc.beside.agents_ready); programs are found along PATH by
# agentloop.proc.program_path; a tree is removed only where a lane is given up.
NOT_ON_THE_AGENT_S_WAY = {"tempfile", "shutil", "random", "bz2", "lzma"}


def test_the_way_to_the_first_agent_loads_no_archiver(tmp_path: Path,
                                                       fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git", plan="## One\n- first\n  FAKE: write a.txt A\n")
    lines = audited_run(work, tmp_path, where=True)
    agent = next(n for n, line in enumerate(lines)
                 if line.startswith("process ") and "stream-json" in line)
    loaded = {line.split()[1] for line in lines[:agent]
              if line.startswith("import ") and line.endswith(" True")}
    assert "agentloop.run.start" in loaded, "is the run read right?"
    on_the_way = loaded & NOT_ON_THE_AGENT_S_WAY
    assert not on_the_way, f"the main thread loads {sorted(on_the_way)} before the first agent"


def test_status_after_a_real_run_starts_no_process(tmp_path: Path,
                                                   fake_claude: FakeClaude) -> None:
    # The run's lane notes where the history stood on its own branch; the checkout it landed in
    # stands at the same commit on another: the same history, so --status asks git nothing.
    plan = "## One\n- first\n  FAKE: write a.txt A\n## Two\n- second\n  FAKE: write b.txt B\n"
    work = make_repo(tmp_path / "project", "git", plan=plan)
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill"], cwd=work, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    ours, _ = imported(["tasks.md", "--status"], work)
    assert "agentloop.proc" not in ours, "--status started a process: the run's mark is not read"
    assert status_json(work)["lost"] == []
    # Its state (with a journal's place) read once, as after any run.
    files = opened(["tasks.md", "--status"], work)
    assert files.count(".agent-loop/state.json") == 1 and files.count("tasks.md") == 1, files


def test_status_of_a_jj_plan_asks_jj_for_no_author(tmp_path: Path, fake_claude: FakeClaude,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # jj's author (JJ_USER and JJ_EMAIL, else jj's config, else git's: agentloop.vcs.jj.run
    # .identity) goes on a change jj makes. --status reads the history with
    # --ignore-working-copy, which makes none: two `jj config get` and two `git config` were
    # asked each time for an author nothing took, before the one read.
    work = make_repo(tmp_path / "project", "jj", plan="- first\n  FAKE: write a.txt A\n")
    done = agent_loop(work, "--vcs", "jj", "--no-distill")
    assert done.returncode == 0, done.stderr[-2000:]
    jj(work, "new")   # the history moves on: --status reads it again
    monkeypatch.delenv("JJ_USER")
    monkeypatch.delenv("JJ_EMAIL")
    done, calls = noting_jj(work, tmp_path, "tasks.md", "--status")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 completed" in done.stdout and " log " in f" {calls[0]} ", calls
    assert not [c for c in calls if " config " in f" {c} "], calls
    _, git_calls_made = noting_git(work, tmp_path / "git", "tasks.md", "--status")
    assert git_calls_made == [], git_calls_made


def test_a_mark_that_names_the_branch_still_counts(finished: Path) -> None:
    # Marks saved before named git's branch too: the commit and the digest are what count.
    project = open_project(Path("tasks.md"), finished)
    state = project.store.load()
    assert state is not None and state.history_mark is not None
    state.history_mark = "refs/heads/elsewhere " + state.history_mark
    project.store.snapshot(state, final=True)
    ours, _ = imported(["tasks.md", "--status"], finished)
    assert "agentloop.proc" not in ours
    # Another digest (another set of changes) is not the same mark.
    state.history_mark = state.history_mark[:-1] + ("0" if state.history_mark[-1] != "0" else "1")
    project.store.snapshot(state, final=True)
    ours, _ = imported(["tasks.md", "--status"], finished)
    assert "agentloop.proc" in ours


def git_calls(work: Path, tmp_path: Path, *args: str) -> list[str]:
    """The git commands `agent-loop ARGS` starts."""
    return noting_git(work, tmp_path, *args)[1]


def test_status_after_the_history_moved_asks_git_once(finished: Path, tmp_path: Path) -> None:
    # The task's change says agent-loop, as every change of a run does; then the user commits.
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "agent-loop: One / first"],
                   cwd=finished, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=finished, check=True,
                          capture_output=True, text=True).stdout.strip()
    project = open_project(Path("tasks.md"), finished)
    state = project.store.load()
    assert state is not None
    plan_commit, state.tasks[0].change_id = state.tasks[0].change_id, head
    project.store.snapshot(state, final=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "mine"], cwd=finished,
                   check=True)
    # One read of the history answers both: is the change there, and what do trailers say.
    calls = git_calls(finished, tmp_path / "calls", "tasks.md", "--status")
    assert len(calls) == 1 and calls[0].startswith("log"), calls
    assert status_json(finished)["lost"] == []
    # A change whose description that read does not name is asked after, once more.
    state.tasks[0].change_id = plan_commit   # "plan"
    project.store.snapshot(state, final=True)
    calls = git_calls(finished, tmp_path / "again", "tasks.md", "--status")
    assert [c.split()[0] for c in calls] == ["log", "rev-list"], calls
    assert status_json(finished)["lost"] == []



def held_git(tmp_path: Path, word: str, until: str) -> tuple[dict[str, str], Path]:
    """An environment whose `git` notes every call in the log it returns, and holds a call
    naming `word` until the shell test `until` holds (10 s at most, which only a failing run
    waits), then notes "WORD: seen" if it did and, once git is done, "WORD ended"."""
    shims, log = tmp_path / "shims", tmp_path / "git.log"
    shims.mkdir()
    real = shutil.which("git")
    assert real is not None
    (shims / "git").write_text(
        f'#!/bin/sh\necho "$*" >> "{log}"\n'
        f'case " $* " in *" {word} "*)\n'
        f'    i=0\n'
        f'    while ! ({until}) && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n'
        f'    if {until}; then echo "{word}: seen" >> "{log}"; fi\n'
        f'    "{real}" "$@"; code=$?; echo "{word} ended" >> "{log}"; exit $code ;;\n'
        f'esac\nexec "{real}" "$@"\n')
    (shims / "git").chmod(0o755)
    return {**os.environ, "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}"}, log


def held_run(work: Path, env: dict[str, str], log: Path) -> list[str]:
    """A fresh git run of the plan in `work`; the git commands (their first word) and the
    shim's own notes, in order."""
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "git",
                           "--no-distill"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return [line if line.endswith((" ended", ": seen")) else
            re.sub(r"^-C \S+ (-c \S+ )*", "", line).split()[0]
            for line in log.read_text().splitlines() if line.strip()]


def says_signing(work: Path) -> Path:
    """`work` with commit.gpgsign in its config (false): git is asked whether commits are
    signed only where a config file mentions it (agentloop.vcs.git.config_text)."""
    subprocess.run(["git", "config", "commit.gpgsign", "false"], cwd=work, check=True)
    return work


def test_a_fresh_run_asks_git_who_commits_while_it_reads_the_history(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # No state: the run reads what history says is done (`git log`), and preflight asks who
    # commits (`git var`) and whether commits are signed (`git config`). All three only read:
    # they start together, not the last two after the history's read.
    work = says_signing(make_repo(tmp_path / "project", "git",
                                  plan="- first\n  FAKE: write a.txt A\n"))
    # Held until both have started: `git config` is started just after `git var`, and on a
    # busy machine its note could come after the history's read had ended.
    noted = tmp_path / "git.log"
    env, log = held_git(tmp_path, "log",
                        f'grep -q " var " "{noted}" && grep -q " config " "{noted}"')
    calls = held_run(work, env, log)
    assert "log" in calls and "var" in calls and "config" in calls, calls
    ended = calls.index("log ended")
    assert calls.index("var") < ended and calls.index("config") < ended, calls


def test_a_run_starts_its_watchdog_while_its_lane_is_made(tmp_path: Path,
                                                            fake_claude: FakeClaude) -> None:
    # The watchdog (agentloop.proc.watchdog), a shell that ends the agents if agent-loop is
    # killed, is started beside the lane's making (its `checkout`, the one git process of it:
    # agentloop.vcs.git.worktrees), not on the first agent's path: the shim holds that
    # `checkout` until agent-loop (its parent) has a watchdog child.
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    env, log = held_git(tmp_path, "checkout",
                        'ps -o args= --ppid $PPID | grep -q "read -r word group"')
    calls = held_run(work, env, log)
    assert "checkout: seen" in calls, calls
    assert (work / "a.txt").read_text().strip() == "A"



def test_a_run_removes_its_lane_while_it_records_its_end(tmp_path: Path,
                                                          fake_claude: FakeClaude) -> None:
    # The lane's removal (its `git status` for files nobody committed, then its files, folder
    # and branch deleted) runs beside the run's last save (state.json with the task completed)
    # rather than before it: the shim holds that `status` until the save is there.
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    state = work / ".agent-loop" / "state.json"
    env, log = held_git(tmp_path, ":(exclude).agent-loop",
                        f"grep -q '\"completed\"' '{state}'")
    calls = held_run(work, env, log)
    assert ":(exclude).agent-loop: seen" in calls, calls
    assert (work / "a.txt").read_text().strip() == "A"
    assert not list((work / ".agent-loop" / "lanes").iterdir())
    branches = subprocess.run(["git", "branch", "--list", "agent-loop/*"], cwd=work,
                              check=True, capture_output=True, text=True).stdout
    assert branches == "", branches


# The run's own modules, which take longer to load than the git commands a fresh run asks first
# take to run: those are started (each in a thread of its own, agentloop.proc.beside) before any
# of these loads, and run meanwhile.
LOADED_AFTER_THE_FIRST_GIT = ("agentloop.run.start", "agentloop.run.controller",
                              "agentloop.run.ledger", "agentloop.run.summary",
                              "agentloop.run.eventlog")
# The history's `git log` (agentloop.vcs.branch_log.git_history) and the questions preflight
# and the backend ask first (git's identity and signing, where the repository is, what your
# checkout holds: agentloop.vcs.git.first_look), by the main thread, with no thread to start
# for each: a thread's start waits for the interpreter, which the new thread holds as it
# starts its git (the history's thread: 11-14 ms of the main thread's start on a busy machine).
ASKED_AT_ONCE = ("log", "var", "config", "rev-parse", "--no-optional-locks")


def word_of(line: str) -> str:
    """The git command a `process git -C DIR [-c K=V]... WORD ...` line names."""
    return re.sub(r"^process git -C \S+ (-c \S+ )*", "", line).split()[0]


def test_a_fresh_run_starts_its_first_git_commands_before_it_loads_the_run(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = says_signing(make_repo(tmp_path / "project", "git",
                                  plan="- first\n  FAKE: write a.txt A\n"))
    lines = audited_run(work, tmp_path)
    first_agent = next(n for n, line in enumerate(lines)
                       if line.startswith("process ") and "stream-json" in line)
    asked = [word_of(line) for line in lines[:first_agent] if line.startswith("process git -C")]
    for word in ASKED_AT_ONCE:
        assert asked.count(word) == 1, f"`git {word}` asked {asked.count(word)} times"
    started = max(next(n for n, line in enumerate(lines) if line.startswith("process git -C")
                       and word_of(line) == word) for word in ASKED_AT_ONCE)
    for module in LOADED_AFTER_THE_FIRST_GIT:
        assert started < lines.index(f"import {module}"), \
            f"{module} loads before the run's first git commands start"
    threads = {line.split(maxsplit=1)[1] for line in lines[:first_agent]
               if line.startswith("thread ")}
    assert "agent-loop agents ready" in threads, f"are the threads read right? {threads}"
    assert not {"agent-loop history", "agent-loop identity", "agent-loop signing"} & threads, \
        threads


def test_a_run_readies_its_first_agent_while_it_waits_for_its_lane(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # What the first agent needs made ready in threads (the watchdog's shell and libc's prctl,
    # the records its task makes: agentloop.run.ahead.ready_beside) starts once the lane's
    # `git checkout` runs (its one process), which the main thread waits for, and not before:
    # started before,
    # the threads took the GIL from the main thread's own set-up (the run's first records, the
    # lanes' sweep), which then waited for them while nothing ran beside the lane's git.
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    lines = audited_run(work, tmp_path)
    add = next(n for n, line in enumerate(lines)
               if line.startswith("process git ") and " checkout -q -f " in line)
    agent = next(n for n, line in enumerate(lines)
                 if line.startswith("process ") and "stream-json" in line)
    for name in ("agent-loop agents ready", "agent-loop records ahead"):
        assert lines.count(f"thread {name}") == 1, lines
        assert add < lines.index(f"thread {name}") < agent, lines
    assert (work / "a.txt").read_text().strip() == "A"


# What a plain run (git, a fresh plan, no agent failing) loads only once its first agent works:
# the end of a task (loaded meanwhile by the thread that makes the records
# ahead, agentloop.run.ahead._made_ahead); what its main thread leaves to that thread, which
# loads it beside the lane's git (an agent's final message, read once the agent has run); and
# what it never loads: the retry advisor (a failed attempt), the records of tasks a plan joined
# (agentloop.state.folding), the lanes the settings furnish, what the history says of a run
# before (none: the repository is new), and what only a failed agent run reads: the judging of a
# failed attempt, the waits for a limit, Claude's error kinds and the reset times they name.
LOADED_ONCE_AN_AGENT_WORKS = ("agentloop.run.tick_boxes",)
NOT_BY_THE_MAIN_THREAD = ("agentloop.run.final_message",)
NEVER_IN_A_PLAIN_RUN = ("agentloop.run.retry", "agentloop.run.json_answer",
                        "agentloop.state.folding", "agentloop.vcs.furnish",
                        "agentloop.state.whereabouts", "agentloop.run.judge",
                        "agentloop.run.waits", "agentloop.agents.claude_errors",
                        "agentloop.agents.reset_time")


def test_a_run_that_distills_loads_the_distiller_while_its_first_agent_works(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The commit-message distiller (on by default) is first used once the first task's agent
    # is done: its module (and the JSON answer's it reads) is loaded by the records-ahead
    # thread while that agent works (agentloop.run.ahead.load_ahead_too), not by the main
    # thread on its way to the agent.
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    lines = audited_run(work, tmp_path, where=True, extra=["--distill"])
    agent = next(n for n, line in enumerate(lines)
                 if line.startswith("process ") and "stream-json" in line)
    imported = {line.split()[1]: (n, line.split()[2] == "True") for n, line in enumerate(lines)
                if line.startswith("import ")}
    for module in ("agentloop.run.distill", "agentloop.run.json_answer"):
        assert module in imported, f"{module} never loaded: did the run distill?"
        at, by_the_main_thread = imported[module]
        assert agent < at and not by_the_main_thread, \
            f"{module} loaded {'before' if at < agent else 'after'} the first agent starts, " \
            f"{'by the main thread' if by_the_main_thread else 'beside'}"
    assert any(line.startswith("process ") and "--model" in line for line in lines[agent + 1:]), \
        "no distiller asked: is the run read right?"


def test_a_run_loads_before_its_first_agent_only_what_the_agent_needs(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n"
                                                       "- second\n  FAKE: write b.txt B\n")
    lines = audited_run(work, tmp_path, where=True)
    agent = next(n for n, line in enumerate(lines)
                 if line.startswith("process ") and "stream-json" in line)
    # Each module's first import: where it came, and whether the main thread made it.
    imported = {line.split()[1]: (n, line.split()[2] == "True") for n, line in enumerate(lines)
                if line.startswith("import ")}
    assert imported.get("agentloop.run.attempt", (agent, False))[0] < agent, \
        "no task ran: is the run read right?"
    early = [m for m in LOADED_ONCE_AN_AGENT_WORKS if imported.get(m, (agent, True))[0] < agent]
    assert not early, f"{early} load before the first agent starts"
    missing = [m for m in (*LOADED_ONCE_AN_AGENT_WORKS, *NOT_BY_THE_MAIN_THREAD)
               if m not in imported]
    assert not missing, f"{missing} never loaded: is the run read right?"
    main = [m for m in NOT_BY_THE_MAIN_THREAD if imported[m][1] and imported[m][0] < agent]
    assert not main, f"the main thread loads {main} on its way to the first agent"
    never = [m for m in NEVER_IN_A_PLAIN_RUN if m in imported]
    assert not never, f"a plain run imports {never}: import them where their path begins"
    # shlex quotes the commands of lines that say what went wrong (a breach's repair, a
    # dropped option's note, a hook's command line): none on the way to a first agent.
    assert imported.get("shlex", (agent, True))[0] > agent, "shlex loads before the first agent"
    assert (work / "b.txt").read_text().strip() == "B"


# What a plain git run loads only at its end: the lane's removal (agentloop.vcs.git.teardown)
# and the closing lines' quoting (shlex). The main thread goes from its last landing to its exit
# with nothing to load: both are loaded while an agent works, by the thread that makes the
# records ahead (agentloop.run.ahead).
LOADED_FOR_THE_END = ("agentloop.vcs.git.teardown", "shlex")


def test_a_run_s_end_loads_no_module_on_the_main_thread(tmp_path: Path,
                                                         fake_claude: FakeClaude) -> None:
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n"
                                                       "- second\n  FAKE: write b.txt B\n")
    lines = audited_run(work, tmp_path, where=True)
    agent = next(n for n, line in enumerate(lines)
                 if line.startswith("process ") and "stream-json" in line)
    imported = {line.split()[1]: (n, line.split()[2] == "True") for n, line in enumerate(lines)
                if line.startswith("import ")}
    missing = [m for m in LOADED_FOR_THE_END if m not in imported]
    assert not missing, f"{missing} never loaded: is the run read right?"
    main = [m for m in LOADED_FOR_THE_END if imported[m][1]]
    assert not main, f"the main thread loads {main} on the way to the run's exit"
    assert all(imported[m][0] > agent for m in LOADED_FOR_THE_END), lines
    assert not (work / ".agent-loop" / "lanes").exists() or \
        not list((work / ".agent-loop" / "lanes").iterdir())
    assert (work / "b.txt").read_text().strip() == "B"


# The pathlib globs a run asks for before its first agent, with where each was asked.
GLOBS = """
import os, pathlib, runpy, sys
import agentloop.proc as proc
asked, started, glob, stream = [], [], pathlib.Path.glob, proc.stream
def globbed(self, pattern):
    if not started:
        caller = sys._getframe(1)
        asked.append(f"{caller.f_globals.get('__name__')}: {pattern}")
    return glob(self, pattern)
def streamed(*args, **kwargs):
    started.append(True)
    return stream(*args, **kwargs)
pathlib.Path.glob, proc.stream = globbed, streamed
leave = os._exit
def left(code):
    print(sorted(asked), flush=True)
    leave(code)
os._exit = left
sys.argv = ["agent-loop", "tasks.md", "--vcs", "git", "--no-distill"]
runpy.run_module("agentloop", run_name="__main__")
"""


def _audit_left_none(work: Path, script: str, last: str, holds: str) -> bool:
    """Runs `script` (a run of the plan in `work` with an audit hooked in, printing what it
    found as its last line) and checks the run did its last task (`last` holds `holds`);
    True when the audit found nothing (its line `[]`), else the assertion says what."""
    done = subprocess.run([sys.executable, "-c", script], cwd=work,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (work / last).read_text().strip() == holds, "the run did not do its last task"
    assert done.stdout.splitlines()[-1] == "[]", done.stdout.splitlines()[-1]
    return True


def test_a_run_globs_no_folder_on_its_way_to_the_first_agent(tmp_path: Path,
                                                             fake_claude: FakeClaude) -> None:
    # A pathlib glob compiles its pattern and builds its selectors (a tenth of a millisecond
    # or so each): the folders a run looks through before its first agent (the plans' states,
    # a killed writer's temporary files) are read with one os.scandir each
    # (agentloop.files.listing), finding the same entries.
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n")
    assert _audit_left_none(work, GLOBS, "a.txt", "A")


# Every record (agentloop.ondemand) a run makes, with the thread that made it and whether an
# agent had started by then.
RECORDS_MADE = """
import os, runpy, sys, threading, time
import agentloop.ondemand as ondemand
import agentloop.proc as proc
made, started, build, stream = [], [], ondemand._build, proc.stream
def built(cls, options):
    made.append((bool(started), threading.current_thread() is threading.main_thread(),
                 f"{cls.__module__}.{cls.__qualname__}"))
    return build(cls, options)
def settled(done):
    end = time.monotonic() + 30
    while not done() and time.monotonic() < end:
        time.sleep(0.01)
def streamed(argv, on_line, *args, **kwargs):
    # Nothing in the run waits for the records-ahead thread (a record it has not made yet is
    # made by the thread that needs it), and a loaded machine runs it late: the first agent's
    # start waits here for what that thread makes before it, and its first line for the rest.
    # A record the thread does not make is made by the main thread all the same, and said.
    if started:
        return stream(argv, on_line, *args, **kwargs)
    settled(lambda: any(name.endswith(".Deadline") for _, _, name in made))
    started.append(True)
    def first_line(line):
        settled(lambda: all(t.name != "agent-loop records ahead"
                            for t in threading.enumerate()))
        lines.append(on_line)
        on_line(line)
    lines = []
    return stream(argv, lambda line: (lines[0] if lines else first_line)(line), *args, **kwargs)
ondemand._build, proc.stream = built, streamed
leave = os._exit
def left(code):
    print(sorted(name for after, main, name in made if after and main), flush=True)
    leave(code)
os._exit = left
sys.argv = ["agent-loop", "tasks.md", "--vcs", "git", "--no-distill"]
runpy.run_module("agentloop", run_name="__main__")
"""


def test_the_main_thread_makes_no_record_once_the_first_agent_works(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    # The records of a task's and of the run's end (agentloop.ondemand: each made once, the
    # first time one is needed) are made by the records-ahead thread while the first agent
    # works (agentloop.run.ahead), not by the main thread between the last landing and the exit.
    work = make_repo(tmp_path / "project", "git", plan="- first\n  FAKE: write a.txt A\n"
                                                       "- second\n  FAKE: write b.txt B\n")
    assert _audit_left_none(work, RECORDS_MADE, "b.txt", "B")


LANE_AHEAD = """
import dataclasses, sys, time
from agentloop.proc.read_output import Deadline
from agentloop.run.ahead import make_ahead
make_ahead({lane!r})
deadline = time.monotonic() + 60
# Deadline: the last record the thread makes before it waits for the agent's start.
while not dataclasses.is_dataclass(Deadline) and time.monotonic() < deadline:
    time.sleep(0.005)
print(dataclasses.is_dataclass(Deadline), sorted(m for m in sys.modules if m.endswith(".lane")))
"""


@pytest.mark.parametrize("lane, loaded", [("git", ["agentloop.run.lane",
                                                   "agentloop.vcs.git.lane"]),
                                          ("jj", ["agentloop.run.lane", "agentloop.vcs.jj.lane"]),
                                          (None, ["agentloop.run.lane"])])
def test_the_records_made_ahead_load_the_lane_s_module_before_the_agent_starts(
        lane: str | None, loaded: list[str]) -> None:
    # The main thread opens the lane (agentloop.vcs.choose.open_lane) once its git is done, on
    # the first agent's way: the lane's module is loaded by then, beside that git, by the
    # thread that makes the first task's records (agentloop.run.ahead.make_ahead) before it
    # waits for the agent; a run in your checkout loads none.
    done = subprocess.run([sys.executable, "-c", LANE_AHEAD.format(lane=lane)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split(" ", 1) == ["True", f"{loaded}\n"], done.stdout


NO_THREAD = """
import threading
plain = threading.Thread.start
def refused(thread):
    if thread.name == "agent-loop records ahead":
        raise RuntimeError("can't start new thread")
    plain(thread)
threading.Thread.start = refused
from agentloop.run.ahead import make_ahead
from agentloop.vcs.choose import _lane_loaded
try:
    make_ahead("git")
except RuntimeError:
    pass
waiter = threading.Thread(target=_lane_loaded, args=("git",), daemon=True)
waiter.start()
waiter.join(20)
print("waits" if waiter.is_alive() else "opens")
"""


def test_a_lane_opens_when_the_thread_that_loads_its_module_could_not_start() -> None:
    # The loading of the lane's module is claimed before its thread starts, and the lane's
    # opening waits for it: a thread that cannot start (a limit on threads, a container's
    # pids.max) must not leave that wait claimed, with nothing ever to end it.
    done = subprocess.run([sys.executable, "-c", NO_THREAD], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "opens\n", done.stdout


# Every pattern a module of ours compiles as it loads, handed out wrapped so that its uses are
# counted; at the end, those no use asked for.
UNUSED_PATTERNS = """
import os, re, runpy, sys
compiled, plain = {}, re.compile
class Counted:
    def __init__(self, pattern, key):
        self.pattern, self.key = pattern, key
    def __getattr__(self, name):
        compiled[self.key] += 1
        return getattr(self.pattern, name)
def counted(pattern, flags=0):
    caller = sys._getframe(1)
    made = plain(pattern, flags)
    if caller.f_code.co_name != "<module>" or \\
            not caller.f_globals.get("__name__", "").startswith("agentloop"):
        return made
    key = f"{caller.f_globals['__name__']}: {pattern}"
    compiled[key] = 0
    return Counted(made, key)
re.compile = counted
leave = os._exit
def left(code):
    print(sorted(key for key, uses in compiled.items() if not uses), flush=True)
    leave(code)
os._exit = left
sys.argv = ["agent-loop", "tasks.md", "--vcs", "git", "--no-distill"]
runpy.run_module("agentloop", run_name="__main__")
"""


def test_a_plain_run_compiles_no_pattern_it_never_uses(tmp_path: Path,
                                                        fake_claude: FakeClaude) -> None:
    # A pattern compiled as its module loads costs the start of every run (a tenth of a
    # millisecond or more each); one that only some runs use is compiled by `re` when first
    # asked for (a string passed to re.match), where its use is.
    plan = "## One\n- first\n  FAKE: write a.txt A\n- second\n  FAKE: write b.txt B\n"
    work = make_repo(tmp_path / "project", "git", plan=plan)
    assert _audit_left_none(work, UNUSED_PATTERNS, "b.txt", "B")


def test_a_run_that_goes_on_asks_git_who_commits_once(tmp_path: Path,
                                                      fake_claude: FakeClaude) -> None:
    # The state says git, the run says auto (the default): the questions asked before the state
    # was read are the ones the state's VCS needs, not asked a second time.
    work = says_signing(make_repo(tmp_path / "project", "git",
                                  plan="- first\n  FAKE: write a.txt A\n"))
    git_calls(work, tmp_path / "first", "tasks.md", "--no-distill")
    (work / "tasks.md").write_text("- first\n  FAKE: write a.txt A\n- second\n"
                                   "  FAKE: write b.txt B\n")
    calls = git_calls(work, tmp_path / "again", "tasks.md", "--no-distill")
    asked = [c.split()[0] for c in calls if c.strip()]
    assert asked.count("var") == 1 and asked.count("config") == 1, calls
    assert (work / "b.txt").read_text().strip() == "B"
