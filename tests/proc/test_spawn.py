"""spawn.py through proc.run: a command started with posix_spawn (in our own folder) behaves as
one started with Popen (anywhere else), output, input, exits, errors and timeouts alike."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import pytest

from agentloop import proc
from agentloop.errors import ProcessError, ProgramNotFound
from agentloop.proc import spawn


@pytest.fixture(params=["spawned", "popen"])
def where(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder commands run in: ours (posix_spawn), or another one (Popen)."""
    ours, other = tmp_path / "ours", tmp_path / "other"
    ours.mkdir()
    other.mkdir()
    monkeypatch.chdir(ours)
    assert spawn.usable(ours) and not spawn.usable(other)
    return ours if request.param == "spawned" else other


def run(where: Path, script: str, **kwargs: object) -> proc.Completed:
    return proc.run([sys.executable, "-c", script], cwd=where, **kwargs)  # type: ignore[arg-type]


def test_output_of_any_size_on_both_streams_without_a_deadlock(where: Path) -> None:
    script = ("import sys\nfor i in range(2000):\n    sys.stdout.write('o' * 100 + '\\n')\n"
              "    sys.stderr.write('e' * 100 + '\\n')\n")
    done = run(where, script)
    assert done.stdout == ("o" * 100 + "\n") * 2000 and done.stderr == ("e" * 100 + "\n") * 2000


def test_input_of_any_size_while_it_writes(where: Path) -> None:
    data = bytes(range(256)) * 8192  # 2 MiB, every byte value
    script = ("import sys, hashlib\nd = sys.stdin.buffer.read()\n"
              "sys.stdout.write('x' * 300000)\nprint(len(d), hashlib.sha256(d).hexdigest())")
    done = run(where, script, input=data)
    import hashlib
    assert done.stdout.endswith(f"{len(data)} {hashlib.sha256(data).hexdigest()}\n")


def test_input_it_does_not_read_is_no_error(where: Path) -> None:
    done = run(where, "print('ignored my input')", input=b"y" * (1 << 20))
    assert done.stdout == "ignored my input\n"


def test_the_folder_exit_codes_and_bytes(where: Path) -> None:
    assert run(where, "import os; print(os.getcwd())").stdout.strip() == str(where)
    done = run(where, "import sys; sys.stdout.buffer.write(b'caf\\xe9'); sys.exit(3)",
               check=False)
    assert done.returncode == 3 and os.fsencode(done.stdout) == b"caf\xe9"
    with pytest.raises(ProcessError, match=r"failed \(exit 4\): said so"):
        run(where, "import sys; sys.stderr.write('said so'); sys.exit(4)")
    done = run(where, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", check=False)
    assert done.returncode == -signal.SIGKILL


def test_a_session_of_its_own_and_sigpipe_as_a_shell_has_it(where: Path) -> None:
    assert run(where, "import os; print(os.getsid(0) == os.getpid())").stdout == "True\n"
    # Python ignores SIGPIPE; a child (here cat, reading its own status) must not inherit that.
    status = proc.run(["cat", "/proc/self/status"], cwd=where).stdout
    ignored = int(next(line for line in status.splitlines() if line.startswith("SigIgn:"))
                  .split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))


def test_nothing_but_the_three_streams_is_inherited(where: Path) -> None:
    """Found by review: posix_spawn handed on what we were started with (a shell's `9>lock`)."""
    fd = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(fd, True)
    try:
        assert run(where, f"import os; os.fstat({fd})", check=False).returncode != 0
        assert proc.run(["sh", "-c", f"test -e /proc/self/fd/{fd}"], cwd=where,
                        check=False).returncode == 1
        seen: list[bytes] = []
        proc.stream(["sh", "-c", f"test -e /proc/self/fd/{fd} && echo leaked || echo closed"],
                    seen.append, cwd=where, stdin=b"the prompt")
        assert seen == [b"closed\n"]
    finally:
        os.close(fd)


