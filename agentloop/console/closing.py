"""A run's closing lines: its summary (counts, cost, tokens, time, where its logs are), then the
tasks it did not complete, and how to take back one task's change (or, after a rehearsal, where
its changes are).
"""

from __future__ import annotations

import os
from pathlib import Path

from agentloop.console.render import duration, shown
from agentloop.files.shown import typed, typed_path
from agentloop.state.tally import money

# For the types only: a plain run's start-up imports no typing for them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentloop.app import RunResult
    from agentloop.run.events import RunFinished


def summary_text(event: RunFinished, cwd: Path | None = None) -> str:
    """The closing lines of a run."""
    # The plan's tasks as it reads now; one it had while the run worked and has no more, by
    # its words: its number in the run is another task's now.
    back = f" ({event.taken_back} of them taken back since)" if event.taken_back else ""
    counts = ", ".join([f"{n} {status}" + (back if status == "completed" else "")
                        for status, n in event.counts]
                       + ([f"{len(event.removed)} removed from the plan"] if event.removed
                          else [])
                       + [f'"{words}" ({status}, removed from the plan since)'
                          for words, status in event.removed_since])
    head = "done" if event.stopped is None else "stopped"
    notes = "".join(f"\nlook at: {note}" for note in event.notes)
    tokens = dict(event.tokens)
    spent = (f"; tokens in {tokens.get('input_tokens', 0):,} out {tokens.get('output_tokens', 0):,}"
             if tokens else "")
    cost = f"; cost {money(event.cost_usd, event.cost_known)}"
    if not event.agents_ran:
        # No agent ever ran (the run stopped before the first began): nothing was spent and
        # there is nothing to tell of, where "cost $0.0000; tokens in 0 out 0" read as runs.
        cost = spent = ""
    elif not event.cost_known and not event.cost_usd and not any(tokens.values()):
        # Agents ran and none reported (each stopped or timed out first): what they spent is
        # not known, which "unknown (tokens only); tokens in 0 out 0" said as if tokens were.
        cost, spent = "; cost unknown (no agent reported)", ""
    logs = os.path.relpath(event.logs, cwd) if cwd and os.path.isabs(event.logs) else event.logs
    return (f"\nagent-loop {head}: {counts}{cost}"
            f"{spent}; time {duration(event.seconds)}; logs in {logs}/{notes}")


def closing_lines(result: RunResult, cwd: Path) -> list[str]:
    """After the summary: which tasks did not finish, and how to undo one task."""
    # The state's name: a plan renamed while the run worked is saved under its new one.
    state = result.state
    task_file = shown(result.project.root / state.task_file, Path("/"), cwd)
    lines = []
    if result.summary.unfinished:
        lines.append(f"not completed: {_not_completed(result.summary)}; "
                     f"`agent-loop {typed_path(task_file)} --status` says why")
    if state.agent == "rehearse":
        return lines + rehearsal_lines(result, task_file, cwd)
    lines += undo_lines(state.vcs, task_file, result.summary)
    return lines


def _not_completed(summary: RunFinished) -> str:
    """The tasks not completed, as the plan reads now (`--status`'s numbers); one it no longer
    has, by its words. A summary of an older version: the run's numbers."""
    now, gone = summary.unfinished_now, summary.unfinished_removed
    if not now and not gone:
        now = summary.unfinished
    parts = [f"task(s) {', '.join(str(i) for i in now)}"] if now else []
    if gone:
        parts.append(", ".join(f'"{words}"' for words in gone) + " (removed from the plan since)")
    return " and ".join(parts)


def rehearsal_lines(result: RunResult, task_file: str, cwd: Path) -> list[str]:
    """Where a rehearsal's changes are, and that nothing of the user's moved."""
    from agentloop.run.rehearsal import lane_name
    from agentloop.vcs.lanes import BRANCH_PREFIX, JJ_PREFIX, lanes_dir

    copy = lanes_dir(result.project.root) / lane_name(result.project)
    where = (f"branch {BRANCH_PREFIX}{copy.name}" if result.state.vcs == "git"
             else f"jj workspace {JJ_PREFIX}{copy.name}")
    plan = typed_path(task_file)
    return [f"rehearsal: its changes are on {where}, in {shown(copy, Path('/'), cwd)}; your "
            f"branch and files are as they were. Its state is its own (`agent-loop {plan} "
            f"--status --rehearse`); the real run starts from the plan itself: `agent-loop "
            f"{plan}`"]


def undo_lines(vcs: str | None, task_file: str, summary: RunFinished) -> list[str]:
    """How to take back one task's change this run made, for the VCS it used: the last one
    it completed, its change the summary's, named as the plan reads now (`--status`'s number;
    an edit the run took in may have renumbered it). The summary's
    `landed_on`: the branch the tasks landed on, when the checkout is on another one now (you
    switched mid-run): the revert goes there."""
    if not summary.completed or not summary.last_change:
        return []
    example, landed_on = summary.last_change, summary.landed_on
    if vcs == "jj":
        how = f"jj abandon {example[:12]}"
    elif vcs == "git":
        how = f"git revert {example[:12]}"
    else:
        return []
    where = ""
    if landed_on and vcs == "git":
        how = f"git switch {typed(landed_on)} && {how}"  # a line to type, not run
        where = (f"the run's commits are on branch {landed_on}, not on the one your checkout "
                 "is on now; ")
    status = f"agent-loop {typed_path(task_file)} --status"
    if landed_on and vcs == "git":  # the plan may be on that branch alone (gone with your switch)
        status = f"git switch {typed(landed_on)} && {status}"
    named = summary.last_named or f"task {summary.completed[-1]}"
    return [f"To undo one task, e.g. {named}: {how} ({where}the other "
            f"tasks' changes stay); `{status}` lists every task's change."]
