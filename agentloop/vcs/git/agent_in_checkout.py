"""git: what an agent's own git commands did in your checkout, not in its lane, judged from the
entries marked as an agent's in your checkout's HEAD log and your branch's (agentloop.vcs.git.reflog
reads them): your branch moved (a stop, agent_moved_main) or only your checkout's HEAD (said,
agent_moved_head)."""

from __future__ import annotations

import shlex
from pathlib import Path

from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git import reflog, refs
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.run import Git


def agent_moved_main(record: GitLaneRecord) -> Breach | None:
    """Your branch moved by an agent's own git command in your checkout (its `git commit -a`
    there, a reset, a merge), known for sure by the mark its reflog entry carries: a stop, as
    your branch moved back is, since a landing on top would bury what the agent did under the
    task's commit, and the repair (`reset --soft`, `reset --keep`) would take the task along.
    Entries that cancel out (its `commit -a`, then `reset --soft HEAD~1`), or a branch back
    where the step found it, stop nothing: agent_moved_head says what it ran."""
    if len(record.reflogs) < 2:
        return None
    entries = reflog.agents_since(*record.reflogs[1])
    if not entries:
        return None
    root, short = record.main_root, record.main_ref.removeprefix("refs/heads/")
    old, new = entries[0].old, entries[-1].new
    main = Git(root)
    if old == new or main.sha(record.main_ref) == old:
        return None
    said = "; ".join(dict.fromkeys(e.message for e in entries))
    line = f"an agent ran git in your checkout {root}, not in its lane, and moved your branch "
    if main.ancestor(new, old):  # back: its `reset --hard HEAD~1`
        return Breach(Kind.AGENT_MOVED_MAIN, f"{line}{short} back from {old[:12]} to "
                      f"{new[:12]}, dropping what came after it (its reflog entry says "
                      f"`{said}`); nothing of this step is landed on it, and {old[:12]} stays "
                      f"in `git reflog {short}`",
                      (f"git -C {root} log --oneline {new[:12]}..{old[:12]}",
                       f"git -C {root} reset --keep {old[:12]}"), everywhere=True)
    line += (f"{short} from {old[:12]} to {new[:12]} (its reflog entry says `{said}`); nothing "
             "of this step is landed on it")
    if main.ancestor(old, new):
        took = _files_between(main, old, new)
        if _made_here(main, record.main_ref, old, new):
            # A commit made in your checkout took what it held uncommitted (your edits, or
            # the agent's writes there): `reset --soft` gives it back as it was, staged.
            return Breach(Kind.AGENT_MOVED_MAIN, f"{line}: it committed what your checkout held "
                          f"uncommitted ({took or 'no file'}), your edits among it; `git reset "
                          f"--soft {old[:12]}` gives it all back uncommitted (staged)",
                          (f"git -C {root} log --stat {old[:12]}..{new[:12]}",
                           f"git -C {root} reset --soft {old[:12]}"), everywhere=True)
        # A fast-forward or merge (`git pull`, `git merge`): commits made elsewhere, not your
        # edits; a landing on top would tie them to the task's commit, so a stop all the same,
        # and `reset --keep` takes them off your branch (they stay where they came from).
        count = main.out("rev-list", "--count", f"{old}..{new}").strip()
        return Breach(Kind.AGENT_MOVED_MAIN, f"{line}: it brought in {count} commit(s) made "
                      f"elsewhere (a fast-forward or merge, changing {took or 'no file'}), not "
                      f"edits of yours; `git reset --keep {old[:12]}` takes them off {short}",
                      (f"git -C {root} log --stat {old[:12]}..{new[:12]}",
                       f"git -C {root} reset --keep {old[:12]}"), everywhere=True)
    if _parents(main, old) == _parents(main, new) \
            and _made_here(main, record.main_ref, old, new):
        # Its `commit --amend` of your tip, made here: what it took (your edits, or its own
        # writes) is in the rewritten commit; `reset --keep` would write those files back as
        # your commit had them, and your edits would live on in the reflog only.
        took = _files_between(main, old, new)
        return Breach(Kind.AGENT_MOVED_MAIN, f"{line}: it rewrote your commit {old[:12]} (an "
                      f"amend), taking what your checkout held uncommitted ({took or 'no file'}), "
                      f"your edits among it; `git reset --soft {old[:12]}` puts your commit back "
                      "and gives the rest back uncommitted (staged)",
                      (f"git -C {root} diff --stat {old[:12]} {new[:12]}",
                       f"git -C {root} reset --soft {old[:12]}"), everywhere=True)
    return Breach(Kind.AGENT_MOVED_MAIN, line,
                  (f"git -C {root} log --oneline {new[:12]}..{old[:12]}",
                   f"git -C {root} reset --keep {old[:12]}"), everywhere=True)


def _files_between(main: Git, old: str, new: str) -> str:
    """The files that differ between two commits, the first five named."""
    files = [f for f in main.out("diff", "--name-only", "-z", "--no-renames", old,
                                 new).split("\0") if f]
    return ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")


