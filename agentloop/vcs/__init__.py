"""Version control behind one protocol: the runner begins, finishes and abandons changes without
knowing whether jj, git or nothing is underneath (the protocol and its change record are in
`vcs.protocol`; this module holds only plain functions, so that importing it is cheap).
"""

from __future__ import annotations

from pathlib import Path

# The tool's own folder beside the task file: never part of any task's change.
STATE_DIR = ".agent-loop"
KINDS = ("auto", "jj", "git", "none")


def find_root(start: Path) -> Path | None:
    """The nearest folder from `start` upwards holding `.jj` or `.git`; no process is started."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".jj").is_dir() or (folder / ".git").exists():
            return folder
    return None


def folder_gone(root: Path) -> str | None:
    """What is said when `root`, the folder a VCS command runs in, is no longer there (removed
    from outside while agent-loop was using it); None while it is."""
    if root.is_dir():
        return None
    return (f"{root} is gone (removed from outside while agent-loop was using it); run "
            "agent-loop again to set it up afresh")


def relative_to(path: Path, root: Path) -> str | None:
    """`path` as a slash-separated path inside `root`, or None when it lies outside."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def plan_files(root: Path) -> set[str]:
    """The task files of every plan agent-loop keeps state for in this repository (relative,
    slash-separated): none of them is ever part of a task's change, whichever plan runs."""
    import orjson

    from agentloop.files import listing, regular

    found = set()
    base = root / STATE_DIR
    # A folder with no state.json in it is passed over as the read's OSError.
    others = [folder / "state.json" for folder in listing.folders(base / "plans")]
    for state in [base / "state.json", *others]:
        try:
            name = orjson.loads(regular.read_bytes(state)).get("task_file")
        except (OSError, orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(name, str) and name and not name.startswith("/"):
            found.add(name)
    return found


def own_output(root: Path) -> set[str]:
    """The files inside `root` this process's output goes to (relative, slash-separated), as
    `agent-loop plan.md > run.log` in the checkout makes one: the run writes it while every task
    runs, so it is neither the user's edit nor any task's change."""
    import os
    import stat

    found = set()
    for fd in (1, 2):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISFIFO(mode):
            targets = _piped_into(fd)  # `agent-loop plan.md | tee run.log`
        elif stat.S_ISREG(mode):
            targets = [target] if (target := fd_path(fd)) is not None else []
        else:
            continue
        for target in targets:
            rel = relative_to(Path(target), root)
            if rel is not None:
                found.add(rel)
    return found


def _piped_into(fd: int) -> list[str]:
    """The files written by the process that reads the pipe `fd` writes to, where it is one of
    this process's siblings, as `tee run.log` is in the shell's `agent-loop plan.md | tee
    run.log` (Linux's /proc only; elsewhere none)."""
    import os

    pipe = fd_path(fd)
    if pipe is None or not pipe.startswith("pipe:"):
        return []
    parent = os.getppid()
    try:
        siblings = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    except OSError:
        return []
    found = []
    for pid in siblings:
        if pid == str(os.getpid()):
            continue
        fds = Path(f"/proc/{pid}/fd")
        try:
            links = {entry: os.readlink(fds / entry) for entry in os.listdir(fds)}
        except OSError:
            continue  # gone, or not ours to read
        # The reader (tee) only: a sibling writing to the same pipe (a daemon sharing the
        # shell's stdout) is no consumer of our output, and its files stay the user's.
        if not any(link == pipe and _access(pid, entry) == os.O_RDONLY
                   for entry, link in links.items()):
            continue
        for entry, link in links.items():
            if link.startswith("/") and _access(pid, entry) not in (None, os.O_RDONLY):
                found.append(link)
    return found


def _access(pid: str, fd: str) -> int | None:
    """How process `pid` opened its descriptor `fd` (O_RDONLY, O_WRONLY or O_RDWR, from its
    /proc fdinfo flags), or None when that cannot be read."""
    import os

    try:
        info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
    except OSError:
        return None
    for line in info.splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8) & os.O_ACCMODE
    return None


def fd_path(fd: int) -> str | None:
    """The path an open file descriptor names (Linux's /proc, or macOS's F_GETPATH)."""
    import os

    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    import fcntl

    get = getattr(fcntl, "F_GETPATH", None)
    if get is None:
        return None
    try:
        return bytes(fcntl.fcntl(fd, get, bytes(1024))).rstrip(b"\0").decode()
    except (OSError, UnicodeDecodeError):
        return None
