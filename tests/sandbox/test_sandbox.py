"""agentloop.sandbox: the policy read from real git and jj working copies, bubblewrap's mounts in
their order, the refusal where there is no sandbox, and the stop of everything inside it.

What the agents themselves can and cannot do inside is in tests/sandbox/test_sandbox_real.py (the
real CLIs against the fake APIs)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentloop import proc
from agentloop.sandbox import Policy, Sandbox, SandboxUnavailable, tool_for
from agentloop.sandbox.bubblewrap import Bubblewrap
from tests.sandbox.test_sandbox_real import needs_bwrap
from tests.support.fake_agent import FakeClaude
from tests.support.repos import git, init_repo, jj


def policy_for(box: Sandbox, workdir: Path, homes: list[Path], writes: bool) -> Policy:
    """The policy the sandbox gives an agent run in `workdir`."""
    from agentloop.sandbox.policy import policy_for as made

    return made(box.root, box.state_dir, box.home, box.hide, workdir, homes, writes)


def git_lane(tmp_path: Path) -> tuple[Path, Path, Sandbox]:
    """A git repository with one lane (a worktree under .agent-loop/lanes) and its sandbox."""
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    init_repo(root, "git")
    lane = root / ".agent-loop" / "lanes" / "1-a"
    git(root, "worktree", "add", "-q", str(lane), "-b", "agent-loop/1-a")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".env").write_text("TOKEN=x\n")
    (root / ".env.local").write_text("TOKEN=y\n")
    return root, lane, Sandbox(Bubblewrap(), root, root / ".agent-loop", home, ("~/notes",))


def test_a_git_lane_writes_its_worktree_and_the_shared_objects_never_config_or_hooks(
        tmp_path: Path) -> None:
    root, lane, box = git_lane(tmp_path)
    claude_home = box.home / ".claude"
    policy = policy_for(box, lane, [claude_home], writes=True)
    dot = root / ".git"
    assert set(policy.writable) == {lane, dot / "worktrees" / "1-a", dot / "objects",
                                    dot / "refs", dot / "logs", claude_home}
    # The user's checkout, the state folder (other lanes with it) and the home stay readable.
    # Its .git file read-only: never pointed at a git folder (and config) of the agent's own.
    assert set(policy.protected) == {root, root / ".agent-loop", box.home.resolve(),
                                     lane / ".git", dot / "config", dot / "hooks"}
    assert set(policy.hidden) == {box.home.resolve() / ".ssh", box.home.resolve() / ".env",
                                  root / ".env.local"}


def test_the_repository_root_is_the_working_copy_of_a_one_group_run(tmp_path: Path) -> None:
    root, _, box = git_lane(tmp_path)
    policy = policy_for(box, root, [], writes=True)
    # .git a mount of its own: held in place, never moved away with its protected files.
    assert policy.writable == (root, root / ".git")
    assert {root / ".agent-loop", root / ".git" / "config", root / ".git" / "hooks"} <= \
        set(policy.protected)
    assert root not in policy.protected
    # Its own .env is the agent's to read; the home's is not.
    assert root / ".env.local" not in policy.hidden


def test_the_reviewer_and_helper_calls_write_only_their_own_home(tmp_path: Path) -> None:
    _, lane, box = git_lane(tmp_path)
    policy = policy_for(box, lane, [box.home / ".codex"], writes=False)
    assert policy.writable == (box.home.resolve() / ".codex",)


@needs_bwrap
def test_a_helper_call_in_a_repository_under_tmp_reads_it_and_writes_nothing(
        tmp_path: Path) -> None:
    # A helper call (and the reviewer in your checkout) works in the repository root, which it
    # does not write: the private /tmp hid it, and bubblewrap could not even enter it.
    root, _, box = git_lane(tmp_path)
    assert str(root).startswith("/tmp/"), root
    argv = box.wrap(["sh", "-c", "cat README.md; echo x > y.txt"], root, [], writes=False)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.stdout == "hello\n", done.stderr
    assert "Read-only file system" in done.stderr and not (root / "y.txt").exists()


def test_a_jj_workspace_writes_the_repository_with_its_operation_log(tmp_path: Path) -> None:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    init_repo(root, "jj")
    lane = root / ".agent-loop" / "lanes" / "1-a"
    lane.parent.mkdir(parents=True)
    jj(root, "workspace", "add", "--name", "agent-loop-1-a", str(lane))
    box = Sandbox(Bubblewrap(), root, root / ".agent-loop", tmp_path / "home")
    policy = policy_for(box, lane, [], writes=True)
    assert lane in policy.writable
    assert root / ".jj" / "repo" in policy.writable   # store, op_store, op_heads, index
    store = root / ".jj" / "repo" / "store"
    if (store / "git_target").exists():  # kept in git: its objects and refs too
        git_dir = (store / (store / "git_target").read_text().strip()).resolve()
        assert git_dir / "objects" in policy.writable


def test_bubblewrap_lays_mounts_from_the_shallowest_path_to_the_deepest() -> None:
    root = Path("/r")
    policy = Policy(root, writable=(root, root / ".git" / "objects"),
                    protected=(root / ".agent-loop", root / ".git" / "config", Path("/")),
                    hidden=(Path("/h/.ssh"),))
    argv = Bubblewrap("bwrap").wrap(["claude", "-p"], policy)
    laid = [argv[i + 1] for i, a in enumerate(argv)
            if a in ("--bind", "--ro-bind") and argv[i + 1] != "/dev/null"]
    assert laid.index("/r") < laid.index("/r/.agent-loop") < laid.index("/r/.git/config")
    assert argv[-4:] == ["/r", "--", "claude", "-p"]
    assert {"--unshare-all", "--share-net", "--die-with-parent", "--new-session"} <= set(argv)


def test_macos_is_refused_in_one_line_until_it_has_a_tool() -> None:
    with pytest.raises(SandboxUnavailable, match="not available on darwin yet"):
        tool_for("darwin")


def test_without_bubblewrap_the_run_refuses_before_any_agent_runs(
        tmp_path: Path, fake_claude: FakeClaude) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text("- FAKE: write a.txt a\n")
    # Only the fake claude on PATH: no bwrap.
    env = {**os.environ, "PATH": str(fake_claude.bin.parent), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none",
                           "--sandbox"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "install the package 'bubblewrap'" in done.stderr
    assert fake_claude.calls() == []
    assert not (work / "a.txt").exists()


@needs_bwrap
def test_dry_run_says_what_the_sandbox_allows(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tasks.md").write_text("- one task\n")
    done = subprocess.run([sys.executable, "-m", "agentloop", "tasks.md", "--vcs", "none",
                           "--dry-run", "--sandbox", "--sandbox-hide", "~/private"], cwd=work,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "sandbox: on (bubblewrap): agents write only their working copy" in done.stdout
    assert "~/.ssh" in done.stdout and "~/private" in done.stdout
    assert "sandbox: the agent's own layers: Claude Code's own: off for tasks" in done.stdout


@needs_bwrap
def test_a_timeout_stops_everything_inside_the_sandbox_through_its_one_process(
        tmp_path: Path) -> None:
    _, lane, box = git_lane(tmp_path)
    # Deaf to SIGINT and SIGTERM, with a child of its own in a session of its own.
    script = "(setsid sleep 4242.7 &); trap '' INT TERM; sleep 4242.8"
    started = time.monotonic()
    done = proc.stream(box.wrap(["sh", "-c", script], lane), lambda line: None, cwd=lane,
                       timeout=0.5)
    assert done.timed_out
    assert time.monotonic() - started < proc.STOP_GRACE_SECONDS + 5
    alive = subprocess.run(["pgrep", "-f", "sleep 4242.[78]"], capture_output=True, text=True)
    assert alive.stdout == "", alive.stdout


def sleepers(mark: str) -> list[int]:
    """The pids of `sleep <mark>` processes (this test's own, by their unique argument)."""
    done = subprocess.run(["pgrep", "-f", f"^sleep {mark}$"], capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split()]


@needs_bwrap
def test_whatever_kills_the_sandbox_process_kills_everything_inside(tmp_path: Path) -> None:
    _, lane, box = git_lane(tmp_path)
    # Started by plain subprocess: no process group stop, no subreaper, only the sandbox.
    outer = subprocess.Popen(box.wrap(["sh", "-c", "(setsid sleep 4242.9 &); sleep 4242.9"],
                                      lane), cwd=lane, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while len(sleepers("4242.9")) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(sleepers("4242.9")) == 2
    outer.kill()
    outer.wait()
    deadline = time.monotonic() + 10
    while sleepers("4242.9") and time.monotonic() < deadline:
        time.sleep(0.02)
    left = sleepers("4242.9")
    for pid in left:
        os.kill(pid, 9)
    assert left == []


def installed_under_tmp(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(tool, venv, node_modules): a script under tmp_path whose interpreter is a virtual
    environment's python there, and an npm-style `.bin` link into a node_modules folder there,
    as a checkout in a temporary folder has them (CI's copy of this repository does)."""
    venv = tmp_path / "opt" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).resolve().parent}\n")
    python = venv / "bin" / "python"
    python.symlink_to(Path(sys.executable).resolve())
    tool = venv / "bin" / "tool"
    tool.write_text(f"#!{python}\nprint('tool ran')\n")
    tool.chmod(0o755)
    package = tmp_path / "opt" / "cli" / "node_modules" / "agent" / "bin" / "agent.sh"
    package.parent.mkdir(parents=True)
    package.write_text("#!/bin/sh\necho agent ran\n")
    package.chmod(0o755)
    dot_bin = tmp_path / "opt" / "cli" / "node_modules" / ".bin"
    dot_bin.mkdir()
    (dot_bin / "agent").symlink_to("../agent/bin/agent.sh")
    return tool, venv, package.parents[2]


def test_a_program_installed_under_tmp_stays_readable_and_nothing_else_there(
        tmp_path: Path) -> None:
    from agentloop.sandbox.policy import program_needs

    tool, venv, modules = installed_under_tmp(tmp_path)
    assert program_needs(str(tool), (tmp_path,)) == [venv]
    assert set(program_needs(str(modules / ".bin" / "agent"), (tmp_path,))) == {modules}
    # Outside the private folders nothing is added: the read-only system shows it already.
    assert program_needs(str(tool), (tmp_path / "elsewhere",)) == []
    assert program_needs("no-such-program-here") == []


@needs_bwrap
def test_an_agent_whose_interpreter_lives_under_tmp_starts_inside_the_sandbox(
        tmp_path: Path) -> None:
    _, lane, box = git_lane(tmp_path)
    tool, _, modules = installed_under_tmp(tmp_path)
    if not any(str(tmp_path.resolve()).startswith(f"{d}/") for d in ("/tmp", "/var/tmp")):
        pytest.skip("the test's temporary folder is not under /tmp: nothing is hidden")
    for program, said in ((str(tool), "tool ran"), (str(modules / ".bin" / "agent"),
                                                     "agent ran")):
        done = subprocess.run(box.wrap([program], lane), capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == said, done.stderr
    # The rest of that temporary folder stays out of sight.
    secret = tmp_path / "opt" / "secret.txt"
    secret.write_text("x")
    done = subprocess.run(box.wrap(["cat", str(secret)], lane), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0


def test_a_bwrap_that_cannot_make_a_sandbox_is_refused_in_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    with pytest.raises(SandboxUnavailable, match="user namespaces off.*No permissions to "
                       "create new namespace"):
        Bubblewrap(str(fake)).check()
