"""What a new lane is given of the user's ignored files (the `lane-copy` and `lane-link`
settings): a lane starts from the main line's commit, so `.env`, `node_modules` and the like
are not there until copied or linked. What is copied or linked is never the agent's to commit:
with git, a path the repository does not ignore in the lane (a `node_modules/` pattern does not
match a link) goes into the repository's exclude file, which only hides untracked paths."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentloop.errors import VcsError

EXCLUDE_MARK = "# agent-loop: brought into its lanes (lane-copy, lane-link)"


def outside(path: str) -> bool:
    """Whether a lane-copy or lane-link path would reach outside the repository."""
    parts = Path(path).parts
    return not path.strip() or Path(path).is_absolute() or ".." in parts or \
        (parts[:1] == (".agent-loop",))


def furnish(kind: str, root: Path, lane: Path, copy: tuple[str, ...], link: tuple[str, ...]
            ) -> list[str]:
    """Copy `copy` and link `link` (paths relative to `root`) into `lane`; notes naming what
    could not be brought (a path missing in the checkout, or there in the lane already)."""
    notes, brought = [], []
    for path, how in [*((p, "copy") for p in copy), *((p, "link") for p in link)]:
        source, target = root / path, lane / path
        if not os.path.lexists(source):
            notes.append(f"lane-{how}: {path} is not in {root}: the lane goes without it")
            continue
        if os.path.lexists(target):
            if how == "copy" and target.is_file() and not target.is_symlink():
                shutil.copy2(source, target)  # an ignored file a reused lane kept: refreshed
            elif not (how == "link" and target.is_symlink()):
                notes.append(f"lane-{how}: {path} is in the lane already (a file of the "
                             "commit): left as it is")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            if how == "link":
                target.symlink_to(source.resolve(), target_is_directory=source.is_dir())
            elif source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
        except OSError as exc:
            raise VcsError(f"lane-{how}: could not bring {path} into {lane}: "
                           f"{exc.strerror or exc}") from None
        brought.append(path)
    if kind == "git" and brought:
        _exclude(lane, brought)
    return notes


def _exclude(lane: Path, paths: list[str]) -> None:
    """Paths the lane's git does not ignore written into the repository's exclude file."""
    from agentloop.vcs.git.run import Git

    git = Git(lane)
    code, out = git.code("check-ignore", "--no-index", "--stdin", "-z",
                         input="\0".join(paths) + "\0", codes=(0, 1),
                         env={"GIT_LITERAL_PATHSPECS": "0"})  # check-ignore refuses it
    ignored = {p for p in out.split("\0") if p}
    missing = [p for p in paths if p not in ignored and p.rstrip("/") not in ignored]
    if not missing:
        return
    common = Path(git.out("rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    exclude = common / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    lines = set(text.splitlines())
    new = [f"/{p.strip('/')}" for p in missing if f"/{p.strip('/')}" not in lines]
    if new:
        head = "" if EXCLUDE_MARK in lines else EXCLUDE_MARK + "\n"
        sep = "" if not text or text.endswith("\n") else "\n"
        exclude.write_text(text + sep + head + "\n".join(new) + "\n", encoding="utf-8")
