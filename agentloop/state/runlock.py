"""The run lock: one agent-loop run at a time per repository, and who holds it.

Two locks, each with a pid file beside it: `.agent-loop/run.lock`, which every run takes first,
and one in the VCS's own folder, since an agent's `git clean -fdx` deletes `.agent-loop/` and
the lock file in it, never `.git/`. The store holds them for a run (agentloop.state.store's
`lock`); a run that finds another holding them says whose they are. A third, `plan.lock` in
the plan's own folder, says which plan the run works on (`working`, for --dry-run): it keeps no
second run out (the first lock does).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentloop.errors import StateError, StateLocked
from agentloop.files.lock import is_held, try_lock
from agentloop.files.pid_file import live_pid
from agentloop.files.stamp import stat_or_none
from agentloop.ondemand import dataclass_now as dataclass
from agentloop.state import plain
from agentloop.vcs import STATE_DIR
from agentloop.vcs.lanes import LANES

# A run that loses the race for the lock waits this long at most for the winner's pid to show.
HOLDER_WAIT_SECONDS = 2.0
# A lock found held is tried again for this long before the run is refused: --dry-run's and
# --status's look (is_held) takes a free lock for an instant, and a run starting in that
# instant must not be turned away by it; a run's own hold lasts the whole run.
PEEK_SECONDS = 0.5
PLAN_LOCK = "plan.lock"   # in the plan's folder: held by the run working on that plan


def working(base: Path, plan_dir: Path) -> tuple[int, bool] | None:
    """Whether a run works in the repository whose store is `base` now, as the run lock says
    (a live pid in run.pid alone may be a killed run's, reused): its pid, and whether it
    works on the plan whose folder is `plan_dir`; None when no run does."""
    pid = live_pid(base / "run.pid")
    # The pid first: no look at the lock (which takes it for an instant when it is free; a
    # run starting then tries again, RunLock._take) when no live process names itself its
    # holder.
    if pid is None or not is_held(base / "run.lock"):
        return None
    return pid, is_held(plan_dir / PLAN_LOCK)


def run_of_plan(base: Path, plan_dir: Path, name: str) -> int:
    """The pid of the run working on the plan named `name` (its folder `plan_dir`) now, as the
    run lock says, for a stop asked of that plan: StateError, in one line, when no run works
    or the run there works on another plan (a stop of this one must not reach it)."""
    found = working(base, plan_dir)
    if found is None:
        raise StateError(f"no run of {name} is going on here")
    pid, here = found
    if not here:
        raise StateError(f"no run of {name} is going on here: the run there (pid "
                         f"{pid}{_command_of(str(pid))}) works on another plan, and goes on")
    return pid


def running(root: Path, base: Path) -> bool:
    """Whether a run holds the repository at `root` (its store `base`) now, as either of its
    locks says: `.agent-loop/run.pid` may be gone while the run works (an agent's `git clean
    -fdx`), the one in `.git/` or `.jj/` never is. No lock is looked at (see `working`) unless a
    live process names itself its holder."""
    vcs = (root / ".git", root / ".jj")
    pairs = [(base / "run.lock", base / "run.pid"),
             *((d / "agent-loop.lock", d / "agent-loop.pid") for d in vcs)]
    return any(live_pid(pid) is not None and is_held(lock) for lock, pid in pairs)


@dataclass(frozen=True)
class _Held:
    """A lock this run holds: its descriptor, its file, the file's identity then, its pid file."""

    fd: int
    path: Path
    inode: tuple[int, int]   # (st_dev, st_ino) of the file locked
    pid_path: Path


def _inode(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _inode_of(path: Path) -> tuple[int, int] | None:
    """The identity of the file at `path`, or None when there is none."""
    st = stat_or_none(path)
    return (st.st_dev, st.st_ino) if st is not None else None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _cannot_write(path: Path, exc: OSError) -> StateError:
    return StateError(f"cannot write {path}: {exc.strerror or str(exc)}")


class RunLock:
    """The run locks of the repository at `root` (`base`: its `.agent-loop/`) this run holds."""

    def __init__(self, root: Path, base: Path, plan_dir: Path | None = None) -> None:
        self.root, self.base = root, base
        self.plan_dir = plan_dir   # the plan's folder, where its plan.lock is (`working`)
        self._held: list[_Held] = []   # the locks held, each with its pid file
        self._plan: tuple[int, tuple[int, int]] | None = None   # plan.lock: descriptor, file
        self.lost = False   # another run took a lock while this one worked: it writes now

    def take(self) -> None:
        """Take `.agent-loop/run.lock`, then the VCS folder's; StateLocked, naming the holder's
        pid, when another run holds either, or when this folder is a lane of a run that works."""
        _refuse_in_a_lane(self.root)
        self._take(self.base / "run.lock", self.base / "run.pid")
        self._mark_plan()
        self.hold_vcs()

    def _mark_plan(self) -> None:
        """Hold the plan's plan.lock (again, if it was deleted): which plan this run works on,
        for `working`. It keeps no run out, so a lock not taken is no error: --dry-run then
        says the run may work on another plan."""
        if self.plan_dir is None:
            return
        path = self.plan_dir / PLAN_LOCK
        if self._plan is not None:
            if _inode_of(path) == self._plan[1]:
                return
            os.close(self._plan[0])
            self._plan = None
        try:
            fd = try_lock(path)
        except OSError:
            return   # its folder deleted (a `git clean -fdx`): taken again next time
        if fd is not None:
            self._plan = fd, _inode(fd)

    def release(self) -> None:
        """Let go of every lock held, its pid file first."""
        if self._plan is not None:
            os.close(self._plan[0])
            self._plan = None
        while self._held:
            held = self._held.pop()
            try:
                held.pid_path.unlink(missing_ok=True)
            except OSError:
                pass  # the lock is what counts, and it goes with us; a stale pid is never shown
            os.close(held.fd)  # and the lock with it

    def hold_vcs(self) -> None:
        """Take the lock in `.git/` or `.jj/` too, once there is one (a run that made the
        repository itself takes it then)."""
        vcs_dir = next((d for d in (self.root / ".git", self.root / ".jj") if d.is_dir()), None)
        if vcs_dir is not None and all(h.path.parent != vcs_dir for h in self._held):
            self._take(vcs_dir / "agent-loop.lock", vcs_dir / "agent-loop.pid")

    def _take(self, lock_path: Path, pid_path: Path) -> None:
        deadline = time.monotonic() + PEEK_SECONDS
        while True:
            try:
                lock = try_lock(lock_path)
            except OSError as exc:
                raise _cannot_write(lock_path, exc) from None
            if lock is not None or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if lock is None:
            pid = self._holder(pid_path)
            raise StateLocked(f"another agent-loop run holds {self.root} (pid {pid}"
                              f"{_command_of(pid)}); wait for it or stop it first")
        self._held.append(_Held(lock, lock_path, _inode(lock), pid_path))
        try:
            # Atomic, so a run that lost the race never reads it empty or half written.
            _write_atomic(pid_path, f"{os.getpid()}\n")
        except OSError as exc:
            raise _cannot_write(pid_path, exc) from None

    def keep(self) -> list[Path]:
        """Between tasks: whether each lock file is still the one this run locked (one stat
        each, no process). One deleted or replaced (an agent's `rm`, a `git clean -fdx`) and
        held by nobody is taken again: its path is returned. StateLocked when another run
        holds it now: that run writes the state from here on, this one stops."""
        if self.lost:  # said once; every later lane asking to start is refused too
            raise StateLocked("another agent-loop run took this plan's lock while this run "
                              "worked: this run stops before its next task")
        self._mark_plan()
        taken, lost = [], []
        for i, held in enumerate(self._held):
            try:
                if _inode_of(held.path) == held.inode:
                    continue
                if held.path.parent == self.base:  # never a deleted .git: git would look
                    self.base.mkdir(parents=True, exist_ok=True)  # upward for another one
                fd = try_lock(held.path)
            except OSError:
                continue  # cannot look or lock: the run goes on as it would have before
            if fd is None:
                lost.append(held)
                continue
            os.close(held.fd)
            self._held[i] = _Held(fd, held.path, _inode(fd), held.pid_path)
            try:
                _write_atomic(held.pid_path, f"{os.getpid()}\n")
            except OSError:
                pass  # the lock is what counts; a second run then says "pid unknown"
            taken.append(held.path)
        if lost:
            self.lost = True
            for held in lost:  # its pid file is the other run's now: never unlinked by us
                self._held.remove(held)
                os.close(held.fd)
            raise StateLocked(
                f"another agent-loop run (pid {self._holder(lost[0].pid_path)}) took "
                f"{plain.relative(lost[0].path, self.root)} while this run worked (its lock "
                f"file was deleted): this run stops before its next task, its state saved; let "
                f"that run finish")
        return taken

    def _holder(self, pid_path: Path) -> str:
        """The lock holder's pid from its pid file, once that names a live process.

        The holder writes its pid just after it takes the lock, so a run started at the same
        instant may find no file yet, or the pid a killed run left there: it waits a moment.
        """
        deadline = time.monotonic() + HOLDER_WAIT_SECONDS
        while True:
            pid = live_pid(pid_path)
            if pid is not None:
                return str(pid)
            if time.monotonic() > deadline:
                return "unknown"
            time.sleep(0.01)


def _refuse_in_a_lane(root: Path) -> None:
    """StateLocked when `root` is a lane of a run that works now (an agent running agent-loop
    in its own lane): the lane is a folder of its own with no lock of that run in it, and a
    run there would pay agents outside that run's count and --budget, land on the lane's branch
    and, as its agents run agent-loop again in their lanes, start runs without end."""
    lanes = root.parent
    if lanes.name != LANES or lanes.parent.name != STATE_DIR:
        return
    base = lanes.parent
    outer = base.parent
    if not running(outer, base):
        return   # a lane a stopped run left: nothing works on it
    pid = live_pid(base / "run.pid") or live_pid(outer / ".git" / "agent-loop.pid") or \
        live_pid(outer / ".jj" / "agent-loop.pid")
    said = f" (pid {pid}{_command_of(str(pid))})" if pid is not None else ""
    raise StateLocked(f"{root} is a lane of the agent-loop run in {outer}{said}: a run here "
                      "would pay agents outside that run's count and budget; run agent-loop "
                      f"from {outer} once that run ends")


def _command_of(pid: str) -> str:
    """": " and the holder's command line, for the person refused to know which plan's run to
    wait for (two plans in one repository run one after the other); "" where /proc cannot say
    (not Linux, the process gone)."""
    try:
        args = Path(f"/proc/{int(pid)}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return ""
    words = [w for w in args.split("\0") if w]
    if words and Path(words[0]).name.startswith("python"):
        words = words[1:]   # the interpreter of a console script or of `python -m agentloop`
    if words and words[0] == "-m":
        words = ["agent-loop", *words[2:]]
    elif words:
        words[0] = Path(words[0]).name
    # Its words as one line a terminal shows as they are: a `--check` or `--on-finish` script
    # of several lines (or an escape) quoted, and what `--env` gives the agent (a key, often)
    # never printed.
    words = [f"{w.partition('=')[0]}=..." if prev == "--env" and "=" in w else
             f"--env={w[6:].partition('=')[0]}=..." if w.startswith("--env=") else
             w if w.isprintable() else repr(w) for prev, w in zip(["", *words], words)]
    line = " ".join(words)
    return f": {line[:117]}..." if len(line) > 120 else f": {line}" if line else ""
