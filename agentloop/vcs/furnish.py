"""What a new lane is given of the user's ignored files (the `lane-copy` and `lane-link`
settings): a lane starts from the main line's commit, so `.env`, `node_modules` and the like
are not there until copied or linked. What is copied or linked is there before the
lane's first task begins, so no task's change takes it (a lane's change is what its task
changed), even where the repository does not ignore it (a `node_modules/` pattern does not
match a link)."""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.errors import VcsError


def furnish(root: Path, lane: Path, copy: tuple[str, ...], link: tuple[str, ...]
            ) -> list[str]:
    """Copy `copy` and link `link` (paths relative to `root`) into `lane`; notes naming what
    could not be brought (a path missing in the checkout, or there in the lane already)."""
    import shutil  # where used: off every run's way to its first agent

    notes: list[str] = []
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
    return notes

