"""Commit messages a person would write: a small-model call turns the task, the agent's final
message and the diff stat into a subject and a short body. Any failure keeps the plain message.
"""

from __future__ import annotations

from pathlib import Path

from agentloop.agents import Agent, clean
from agentloop.ondemand import dataclass
from agentloop.run.json_answer import first_object

SUBJECT_LIMIT = 72
PREFIX = "agent-loop: "
# Bounds on what goes into the prompt.
TEXT_CHARS = 6_000

PROMPT = """\
Write the commit message for a change an AI coding agent just made, as an experienced engineer
would: a subject line in the imperative mood of at most {limit} characters, no trailing period,
and a body of one to four short lines saying what changed and why.

Answer with ONLY a JSON object: {{"subject": "...", "body": "..."}}

The task the agent was given (group "{group}"):
{task}

The agent's final message:
{final}

The files changed (diff stat):
{stat}
"""


@dataclass(frozen=True)
class Message:
    """A commit message, and where it came from."""

    text: str
    distilled: bool
    cost_usd: float = 0.0
    note: str = ""       # why the plain message was kept, when it was


def diff_stat(diff: str) -> str:
    """`path | +added -removed` for each file of a git-style diff."""
    counts: dict[str, list[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            current = line.split(" b/", 1)[-1]
            counts[current] = [0, 0]
        elif current and line.startswith("+") and not line.startswith("+++"):
            counts[current][0] += 1
        elif current and line.startswith("-") and not line.startswith("---"):
            counts[current][1] += 1
    return "\n".join(f"{path} | +{a} -{r}" for path, (a, r) in counts.items()) or "(no files)"


def parse(text: str) -> tuple[str, str] | None:
    """(subject, body) from the model's answer; None when it holds no usable subject."""
    found = first_object(text, lambda v: isinstance(v.get("subject"), str)
                         and bool(" ".join(v["subject"].split()).rstrip(".")))
    if found is None:
        return None
    body = found.get("body")
    return (" ".join(found["subject"].split()).rstrip("."),
            body.strip() if isinstance(body, str) else "")


def message(group: str, subject: str, body: str) -> str:
    """The change's description: `agent-loop: <group> / <subject>` (the subject cut to
    SUBJECT_LIMIT characters), a blank line, then the body."""
    if len(subject) > SUBJECT_LIMIT:
        subject = subject[: SUBJECT_LIMIT - 1].rstrip() + "…"
    return f"{PREFIX}{group} / {subject}" + (f"\n\n{body}" if body else "")


def distill(agent: Agent, model: str, plain: str, group: str, task: str, final: str,
            diff: str, cwd: Path) -> Message:
    """The distilled message, or `plain` (with the reason) when anything goes wrong."""
    prompt = PROMPT.format(limit=SUBJECT_LIMIT, group=group, task=task[:TEXT_CHARS],
                           final=final[-TEXT_CHARS:] or "(none)", stat=diff_stat(diff)[:TEXT_CHARS])
    answer = agent.ask(clean(prompt), model, cwd, timeout=120)
    if answer.error is not None:
        return Message(plain, False, answer.cost_usd, f"distiller failed: {answer.error}")
    parsed = parse(answer.text)
    if parsed is None:
        return Message(plain, False, answer.cost_usd, "distiller gave no JSON subject")
    return Message(message(group, *parsed), True, answer.cost_usd)