@pytest.mark.parametrize("how", ["marked", "listed"])
def test_one_opened_later_is_not_inherited_either(how: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """What a library opens inheritable after the first child is closed in the next one too:
    marked close-on-exec with the rest in one call where the kernel has close_range, else
    found in /proc at each start."""
    monkeypatch.chdir(tmp_path)
    import ctypes  # noqa: F401  (a run has it loaded by its first agent: agentloop.proc.reaper)

    if how == "listed":
        monkeypatch.setattr(spawn, "_mark", None)
        monkeypatch.setattr(spawn, "_looked", True)
    elif spawn._marker() is None:
        pytest.skip("no close_range here")
    probe = "test -e /proc/self/fd/{} && echo leaked || echo closed"
    assert proc.run(["true"]).returncode == 0  # a child before the descriptor exists
    for _ in range(2):
        fd = os.open(os.devnull, os.O_RDONLY)
        os.set_inheritable(fd, True)
        try:
            assert proc.run(["sh", "-c", probe.format(fd)]).stdout == "closed\n"
            seen: list[bytes] = []
            proc.stream(["sh", "-c", probe.format(fd)], seen.append)
            assert seen == [b"closed\n"]
            # Marked in our process (close_range) or only closed in the child (the listing).
            assert os.get_inheritable(fd) is (how == "listed")
        finally:
            os.close(fd)


def test_a_parent_that_ignores_sigchld(where: Path) -> None:
    """Found by review: children the kernel reaps itself have no status to wait for (no
    crash), and a child must not inherit the ignored SIGCHLD (agentloop.__main__ puts it
    back for agent-loop itself, so exit codes count: tests/cli/test_bad_input.py)."""
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert run(where, "print('reaped by the kernel')").stdout == "reaped by the kernel\n"
        status = proc.run(["cat", "/proc/self/status"], cwd=where).stdout
    finally:
        signal.signal(signal.SIGCHLD, previous)
    if where.name == "ours":  # Popen leaves it as it was
        ignored = int(next(line for line in status.splitlines() if line.startswith("SigIgn:"))
                      .split()[1], 16)
        assert not ignored & (1 << (signal.SIGCHLD - 1))


def test_a_missing_program_and_a_bad_argument_are_one_line_each(where: Path) -> None:
    with pytest.raises(ProgramNotFound, match="no-such-program-here not found"):
        proc.run(["no-such-program-here"], cwd=where)
    with pytest.raises(ProcessError, match="in its command line"):
        proc.run(["echo", "a\0b"], cwd=where)
    assert proc.run(["echo", "found on PATH"], cwd=where).stdout == "found on PATH\n"


def test_a_command_past_its_timeout_is_killed(where: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ProcessError, match="timed out after 0.5s"):
        run(where, "import time; time.sleep(30)", timeout=0.5)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("size", [0, 10, 65536, 65537, 1 << 20])
def test_a_prompt_of_any_size_reaches_the_agent_whole(where: Path, size: int) -> None:
    """Small ones through a pipe, big ones through a file: byte for byte either way."""
    prompt = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    got: list[bytes] = []
    script = "import sys, hashlib; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"
    done = proc.stream([sys.executable, "-c", script], got.append, cwd=where, stdin=prompt)
    import hashlib
    assert done.returncode == 0
    assert got == [hashlib.sha256(prompt).hexdigest().encode() + b"\n"]


def test_each_streamed_run_has_the_end_of_its_own_stderr_only(where: Path) -> None:
    """Where the subreaper ends what a run leaves, one emptied file serves run after run: a
    long stderr is never part of the next, shorter one's tail."""
    noisy = "import sys; sys.stderr.write('first run ' * 20000)"
    first = proc.stream([sys.executable, "-c", noisy], lambda line: None, cwd=where)
    assert first.stderr_tail.endswith("first run ")
    quiet = "import sys; sys.stderr.write('second run\\n')"
    second = proc.stream([sys.executable, "-c", quiet], lambda line: None, cwd=where)
    assert second.stderr_tail == "second run\n"
    silent = proc.stream([sys.executable, "-c", "pass"], lambda line: None, cwd=where)
    assert silent.stderr_tail == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")
def test_the_stderr_file_is_kept_for_the_next_run(where: Path) -> None:
    from agentloop.proc import streamed

    proc.stream([sys.executable, "-c", "pass"], lambda line: None, cwd=where)
    kept = list(streamed._spare_errors)
    assert kept, "the run's stderr file was closed, not kept for the next run"
    proc.stream([sys.executable, "-c", "import sys; sys.stderr.write('x')"], lambda line: None,
                cwd=where)
    assert streamed._spare_errors == kept  # the same file, taken and given back


def test_a_program_found_on_path_runs_as_named_and_is_found_again_once_moved(
        where: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's program is looked up on PATH once, not at every run; it still sees the name
    it was called by, and one that moves to another folder of PATH (a reinstall) between runs
    is found there."""
    first, second = tmp_path / "bin", tmp_path / "elsewhere"
    first.mkdir()
    second.mkdir()
    tool = first / "agent-here"
    tool.write_text(f"#!{sys.executable}\nimport sys, os\nprint(sys.argv[0], os.getcwd())\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(first), str(second), os.environ["PATH"]]))
    got: list[bytes] = []
    proc.stream(["agent-here"], got.append, cwd=where)
    assert got == [f"{tool} {where}\n".encode()]  # a script's argv[0] is the path it ran as
    tool.rename(second / "agent-here")
    got.clear()
    proc.stream(["agent-here"], got.append, cwd=where)
    assert got == [f"{second / 'agent-here'} {where}\n".encode()]


def test_each_child_gets_the_environment_as_it_is_when_it_starts(
        where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The bytes of the last environment are kept for the next child: a dict changed in place
    # since, and os.environ changed since, must still reach the child as they are now.
    show = "import os; print(os.environ.get('AL_SPAWN_PROBE'), os.environ.get('AL_OTHER'))"
    env = {**os.environ, "AL_SPAWN_PROBE": "one"}
    assert run(where, show, env=env).stdout.split() == ["one", "None"]
    assert run(where, show, env=env).stdout.split() == ["one", "None"]
    env["AL_SPAWN_PROBE"] = "two"
    env["AL_OTHER"] = "é"
    assert run(where, show, env=env).stdout.split() == ["two", "é"]
    monkeypatch.setenv("AL_SPAWN_PROBE", "inherited")
    assert run(where, show).stdout.split() == ["inherited", "None"]
    monkeypatch.setenv("AL_SPAWN_PROBE", "changed")
    assert run(where, show).stdout.split() == ["changed", "None"]
    monkeypatch.delenv("AL_SPAWN_PROBE")
    assert run(where, show).stdout.split() == ["None", "None"]


def test_an_agent_gets_its_environment_as_it_is_at_each_start(
        where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The run's agent environment is one dict for every task: kept as bytes, or not handed
    # over at all when it is just ours; changed in place, or ours changed, the child sees it.
    show = ["sh", "-c", "echo ${AL_SPAWN_PROBE-unset} ${AL_OTHER-unset}"]

    def seen(env: dict[str, str] | None) -> list[str]:
        got: list[bytes] = []
        proc.stream(show, got.append, cwd=where, env=env)
        return b"".join(got).decode().split()

    env = {**os.environ, "AL_SPAWN_PROBE": "one"}
    assert seen(env) == seen(env) == ["one", "unset"]
    env["AL_OTHER"] = "é"
    assert seen(env) == ["one", "é"]
    ours = dict(os.environ)
    assert seen(ours) == ["unset", "unset"]
    monkeypatch.setenv("AL_SPAWN_PROBE", "changed")
    assert seen(ours) == ["unset", "unset"]  # the dict, not ours as it is now
    assert seen(None) == ["changed", "unset"]


def test_a_command_started_runs_while_the_caller_goes_on(where: Path, tmp_path: Path) -> None:
    # proc.start: the command runs from the start on; its answer is run's, once waited for.
    flag = tmp_path / "go"
    answer = proc.start(["sh", "-c", f"while [ ! -e '{flag}' ]; do sleep 0.01; done; echo seen; "
                         "echo said >&2; exit 3"], cwd=where)
    flag.touch()  # only the caller's going on lets it end
    done = answer()
    assert (done.returncode, done.stdout, done.stderr) == (3, "seen\n", "said\n")
    with pytest.raises(ProgramNotFound):
        proc.start(["agent-loop-no-such-program"], cwd=where)



@pytest.mark.parametrize("steps", [1, 2])
def test_a_stop_in_the_middle_of_closing_a_stream_leaves_it_to_be_collected_again(
        steps: int) -> None:
    # A Ctrl+C raised between two steps of closing a stream at its end left it unwatched but
    # counted as open: the stop's own wait for the command (proc.commands) polled no stream at
    # all, with no timeout and the stops ignored, and the run never ended.
    child = spawn.Spawned([sys.executable, "-c", "print('out')"], None, False)
    done = 0

    def stop_after(frame: FrameType, event: str, arg: object) -> None:
        nonlocal done
        if event == "c_return" and frame.f_code is spawn.Spawned._close.__code__:
            done += 1
            if done == steps:  # as a signal handled the instant that call returned
                sys.setprofile(None)
                raise KeyboardInterrupt

    sys.setprofile(stop_after)
    try:
        with pytest.raises(KeyboardInterrupt):
            child.communicate()
    finally:
        sys.setprofile(None)
    assert child.communicate(timeout=5)[0] in (b"out\n", b"")
    assert child.wait() == 0



def test_two_threads_waiting_on_one_killed_child_both_read_its_signal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A --parallel stop waits for an agent on the main thread while its lane polls it: the
    # thread whose waitpid came second was told there was no such child, took that for an exit
    # code of 0, and wrote it over the code of the agent the stop had just killed.
    with open(os.devnull, "wb") as errors:
        child = spawn.Streaming(["sleep", "60"], None, None, errors.fileno())
    assert child.stdout is not None
    child.stdout.close()
    os.kill(child.pid, signal.SIGKILL)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # ended, not yet reaped
    real, read = os.waitpid, []

    def lane_polls_first(pid: int, options: int) -> tuple[int, int]:
        # The lane's poll comes between this thread's look at the child and its waitpid (run
        # to its end right there: no sleep decides the order).
        monkeypatch.setattr(os, "waitpid", real)
        lane = threading.Thread(target=lambda: read.append(child.poll()))
        lane.start()
        lane.join()
        return real(pid, options)

    monkeypatch.setattr(os, "waitpid", lane_polls_first)
    assert child.wait() == -signal.SIGKILL
    lane = threading.Thread(target=lambda: read.append(child.wait()))
    lane.start()
    lane.join()
    assert read[-1] == child.returncode == -signal.SIGKILL
    assert read[0] in (None, -signal.SIGKILL)
