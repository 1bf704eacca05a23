"""git: what an agent's own git commands did in your checkout, not in its lane, judged from the
entries marked as an agent's in your checkout's HEAD log and your branch's (agentloop.vcs.git.reflog
reads them): your branch moved (a stop, agent_moved_main) or only your checkout's HEAD (said,
agent_moved_head)."""

from __future__ import annotations

from pathlib import Path

from agentloop.files.shown import typed
from agentloop.ondemand import dataclass
from agentloop.vcs.breach import Breach, Kind
from agentloop.vcs.git import reflog, refs
from agentloop.vcs.git.lane_record import GitLaneRecord
from agentloop.vcs.git.moved_back import main_moved_back
from agentloop.vcs.git.run import Git


@dataclass(frozen=True)
class _Move:
    """Your branch's move by an agent's marked git entries: from `old` to `new`, and what their
    reflog entries say."""

    record: GitLaneRecord
    main: Git
    old: str
    new: str
    said: str
    lanes: tuple[str | None, ...] = ()   # the lanes whose agents wrote its entries

    @property
    def root(self) -> Path:
        return self.record.main_root

    @property
    def short(self) -> str:
        return self.record.main_short

    @property
    def who(self) -> str:
        """Whose agent it was: this lane's, or (in a run of several lanes, whose mark its
        entries carry) another's, named, where this lane's check found it first."""
        lanes = sorted({lane for lane in self.lanes if lane is not None})
        if not lanes or self.record.lane.name in lanes:
            return "an agent"
        return f"the agent of another lane ({', '.join(lanes)})"

    def line(self) -> str:
        """The start every move but a move back shares: who moved it, from where to where."""
        return (f"{self.who} ran git in your checkout {self.root}, not in its lane, and moved your "
                f"branch {self.short} from {self.old[:12]} to {self.new[:12]} (its reflog entry "
                f"says `{self.said}`); nothing of this step is landed on it")


def agent_moved_main(record: GitLaneRecord) -> Breach | None:
    """Your branch moved by an agent's own git command in your checkout (its `git commit -a`
    there, a reset, a merge), known for sure by the mark its reflog entry carries: a stop, as
    your branch moved back is, since a landing on top would bury what the agent did under the
    task's commit, and the repair (`reset --soft`, `reset --keep`) would take the task along.
    Entries that cancel out (its `commit -a`, then `reset --soft HEAD~1`), or a branch back
    where the step found it, stop nothing: agent_moved_head says what it ran."""
    move = _agents_move(record)
    if move is None:
        return None
    if move.main.ancestor(move.new, move.old):  # back: its `reset --hard HEAD~1`
        return main_moved_back(record, move.old, move.new, said=move.said)
    if move.main.ancestor(move.old, move.new):
        return _moved_forward(move)
    return _amended(move) or _moved_elsewhere(move)


def _agents_move(record: GitLaneRecord) -> _Move | None:
    """Where the agent's marked entries in your branch's reflog took it since the step began;
    None when they took it nowhere, or it is back where they found it."""
    if len(record.reflogs) < 2:
        return None
    entries = reflog.agents_since(*record.reflogs[1])
    if not entries:
        return None
    old, new = entries[0].old, entries[-1].new
    main = Git(record.main_root)
    if old == new or main.sha(record.main_ref) == old:
        return None
    return _Move(record, main, old, new, "; ".join(dict.fromkeys(e.message for e in entries)),
                 tuple(reflog.lane_of(e.message) for e in entries))


def _moved_forward(move: _Move) -> Breach:
    """Its commit in your checkout, or commits it brought in: told apart by where they were
    made, since the repair differs (your edits back, or their commits off your branch)."""
    main, old, new, root = move.main, move.old[:12], move.new[:12], move.root
    took = _files_between(main, move.old, move.new)
    if _made_here(main, move.record.main_ref, move.old, move.new):
        # A commit made in your checkout took what it held uncommitted (your edits, or
        # the agent's writes there): `reset --soft` gives it back as it was, staged.
        return Breach(Kind.AGENT_MOVED_MAIN, f"{move.line()}: it committed what your checkout "
                      f"held uncommitted ({took or 'no file'}), your edits among it; `git reset "
                      f"--soft {old}` gives it all back uncommitted (staged)",
                      (f"git -C {typed(root)} log --stat {old}..{new}",
                       f"git -C {typed(root)} reset --soft {old}"), everywhere=True)
    # A fast-forward or merge (`git pull`, `git merge`): commits made elsewhere, not your
    # edits; a landing on top would tie them to the task's commit, so a stop all the same,
    # and `reset --keep` takes them off your branch (they stay where they came from).
    count = main.out("rev-list", "--count", f"{move.old}..{move.new}").strip()
    return Breach(Kind.AGENT_MOVED_MAIN, f"{move.line()}: it brought in {count} commit(s) made "
                  f"elsewhere (a fast-forward or merge, changing {took or 'no file'}), not "
                  f"edits of yours; `git reset --keep {old}` takes them off {move.short}",
                  (f"git -C {typed(root)} log --stat {old}..{new}",
                   f"git -C {typed(root)} reset --keep {old}"), everywhere=True)


