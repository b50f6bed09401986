"""What tokens cost at a suite's `pricing:` table (model name -> price per million prompt and completion tokens).

One computation for the run's accounting (each role's cost in a result, the spend cap, the summary's total:
runner/execution.py) and for the `cost` grader, so that the money a grader holds a sample to is the figure its
result's `roles.agent.cost` shows."""

from __future__ import annotations

from collections.abc import Mapping

from evals_cli.models.specs import Price
from evals_cli.models.trajectory import Usage


def price_of(pricing: Mapping[str, Price], model: object, usage: Usage) -> float | None:
    """`usage` at `model`'s price; None when the table has no price for that model (nothing to say it cost)."""
    price = pricing.get(str(model))
    if price is None:
        return None
    return (usage.prompt_tokens * price.input + usage.completion_tokens * price.output) / 1e6
