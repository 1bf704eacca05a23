"""The two trailers that name a task at the end of its commit message (git) or its change's
description (jj): its plan, then the task. Spelled here only: the run writes them, the history
reads them back (agentloop.state.landed), a rewritten commit is known by them
(agentloop.vcs.rewritten), and the fleet's job commits carry them (agentloop.vcs.carry)."""

PLAN_KEY, TASK_KEY = "Agent-Loop-Plan", "Agent-Loop-Task"


def task_lines(plan: str, task: str) -> str:
    """The two trailer lines: the plan's slug, then the task (its number, and where the run
    wrote them, a short hash of its text)."""
    return f"{PLAN_KEY}: {plan}\n{TASK_KEY}: {task}"
