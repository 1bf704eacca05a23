"""What tokens cost, for an agent that reports tokens but no dollars (Codex): one table of the
models we know, and the user's own rates for any other (the `prices` setting, `--price`).

Rates are US dollars per million tokens, standard tier, requests of up to 272,000 input tokens
(OpenAI bills a longer request at twice the input rates and 1.5 times the output rate; a run
priced here is then a floor). The rates are OpenAI's published ones, from its API pricing page
and model pages (https://developers.openai.com/api/docs/pricing): GPT-6 Astra as of 2026-09-03,
GPT-6 Sol and Luna as of 2026-09-22, GPT-6.1 Sol as of 2026-09-29; the table was written on
2026-11-26. Check them there when they change, and tell us.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

PRICES_TAKEN = "2026-11-26"
PRICES_SOURCE = "https://developers.openai.com/api/docs/pricing"


@dataclass(frozen=True)
class Rates:
    """USD per million tokens: fresh input, cached input (read from the prompt cache), output
    (reasoning included)."""

    input: float
    cached_input: float
    output: float

    def cost(self, usage: Mapping[str, int]) -> float:
        """What `usage` (the loop's keys: input apart from cache reads) costs at these rates.
        Cache writes, which Codex counts inside its input tokens, are priced as input."""
        return (usage.get("input_tokens", 0) * self.input
                + usage.get("cache_read_input_tokens", 0) * self.cached_input
                + usage.get("output_tokens", 0) * self.output) / 1_000_000


KNOWN: dict[str, Rates] = {
    "gpt-6.1-sol": Rates(2.00, 0.10, 10.00),   # Codex's default for tasks and reviews
    "gpt-6-sol": Rates(2.00, 0.20, 10.00),
    "gpt-6-luna": Rates(0.10, 0.01, 0.50),     # Codex's small model: the helper calls
    "gpt-6-astra": Rates(10.00, 1.00, 50.00),
}


_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}\Z")


def parse_rates(text: str) -> Rates:
    """`IN/CACHED/OUT` (or `IN/OUT`: cached input at the input rate), USD per million tokens;
    ValueError says what is wrong."""
    parts = [p.strip() for p in text.split("/")]
    if len(parts) not in (2, 3):
        raise ValueError(f"{text!r} is not INPUT/CACHED/OUTPUT in USD per million tokens "
                         "(e.g. 2/0.1/10)")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{text!r}: every rate must be a number (USD per million tokens, "
                         "e.g. 2/0.1/10)") from None
    if any(n < 0 or n != n for n in numbers):
        raise ValueError(f"{text!r}: a rate cannot be negative")
    return Rates(numbers[0], numbers[1], numbers[2]) if len(numbers) == 3 else \
        Rates(numbers[0], numbers[0], numbers[1])


def rates_for(model: str | None, given: Iterable[tuple[str, str]] = ()) -> Rates | None:
    """The rates of `model`: the user's (`prices`) first, then the table; a dated snapshot
    (`gpt-6-sol-2026-09-22`) is priced as its model. None: unknown."""
    if not model:
        return None
    table = {**KNOWN, **{name: parse_rates(text) for name, text in given}}
    return table.get(model) or table.get(_SNAPSHOT.sub("", model))


def unpriced(reports_cost: bool, models: Iterable[str], given: Iterable[tuple[str, str]] = ()
             ) -> list[str]:
    """The models a budget could not be kept for: none when the agent reports dollars itself,
    else those without rates."""
    if reports_cost:
        return []
    return [m for m in dict.fromkeys(models) if rates_for(m, given) is None]
