"""`kind: cost`: the agent spent at most so many tokens, or so much money, on a sample, a turn or a reply
(promptfoo's `cost` and `tokens-used`).

Tokens are the agent's own, as its endpoint reported them (prompt and completion, added up over the turns graded);
money is those tokens at the suite's `pricing:` price for the agent's model, the computation the run's accounting
makes (evals_cli/models/pricing.py), so a sample's grade and its result's `roles.agent.cost` are one figure. The
judges' and a simulated user's tokens are not the agent's, and are not counted.

An agent whose steps report no tokens at all (a python agent, an endpoint that sends no usage, an external agent
whose steps were not observed) is n/a, never a pass on a count of zero. A `max_cost` the suite cannot price (no
`pricing:` entry for the agent's model, or a row's own `agent_model`) is refused before the run (exit 2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field, model_validator

from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.pricing import price_of
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.specs import Price


class CostSpec(GraderBase):
    """The agent's tokens (max_tokens) and/or their price (max_cost) per sample, turn or reply; binary."""

    kind: Literal["cost"] = "cost"
    max_tokens: int | None = Field(default=None, ge=1, description="At most this many tokens (prompt plus "
                                   "completion), the agent's own, over the turns graded.")
    max_cost: float | None = Field(default=None, ge=0, description="At most this much money: the agent's tokens at "
                                   "the suite's pricing: price for its model (the figure results show as "
                                   "roles.agent.cost).")

    @model_validator(mode="after")
    def _a_bound(self) -> CostSpec:
        if self.max_tokens is None and self.max_cost is None:
            raise ValueError("give max_tokens, max_cost or both: the bound the agent's spend is held to")
        return self


def unpriced(pricing: Mapping[str, Price], model: str) -> str:
    """Why a model's spend cannot be priced, and the fix."""
    known = ", ".join(sorted(pricing)) or "none"
    return (f"max_cost needs a price for the agent model {model!r}, and the suite's pricing: has none (priced: "
            f"{known}); add pricing: {{{model!r}: {{input: ..., output: ...}}}} (per million tokens), or use "
            "max_tokens")


@GRADERS.register("cost", spec=CostSpec)
class CostGrader(Grader[CostSpec]):
    """1 when the agent's spend is within every bound given, 0 when one is exceeded (binary); n/a when its steps
    report no tokens."""

    per_turn = True
    reads_steps = True  # counted from the agent's steps: an external agent's unobserved steps are n/a

    def __init__(self, name: str, spec: CostSpec, ctx: GraderContext) -> None:
        super().__init__(name, spec, ctx)
        self.pricing = ctx.pricing
        self.agent_model = ctx.agent_model
        if spec.max_cost is not None and not ctx.offline:
            if not ctx.pricing:
                raise ValueError("max_cost: the suite has no pricing: block, so the agent's tokens have no price; "
                                 "add pricing: {MODEL: {input: ..., output: ...}} (per million tokens), or use "
                                 "max_tokens")
            if ctx.agent_model is not None and ctx.agent_model not in ctx.pricing:
                raise ValueError(unpriced(ctx.pricing, ctx.agent_model))

    def check_sample(self, sample: Sample) -> list[str]:
        """A row asking its own model must be priced too (before any model call, not as an error per sample)."""
        own = sample.agent_model
        if self.spec.max_cost is None or own is None or not self.pricing or own in self.pricing:
            return []
        return [f"sample {sample.id!r}: agent_model: {unpriced(self.pricing, own)} (grader {self.name})"]

    async def grade(self, ctx: GradeContext) -> Grade:
        spec = self.spec
        usage = ctx.view.usage()
        if not any(turn.steps for turn in ctx.view.turns):
            return Grade.not_applicable("no model call: no tokens to count")
        if usage.total_tokens == 0:
            return Grade.not_applicable("the agent's steps report no tokens (its endpoint sent no usage, or it is "
                                        "no model the harness calls): nothing to count")
        metadata: dict[str, object] = {"tokens": usage.total_tokens, "prompt_tokens": usage.prompt_tokens,
                                       "completion_tokens": usage.completion_tokens}
        said, over = [], False
        if spec.max_tokens is not None:
            over = usage.total_tokens > spec.max_tokens
            said.append(f"{usage.total_tokens} tokens {'over' if over else 'within'} max_tokens {spec.max_tokens}")
        if spec.max_cost is not None:
            model = ctx.sample.agent_model or self.agent_model
            cost = price_of(self.pricing, model, usage) if model is not None else None
            if cost is None:
                return Grade.failed(unpriced(self.pricing, str(model)))
            metadata.update(cost=cost, model=model, max_cost=spec.max_cost)
            dear = cost > spec.max_cost
            over = over or dear
            said.append(f"cost {cost:.6g} {'over' if dear else 'within'} max_cost {spec.max_cost:g} ({model})")
        return Grade(score=0.0 if over else 1.0, rationale="; ".join(said), metadata=metadata)