def _amended(move: _Move) -> Breach | None:
    """Its `commit --amend` of your tip, made here; None when the move was something else.
    What it took (your edits, or its own writes) is in the rewritten commit: `reset --keep`
    would write those files back as your commit had them, and your edits would live on in the
    reflog only, so the repair is `reset --soft`."""
    main = move.main
    if _parents(main, move.old) != _parents(main, move.new) \
            or not _made_here(main, move.record.main_ref, move.old, move.new):
        return None
    old, root = move.old[:12], move.root
    took = _files_between(main, move.old, move.new)
    return Breach(Kind.AGENT_MOVED_MAIN, f"{move.line()}: it rewrote your commit {old} (an "
                  f"amend), taking what your checkout held uncommitted ({took or 'no file'}), "
                  f"your edits among it; `git reset --soft {old}` puts your commit back "
                  "and gives the rest back uncommitted (staged)",
                  (f"git -C {typed(root)} diff --stat {old} {move.new[:12]}",
                   f"git -C {typed(root)} reset --soft {old}"), everywhere=True)


def _moved_elsewhere(move: _Move) -> Breach:
    """Any other move (a reset to another branch's commit, a rebase): `reset --keep` takes
    your branch back to where the step found it."""
    old, root = move.old[:12], move.root
    return Breach(Kind.AGENT_MOVED_MAIN, move.line(),
                  (f"git -C {typed(root)} log --oneline {move.new[:12]}..{old}",
                   f"git -C {typed(root)} reset --keep {old}"), everywhere=True)


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
    # This lane's agent's alone: another lane's, which fell in this step, its own lane says.
    entries = reflog.lanes_own(reflog.agents_since(*record.reflogs[0]), record.lane.name)
    if not entries:
        return None
    root, short = record.main_root, record.main_short
    found = refs.where(*dirs)
    said = "; ".join(dict.fromkeys(e.message for e in entries))
    line = f"an agent ran git in your checkout {root}, not in its lane"
    if found is not None and found[0] != record.main_ref:
        there = (found[0] or "a detached HEAD").removeprefix("refs/heads/")
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line}, and switched it from {short} to {there} "
                      f"(its reflog entry says `{said}`)",
                      (f"git -C {typed(root)} reflog -{len(entries) + 1}",
                       f"git -C {typed(root)} switch {typed(short)}"), stops=False)
    if all(e.old == e.new for e in entries) and stashed:
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line}: its `git stash` there set your uncommitted "
                      f"edits aside (its reflog entry says `{said}`), in your stash list now",
                      (f"git -C {typed(root)} stash show -p", f"git -C {typed(root)} stash pop"),
                      stops=False)
    if reverted:  # its `git reset --hard`, or a `git checkout -- file`
        kept = _dropped_holding(Git(root), entries, reverted)
        if kept is not None:  # its `commit -a`, then `reset --hard HEAD~1`: not gone
            commit, held = kept
            files = " ".join(typed(f) for f in held)
            return Breach(Kind.AGENT_MOVED_HEAD, f"{line} (its reflog entry says `{said}`), and "
                          f"{', '.join(reverted[:5])} went back as committed; the commit "
                          f"{commit[:12]} it made there and dropped again still holds "
                          f"{', '.join(held[:5])} as it was (it stays in `git reflog`)",
                          (f"git -C {typed(root)} diff HEAD {commit[:12]} -- {files}",
                           f"git -C {typed(root)} checkout {commit[:12]} -- {files}"), stops=False)
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line} (its reflog entry says `{said}`), and "
                      f"{', '.join(reverted[:5])} went back as committed, the edit in "
                      f"{'it' if len(reverted) == 1 else 'them'} gone", stops=False)
    if entries[0].old == entries[-1].new:  # a plain `git reset`, `git stash` then `pop`, ...
        return Breach(Kind.AGENT_MOVED_HEAD, f"{line} (its reflog entry says `{said}`), which "
                      f"left its HEAD at {entries[0].old[:12]}, where it was",
                      (f"git -C {typed(root)} reflog -{len(entries) + 1}",), stops=False)
    return Breach(Kind.AGENT_MOVED_HEAD, f"{line}, and moved its HEAD from {entries[0].old[:12]} "
                  f"to {entries[-1].new[:12]} (its reflog entry says `{said}`)",
                  (f"git -C {typed(root)} reflog -{len(entries) + 1}",), stops=False)


def _dropped_holding(main: Git, entries: list[reflog.Entry],
                     reverted: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """The newest commit the agent made in your checkout (its `commit -a`) and dropped again
    (its `reset --hard HEAD~1`), and which of the `reverted` files it holds otherwise than HEAD
    has them now: the edit its reset wrote over is there. A commit its HEAD only passed through
    (its `git checkout feature` and back) is another branch's, which holds no edit of yours:
    none is named, and its `git checkout <commit> -- FILE` would write that branch's file over
    yours."""
    final = entries[-1].new
    commit = next((e.new for e in reversed(entries)
                   if e.new not in (final, e.old) and _made_on(main, e.old, e.new)), None)
    if commit is None:
        return None
    held = tuple(f for f in main.out("diff", "--name-only", "-z", "--no-renames", final,
                                     commit, "--", *reverted).split("\0") if f)
    return (commit, held) if held else None


def _made_on(main: Git, old: str, new: str) -> bool:
    """Whether `new` is a commit made on `old` in your checkout (as _made_here decides): its one
    parent is `old`, and no ref holds it (a branch's or a remote's commit is not the agent's)."""
    return _parents(main, new) == [old] and \
        not main.out("for-each-ref", "--contains", new, "--format=%(refname)").split()
