"""A sample's token and message limits (inspect_ai's `token_limit` and `message_limit`), for the agent loops the
harness drives (openai_chat, openai_responses).

Both count the whole sample, across its turns, from the trajectory, so the count is the same whatever API the
loop speaks:

- tokens: the agent's own usage as each step records it, prompt plus completion (inspect's total tokens). It is
  known only after a model call, so a call may overshoot; once the total is over the limit no further model
  call is made and the tool calls of the reply that crossed it are not run (inspect raises right after that call).
- messages: every message of the conversation, chat-shaped, as inspect counts its `messages`: the system prompt
  and pre-filled messages, each user message, one assistant message per model call, one tool message per tool
  call answered. A model call is not made when the conversation already holds the limit (its reply would
  exceed it); tool results that take it past the limit stop the loop before the next call.

Hitting a limit is how the sample ended (stop reason `token_limit` or `message_limit`), graded as a sample cut
off at `max_steps` is, never an error. The Episode sets the budget for the sample's task (`SAMPLE_BUDGET`, a
context variable: one target serves many samples at once, and `Agent.run_turn` keeps its signature), the loops
ask it before each model call.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from evals_cli.models.trajectory import StopReason, Trajectory


def message_count(trajectory: Trajectory) -> int:
    """The conversation's length in chat messages: pre-filled (the system prompt included), then per turn its
    user message (unless it came pre-filled) and per model call its assistant message and its tool results."""
    count = len(trajectory.prefilled)
    for turn in trajectory.turns:
        count += turn.user is not None
        count += sum(1 + len(step.tool_calls) for step in turn.steps)
    return count


@dataclass
class SampleBudget:
    """The limits of one (sample, repeat) over its trajectory; `hit` names the limit that stopped it."""

    trajectory: Trajectory
    tokens: int | None = None
    messages: int | None = None
    hit: StopReason | None = None

    def over_tokens(self) -> bool:
        """The agent's tokens are past the limit (checked after a model call, before its tools run)."""
        if self.tokens is not None and self.trajectory.usage().total_tokens > self.tokens:
            self.hit = "token_limit"
        return self.hit == "token_limit"

    def spent(self) -> bool:
        """No further model call may be made: the tokens are past their limit, or the conversation already
        holds `messages` messages."""
        if self.over_tokens():
            return True
        if self.messages is not None and message_count(self.trajectory) >= self.messages:
            self.hit = "message_limit"
        return self.hit is not None


SAMPLE_BUDGET: ContextVar[SampleBudget | None] = ContextVar("evals_sample_budget", default=None)
"""The budget of the sample whose task this is (None: no limits, or a loop run outside an Episode)."""


def limit_reached() -> bool:
    """Whether the running sample may make no further model call (see `SampleBudget.spent`)."""
    budget = SAMPLE_BUDGET.get()
    return budget is not None and budget.spent()


def tokens_exceeded() -> bool:
    """Whether the running sample's last model call took its tokens past the limit."""
    budget = SAMPLE_BUDGET.get()
    return budget is not None and budget.over_tokens()
