"""Where the finished tasks' changes are now, told apart from where the state saw them: still
in the history (nothing to say), gone from it (lost), there under another id because a rebase or
a cherry-pick kept their trailers (moved), or reverted by a later commit.

`--status` asks this of every plan it shows, so it costs what the answer needs: nothing but a
look at the repository's files while the history stands where the run last found every change
(agentloop.vcs.history's mark); else one read of the history (agentloop.vcs.branch_log), which
names every change that carries agent-loop's words, and a second VCS command only for a change
that read did not name. The trailers in that history are read by agentloop.state.landed.
"""

from __future__ import annotations

from agentloop.state.status import TaskStatus as S
from agentloop.vcs.history import missing, unmoved

TYPE_CHECKING = False   # typing for the checker only: --status imports this module, not typing
if TYPE_CHECKING:
    from pathlib import Path

    from agentloop.state.landed import Commit, PlannedTask
    from agentloop.state.schema import State, TaskState


# (lost: gone from the history, found nowhere on it; moved: (task, the change its trailers name
# now); reverted: (task, the commit that reverts it)). A tuple, not a record: --status asks
# this of every plan, and nothing to say should cost nothing to say.
Found = tuple[tuple[int, ...], tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]]
NOTHING: Found = ((), (), ())


def whereabouts(root: Path, task_file: str, state: State, branch: str | None = None) -> Found:
    """The finished tasks whose change left the history of the repository at `root` (lost), is
    there under another id (a rebase or a cherry-pick kept its trailers: moved) or was reverted
    by a later commit; `task_file` as the state records it (its commits name its slug). git:
    the history of HEAD, or of `branch` (refs/heads/...), the one the tasks landed on, when
    your checkout left it (agentloop.vcs.history.elsewhere)."""
    kind = state.vcs or ""
    done = {t.change_id: t.index for t in state.tasks
            if t.status in (S.COMPLETED, S.UNAPPROVED) and t.change_id}
    if not done or unmoved(kind, root, state.history_mark, done, branch):
        return NOTHING  # the run found them all where the history still stands
    # The history moved: from here on processes are started, and their layer is loaded.
    from agentloop.state.landed import last_word
    from agentloop.vcs.branch_log import branch_history
    from agentloop.vcs.carry import plan_slug

    rev = branch or "HEAD"
    history = branch_history(kind, root, rev)
    named = {commit for commit, _, _ in history} | {change for _, change, _ in history}
    # A change the read of the history named is in it; only the others are asked after.
    gone = {done[c] for c in missing(kind, root, [c for c in done if c not in named], rev=rev)}
    word = last_word(plan_slug(task_file), planned(state), commits(history))
    change_of = {commit: change for commit, change, _ in history}
    lost, moved, reverted = [], [], []
    for index in sorted(done.values()):
        commit, landed = word.get(index, ("", True))
        if not landed:
            reverted.append((index, commit))
        elif index in gone and commit:
            moved.append((index, change_of.get(commit, commit)))
        elif index in gone:
            lost.append(index)
    return tuple(lost), tuple(moved), tuple(reverted)


HEX = "0123456789abcdef"


def git_commit(ident: str | None) -> bool:
    """Whether a record's change id is a git commit's (40 or 64 hex digits; git's change id is
    its commit id), which no jj change id is (jj's are written in the letters k to z)."""
    return ident is not None and len(ident) in (40, 64) and not ident.strip(HEX)


def jj_lacks(kind: str, task: TaskState) -> bool:
    """jj: whether `task`'s record names the git commit it was done as, which jj's repository
    does not hold (never imported: reset or rewritten away with git before jj took git's in),
    so no jj change of it can be taken back. Recorded so once (agentloop.run.rebuilt.named_by_jj):
    the git commit as its change id, no commit id of jj's."""
    return kind == "jj" and task.commit_id is None and git_commit(task.change_id)


def lost_words(kind: str, task: TaskState) -> str:
    """What a finished task whose change left the history is, for the line that says so."""
    if kind == "git" and git_commit(task.change_id):
        # Its commit is still there while git keeps it (a run on a detached HEAD you left, a
        # reset of yours): bringing it back costs nothing, running it again an agent.
        commit = (task.change_id or "")[:12]
        return (f"task {task.index}'s change is no longer in the history (abandoned, or not on "
                f"this branch): commit {commit} holds it, and `git cherry-pick {commit}` brings "
                "it back while git keeps it")
    if not jj_lacks(kind, task):
        return f"task {task.index}'s change is no longer in the history (abandoned, or not on " \
               "this branch)"
    commit = (task.change_id or "")[:12]
    return (f"task {task.index} was done as git commit {commit}, which jj's history does not "
            "hold (reset or rewritten away with git before jj took in git's branches), so no "
            f"jj change of it is there to take back (`git show {commit}` shows it while git "
            "keeps it)")


def planned(state: State) -> list[PlannedTask]:
    """The state's tasks as history names them."""
    from agentloop.state.landed import PlannedTask, commit_message

    # A task reworded after it was done: its commit names it by the words it was done as.
    return [PlannedTask(t.index, t.done_as or t.task, commit_message(t, state.title))
            for t in state.tasks]


def commits(history: list[tuple[str, str, str]]) -> list[Commit]:
    """The commits of a history read by agentloop.vcs.branch_log, for agentloop.state.landed."""
    from agentloop.state.landed import Commit

    return [Commit(commit, description) for commit, _, description in history]
