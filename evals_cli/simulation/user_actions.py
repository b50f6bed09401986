"""Dual control: a simulated user who acts on the episode's world with tools of its own (the suite's `user_tools`,
tau2-bench's telecom customer toggling airplane mode while the agent guides them).

The simulator model is offered the user's tools as ordinary function tools. A reply that calls them is run
(`player.run_actions`) through the user's toolbox over the same world as the agent's, and the results go back to
the simulator, which is asked again, until it writes to the agent (or stops); at most `MAX_USER_ACTIONS` rounds
per user turn, past which the user cannot be played (`user_simulator`, never the agent's error). What it
did is a `Step` with `actor: user`, kept in the turn's `user_steps`; the simulator sees its earlier calls again
as its own tool calls in the conversation it is sent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evals_cli.models.trajectory import ToolCall, Turn

MAX_USER_ACTIONS = 8
"""Rounds of tool calls the simulator may make in one user turn before it must say something."""

TOOLS_NOTE = ("You have tools of your own (on your side: your device, your account). When the assistant asks you "
              "to do something one of them does, call it yourself, then tell the assistant what you did and what "
              "you see. Never ask the assistant to run them for you.")
"""Added to the simulator's system prompt when the user has tools."""


@dataclass
class Action:
    """One tool call in a simulator reply, as sent."""

    id: str
    name: str
    arguments: str


@dataclass
class Reply:
    """One simulator reply: its text, whether it ended the conversation, and the user-tool calls it made."""

    text: str
    done: bool
    actions: list[Action] = field(default_factory=list)


def call_messages(calls: Sequence[ToolCall], content: str | None = None) -> list[dict[str, Any]]:
    """The user's calls as the simulator's own assistant tool calls, each followed by its result."""
    out: list[dict[str, Any]] = [{"role": "assistant", "content": content or None, "tool_calls": [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.raw_arguments or "{}"}}
        for call in calls]}]
    out += [{"role": "tool", "tool_call_id": call.id, "content": call.result} for call in calls]
    return out


def history(turn: Turn) -> list[dict[str, Any]]:
    """What the user did with its tools before its message of `turn`, as the simulator's messages."""
    out: list[dict[str, Any]] = []
    for step in turn.user_steps:
        if step.tool_calls:
            out += call_messages(step.tool_calls, step.content)
    return out
