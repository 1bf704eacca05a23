"""What an attempt came to, and the fix run that changes it: the developer's session resumed
with what is wrong (a reviewer's feedback, a failing check), its edits landing in the same change.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agentloop.agents import LIMIT, AgentResult, Failure
from agentloop.ondemand import dataclass as on_first_use
from agentloop.run.agent_run import run_agent
from agentloop.run.checks import CheckRun
from agentloop.run.context import Run
from agentloop.run.decisions import Marked
from agentloop.run.handover import hand
from agentloop.state.outcome import AttemptOutcome as O
from agentloop.state.schema import Attempt, TaskState, now
from agentloop.state.status import TaskStatus as S
from agentloop.vcs.protocol import Change

if TYPE_CHECKING:
    from agentloop.run.final_message import Report


@on_first_use(frozen=True)  # made when a task's first attempt ends (agentloop.ondemand)
class Outcome:
    """What an attempt came to: the last developer run, its result and report, and for a
    successful one the status it earns (completed, or unapproved by the reviewer) and why.

    `checks`: the last round of the task's checks (all passed for a completed task).
    `failure`: set when the core itself failed the attempt (a check still failing, no changes
    with --require-changes): the runner takes it as it is instead of asking the agent.
    """

    attempt: Attempt
    change: Change
    result: AgentResult
    report: Report
    status: str = S.COMPLETED
    note: str | None = None
    checks: tuple[CheckRun, ...] = ()
    failure: Failure | None = None
    feedback: str | None = None     # an unapproved task's last feedback from the reviewer

    @property
    def succeeded(self) -> bool:
        """Whether the attempt's agent finished and its final message neither blocked the task
        nor stopped the run: work to hold to the checks, review and keep."""
        from agentloop.run.final_message import BLOCKED, FATAL  # see run.attempt._develop

        return self.result.ok and self.report.signal not in (FATAL, BLOCKED)


def fix_run(run: Run, task: TaskState, outcome: Outcome, prompt: str, round_: int,
            kind: str = "review") -> Outcome:
    """The developer's session, resumed with `prompt`; a limit waits and runs it again.

    A failed run comes back as the outcome's result, for the runner's rules.
    """
    resume = outcome.attempt.session_id or task.session_id
    while True:
        record, result = run_agent(run, task, outcome.change, prompt, outcome.attempt.number,
                                   resume, round_=round_, kind=kind)
        from agentloop.run.final_message import Report  # see run.attempt._develop
        from agentloop.run.final_message import parse as parse_report

        if result.ok:
            report = parse_report(result.text)
            run.learnings.record(task.index, 1, now(), report.progress, report.learnings,
                                 task.summary)
            return replace(outcome, attempt=record, result=result, report=report)
        from agentloop.run.waits import classify, wait_for_limit  # a failed run only

        failure = classify(run, result)
        if failure.kind != LIMIT:
            return replace(outcome, attempt=record, result=result, report=Report())
        hand(run, task, Marked(record, O.LIMITED, failure.reason,
                               resets_at=failure.resets_at))
        wait_for_limit(run, failure)
