"""A run's closing lines (agentloop.console.closing): what its summary says of cost and tokens."""

from __future__ import annotations

from agentloop.console.closing import summary_text
from agentloop.run.events import RunFinished


def _closing(**given: object) -> str:
    fields: dict = {"counts": (("interrupted", 1),), "cost_usd": 0.0, "seconds": 1.0,
                    "logs": ".agent-loop/logs", "stopped": "interrupted",
                    "tokens": (("input_tokens", 0), ("output_tokens", 0)), **given}
    return summary_text(RunFinished(**fields)).strip()


def test_the_closing_line_says_nothing_of_cost_only_when_no_agent_ran() -> None:
    # No agent ever ran: nothing spent, nothing said of it.
    none = _closing(agents_ran=False)
    assert "cost" not in none and "tokens" not in none, none
    # Agents ran and none reported (each timed out, or was stopped, before its result): the
    # words were left out too, which read as nothing spent.
    unknown = _closing(agents_ran=True, cost_known=False)
    assert "; cost unknown (no agent reported); time" in unknown, unknown
    assert "tokens" not in unknown, unknown
    # Tokens without dollars, and dollars: as before.
    tokens = _closing(cost_known=False, tokens=(("input_tokens", 10), ("output_tokens", 2)))
    assert "; cost unknown (tokens only); tokens in 10 out 2;" in tokens, tokens
    assert "; cost $0.0100; tokens in 0 out 0;" in _closing(cost_usd=0.01)
