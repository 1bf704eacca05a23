"""A plan renamed (`git mv tasks.md plan.md`) takes over the state of its old name, whose file is
gone, so what it finished is not paid for again; one renamed over another that had run (`mv a.md
b.md`) takes its place, the older state archived; and a run of a plan renamed while it worked,
killed before it moved its state to the new name's folder, has that state given back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

from agentloop.errors import AgentLoopError, StateError, TaskFileError
from agentloop.files import regular
from agentloop.files.shown import typed_path
from agentloop.plan import source
from agentloop.state import plain
from agentloop.state.runlock import running
from agentloop.state.schema import loads
from agentloop.state.store import Store
from agentloop.vcs import STATE_DIR

R = TypeVar("R")


def state_folder(root: Path, task_file: Path, folder: Path, read: R | None, take_over: bool
                 ) -> tuple[Path, R | None, str, str, Path | None]:
    """The folder whose state is this plan's, starting from its own `folder` (and `read`, that
    folder's state.json as read, None once another folder is taken); the plan's name before a
    rename whose state it took over; what became of an older state a rename replaced ("" when
    none) and where it is. A run (`take_over`) makes a renamed plan's state its own, moving its
    folder, while no other run goes (one of the old plan's would find its folder gone):
    `--status` and `--dry-run` change nothing."""
    former = older = ""
    older_dir = None
    if (folder / "state.json").exists():
        other = _named_other(root, task_file, folder)
        if other is not None:   # another plan's, a run of it killed before it moved it
            folder, read = _given_back(root, task_file, folder, other, take_over), None
    if not (folder / "state.json").exists():
        found = _renamed_from(root, task_file)
        if found is not None:
            (folder, former), read = found, None
            if take_over and not running(root, root / STATE_DIR):
                folder = _moved_to_own(root, task_file, folder)
    else:
        over = _renamed_over(root, task_file, folder)
        if over is not None:
            own, (folder, former), read = folder, over, None
            older, older_dir = "is archived by the plan's next run", own
            if take_over and not running(root, root / STATE_DIR):
                archived = _archived(root, own, folder)
                moved = _moved_to_own(root, task_file, folder)
                if moved != folder and archived.is_relative_to(folder):
                    archived = moved / archived.relative_to(folder)   # went along
                older, older_dir = f"is archived in {plain.relative(archived, root)}/", archived
                folder = moved
            older += f"; its cost still counts in {plain.plan_name(root, task_file)}'s totals"
    return folder, read, former, older, older_dir


def _renamed_over(root: Path, task_file: Path, own: Path) -> tuple[Path, str] | None:
    """The folder (and former name, "" when unknown) of another plan's state that is this
    plan's now, though it has a state of its own: the plan was renamed over this one (`mv a.md
    b.md`, b.md having run). A state saved under this plan's name by the run the rename came
    in (agentloop.run.plan_kept), else the state of a plan whose file is gone made from this
    very file (its hash); never while the own state was made from the file as it is (then
    nothing came over it). One folder to look at (the common case) reads nothing."""
    folders = [f for f in plain.plan_folders(root) if f != own]
    if not folders:
        return None
    try:
        digest = source.read(task_file).sha256
        # The plan as its own state was made from it (the usual case): no JSON parsed.
        if digest.encode() in regular.read_bytes(own / "state.json"):
            return None
    except (TaskFileError, OSError):
        return None
    mine = _top(own)
    if not isinstance(mine, dict) or mine.get("task_file_hash") == digest:
        return None
    name = plain.plan_name(root, task_file)
    named, same = [], []
    for folder in folders:
        data = _top(folder)
        former = _named(data)
        if not former:
            continue
        if former == name:
            named.append((folder, "", data.get("task_file_hash") == digest))
        elif data.get("task_file_hash") == digest and not (root / former).exists():
            same.append((folder, former))
    if named:
        exact = [(f, n) for f, n, alike in named if alike]
        pick = exact if exact else [(f, n) for f, n, _ in named]
        return pick[0] if len(pick) == 1 else None
    return same[0] if len(same) == 1 else None


def _named_other(root: Path, task_file: Path, folder: Path) -> str | None:
    """The other plan whose state is in this plan's folder, its file there: a run of this plan
    renamed while it worked (`mv plan.md sub/plan.md`) saved its state under the new name, and
    was killed (kill -9, a power cut) before it moved that state to the new name's folder at its
    end (Store._follow_rename). None when the state is this plan's (or names a plan that is
    gone: a rename of it, this plan's to take over). Read in full only when the state may name
    another: its journal holds lines (a run killed, or working), or state.json does not name
    this plan; a state a run ended with and that names this plan costs one read of its bytes."""
    import json
    import re

    name = plain.plan_name(root, task_file)
    try:
        raw = regular.read_bytes(folder / "state.json")
        journal = (folder / "state.journal").stat().st_size if \
            (folder / "state.journal").exists() else 0
    except OSError:
        return None
    said = re.escape(json.dumps(name).encode())
    if not journal and re.search(rb'"task_file":\s*' + said, raw):
        return None
    former = _named(_top(folder))
    if not former or former == name:
        return None
    return former if (root / former).exists() else None


def _given_back(root: Path, task_file: Path, folder: Path, other: str, take_over: bool) -> Path:
    """This plan's folder when `folder` holds `other`'s state (_named_other): a run moves that
    state to `other`'s own folder, as the killed run would have, and this plan starts with none
    of it (it never takes a plan's state whose file is there); `--status` and `--dry-run` move
    nothing, and read no state for this plan. The first plan's `.agent-loop/` stays `other`'s
    (its state names it), this plan taking a folder of its own."""
    own = plain.own_folder(root, task_file)
    if folder != own:
        return own
    if not take_over:
        return own / "unclaimed"   # never made: nothing is written by a look
    target = plain.own_folder(root, root / other)
    if running(root, root / STATE_DIR):
        return folder   # that run holds the repository: this one is refused by the lock
    try:
        if target.exists():
            raise FileExistsError(target)
        os.rename(folder, target)
    except OSError:
        raise StateError(f"{plain.relative(folder, root)}/ holds the state of {other} (a run "
                         f"of it was killed before it moved it to {plain.relative(target, root)}"
                         f"/): run `agent-loop {typed_path(other)}` first, or move it "
                         "aside") from None
    return own


def _named(data: Any) -> str:
    """The plan a state (as _top reads it) names, "" when it names none."""
    former = data.get("task_file") if isinstance(data, dict) else None
    return former if isinstance(former, str) else ""


def _top(folder: Path) -> Any:
    """The state in `folder` as JSON, with the top-level fields its journal changed since
    (the plan's name, a run saved under a new name mid-run), None when it cannot be read."""
    try:
        data = loads(regular.read_bytes(folder / "state.json"), folder / "state.json")
    except (OSError, StateError):
        return None
    if not isinstance(data, dict) or data.get("journal_id") is None:
        return data
    try:
        raw = regular.read_bytes(folder / "state.journal")
    except OSError:
        return data
    for line in plain.journal_lines(raw, data["journal_id"], plain.loads_line):
        top = line.get("top")
        if isinstance(top, dict):
            data.update({k: v for k, v in top.items() if k in ("task_file", "task_file_hash")})
    return data


def _archived(root: Path, own: Path, folder: Path) -> Path:
    """The older state in `own` moved aside as --reset moves a state (its records, logs and
    events in `archive/<stamp>/`), for the state in `folder` to take its place: where it went.
    A plan's own folder goes whole into the archive of the state that replaces it (which then
    takes the folder's name); the first plan's `.agent-loop/` keeps its archive itself."""
    from agentloop.state.schema import now

    stamp = now().replace(":", "")
    if own == root / STATE_DIR:
        archived = Store(root, own).archive(stamp)
        return archived if archived is not None else own
    target, n = folder / "archive" / stamp, 1
    while target.exists():   # a --reset of the same second
        n += 1
        target = target.with_name(f"{stamp}-{n}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(own, target)
    except OSError as exc:
        raise StateError(f"cannot move {plain.relative(own, root)} aside to "
                         f"{plain.relative(target, root)}: {exc.strerror}") from None
    return target


def _renamed_from(root: Path, task_file: Path) -> tuple[Path, str] | None:
    """The folder and name of the plan this one was renamed from (`git mv tasks.md plan.md`),
    whose state is this plan's: a plan whose file is gone, whose state was made from this very
    file (its hash), else whose tasks are all in this file with a few more (renamed, then
    added to). Never a plan whose file is still there (a copy kept beside it has its own
    state), and no guess between two that fit alike. A state that already names this plan
    (taken over, and its folder could not be renamed) is this plan's first."""
    name = plain.plan_name(root, task_file)
    gone = []
    for folder in plain.plan_folders(root):
        data = _top(folder)   # the one reader of which plan a state names (_renamed_over's)
        former = _named(data)
        if former == name:
            return folder, ""
        if former and not (root / former).exists():
            gone.append((folder, former, data))
    if not gone:
        return None
    try:
        plan = source.read(task_file)
    except TaskFileError:
        return None
    same = [(f, n) for f, n, data in gone if data.get("task_file_hash") == plan.sha256]
    if same:
        return same[0] if len(same) == 1 else None
    from collections import Counter

    from agentloop.plan import parse
    from agentloop.plan.boxes import task_key

    try:
        now = Counter((t.group, task_key(t.text)) for t in parse.parsed(plan).tasks)
    except AgentLoopError:
        return None
    alike = []
    for folder, former, data in gone:
        records = data.get("tasks")
        was = Counter((str(t.get("group", "")), task_key(str(t.get("task", "")))) for t in records
                      if isinstance(t, dict)) if isinstance(records, list) else Counter()
        # Every task of the old plan still here, in its group and in its words, and only a
        # task or two more (a fifth of its count at most): a plan renamed, then added to. A new
        # plan that repeats some lines of a finished one (run the tests, update the changelog)
        # is not it: its tasks run.
        added = sum((now - was).values())
        if was and not was - now and added <= max(1, sum(was.values()) // 5):
            alike.append((folder, former))
    return alike[0] if len(alike) == 1 else None


def _moved_to_own(root: Path, task_file: Path, folder: Path) -> Path:
    """A taken-over state's folder, renamed to the one this plan's name gives it (so that a
    new plan by the old name starts afresh); the first plan's `.agent-loop/` stays where it is
    (its state records the new name when it is next saved), as does a folder that cannot be
    renamed."""
    own = plain.own_folder(root, task_file)
    if folder == own or folder == root / STATE_DIR:
        return folder
    try:
        own.parent.mkdir(parents=True, exist_ok=True)
        os.rename(folder, own)
    except OSError:
        return folder
    return own