def _parents(main: Git, commit: str) -> list[str]:
    """A commit's parents, in order (none for a root commit)."""
    return main.out("rev-list", "--no-walk", "--parents", commit).split()[1:]


def _made_here(main: Git, ref: str, old: str, new: str) -> bool:
    """Whether the commits old..new that moved your branch `ref` were made in your checkout
    (its `git commit`: no other ref holds them, none is a merge), not brought in from another
    branch or a remote's (its `git merge`, `git pull`; a marked entry's message names neither
    reliably: git writes the mark in place of `commit`)."""
    others = [r for r in main.out("for-each-ref", "--contains", new,
                                  "--format=%(refname)").split() if r != ref]
    return not others and main.out("rev-list", "--count", "--merges",
                                   f"{old}..{new}").strip() == "0"


def agent_moved_head(record: GitLaneRecord, dirs: tuple[Path, Path], stashed: bool = False,
                     reverted: tuple[str, ...] = ()) -> Breach | None:
    """Your checkout's HEAD moved by an agent's own git command there (its `git checkout -b`,
    `git switch`, the reset inside a `git stash`), your branch not: said, never a stop (the
    tasks go on landing on your branch, agentloop.vcs.git.mainline), with the way back when
    the checkout (its git dir and common dir: `dirs`) is off your branch now, or (`stashed`:
    the stash list has a new entry that is not a lane's) when your edits went to the stash
    list. `reverted`: files of yours the look found written back as committed (its
    `git reset --hard`). No process."""
    if not record.reflogs:
        return None
    entries = reflog.agents_since(*record.reflogs[0])
    if not entries:
        return None
    root, short = record.main_root, record.main_ref.removeprefix("refs/heads/")
    found = refs.where(*dirs)
    said = "; ".join(dict.fromkeys(e.message for e in entries))
    line = f"an agent ran git in your checkout {root}, not in its lane"
    if found is not None and found[0] != record.main_ref:
        there = (found[0] or "a detached HEAD").removeprefix("refs/heads/")
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line}, and switched it from {short} to {there} "
                      f"(its reflog entry says `{said}`)",
                      (f"git -C {root} reflog -{len(entries) + 1}",
                       f"git -C {root} switch {short}"), stops=False)
    if all(e.old == e.new for e in entries) and stashed:
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line}: its `git stash` there set your uncommitted "
                      f"edits aside (its reflog entry says `{said}`), in your stash list now",
                      (f"git -C {root} stash show -p", f"git -C {root} stash pop"), stops=False)
    if reverted:  # its `git reset --hard`, or a `git checkout -- file`
        kept = _dropped_holding(Git(root), entries, reverted)
        if kept is not None:  # its `commit -a`, then `reset --hard HEAD~1`: not gone
            commit, held = kept
            files = " ".join(shlex.quote(f) for f in held)
            return Breach(Kind.AGENT_MOVED_HEAD, f"{line} (its reflog entry says `{said}`), and "
                          f"{', '.join(reverted[:5])} went back as committed; the commit "
                          f"{commit[:12]} it made there and dropped again still holds "
                          f"{', '.join(held[:5])} as it was (it stays in `git reflog`)",
                          (f"git -C {root} diff HEAD {commit[:12]} -- {files}",
                           f"git -C {root} checkout {commit[:12]} -- {files}"), stops=False)
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line} (its reflog entry says `{said}`), and "
                      f"{', '.join(reverted[:5])} went back as committed, the edit in "
                      f"{'it' if len(reverted) == 1 else 'them'} gone", stops=False)
    if entries[0].old == entries[-1].new:  # a plain `git reset`, `git stash` then `pop`, ...
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line} (its reflog entry says `{said}`), which "
                      f"left its HEAD at {entries[0].old[:12]}, where it was",
                      (f"git -C {root} reflog -{len(entries) + 1}",), stops=False)
    return Breach(Kind.AGENT_MOVED_HEAD, f"{line}, and moved its HEAD from {entries[0].old[:12]} "
                  f"to {entries[-1].new[:12]} (its reflog entry says `{said}`)",
                  (f"git -C {root} reflog -{len(entries) + 1}",), stops=False)


def _dropped_holding(main: Git, entries: list[reflog.Entry],
                     reverted: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """The newest commit the agent's entries moved your checkout's HEAD to and then away from
    (its `commit -a`, dropped by its `reset --hard HEAD~1`), and which of the `reverted` files
    it holds otherwise than HEAD has them now: the edit its reset wrote over is there."""
    final = entries[-1].new
    commit = next((e.new for e in reversed(entries) if e.new not in (final, e.old)), None)
    if commit is None:
        return None
    held = tuple(f for f in main.out("diff", "--name-only", "-z", "--no-renames", final,
                                     commit, "--", *reverted).split("\0") if f)
    return (commit, held) if held else None
