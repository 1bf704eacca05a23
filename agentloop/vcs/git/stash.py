"""git: a `git stash` an agent ran in its lane. The stash list (refs/stash and its reflog) is the
repository's, shared by every worktree: the agent's entry lands in yours, where `git stash list`
shows it and your next `git stash pop` takes it instead of your own. After each step of a lane
the entries it made there (git names the lane's branch in each: "WIP on <branch>: ..." or "On
<branch>: ...") leave your stash list for a ref of agent-loop's, from which `git stash apply`
still brings them back; every other entry (yours, made in your checkout) stays where it is.
"""

from __future__ import annotations

from pathlib import Path

from agentloop.vcs.git import refs
from agentloop.vcs.git.run import Git

STASH = "refs/stash"
KEPT = "refs/agent-loop/stash/"


def top(common_dir: Path) -> str | None:
    """The stash list's newest entry, read from the files ("" for none; None when they cannot
    tell): what a step begins with, no process."""
    return refs.branch_tip(common_dir, STASH)


def take_out(git: Git, common_dir: Path, branch: str, before: str | None) -> list[str]:
    """The entries made on `branch` (refs/heads/...) since the stash list's newest was
    `before`: moved out of the stash list to refs under KEPT, those refs returned, newest
    first. No process when the newest entry is still `before`."""
    if before is None or top(common_dir) == before:
        return []
    short = branch.removeprefix("refs/heads/")
    marks = (f"WIP on {short}: ", f"On {short}: ")
    out = git.code("reflog", "show", "--format=%H%x09%gs", STASH, codes=(0, 128))[1]
    found: list[tuple[int, str]] = []
    for index, line in enumerate(out.splitlines()):
        sha, _, subject = line.partition("\t")
        if sha == before:
            break  # older entries were there as the step began
        if subject.startswith(marks):
            found.append((index, sha))
    kept = []
    # The newest first: a later entry's index is counted before an earlier one is dropped.
    for index, sha in reversed(found):
        ref = f"{KEPT}{short.rsplit('/', 1)[-1]}/{sha[:12]}"  # the lane's folder's name
        git.code("update-ref", "-m", "agent-loop: an agent's stash", ref, sha)
        git.code("reflog", "delete", "--updateref", "--rewrite", f"{STASH}@{{{index}}}")
        kept.append(ref)
    if found and len(found) == len(out.splitlines()):
        # The list is empty now; git's own `stash drop` of the last entry deletes the ref too.
        git.code("update-ref", "-d", STASH, codes=(0, 1))
    return kept[::-1]
