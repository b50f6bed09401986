"""The record of what the agent did; graders read only this."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evals_cli.models.base import Record

StopReason = Literal["completed", "empty_answer", "unparsed_tool_call", "max_steps", "error"]
"""Why the loop stopped. `completed`: the agent answered in text. `empty_answer`: it stopped without calling a
tool and without a word. `unparsed_tool_call`: its final answer is a tool call written as text (JSON, fenced, or
in <tool_call> tags) that the endpoint did not parse into a call, so no tool ran. `max_steps`: cut off at the
bound. `error`: the sample failed. Anything but `completed` is shown in the table and given to graders."""

UserSource = Literal["prefilled", "scripted", "simulated", "replayed"]
"""Where a user message came from: `prefilled` (the row's pre-filled messages end with it), `scripted` (the row's
`input`, or its user's `first_message` / `script`), `simulated` (the user simulator wrote it), `replayed` (taken
from an earlier run's conversation, `--replay-user`)."""

EndReason = Literal["user_done", "max_turns", "agent_error", "user_error", "agent_max_steps", "diverged"]
"""Why a simulated-user conversation ended. `user_done`: the user said so (the stop token or the end tool).
`max_turns`: the agent answered the user's last allowed message. `agent_error`: the agent's endpoint or code
failed. `user_error`: the simulator failed (its endpoint, or a reply out of character twice). `agent_max_steps`:
the agent hit its step bound within a turn. `diverged`: `--replay-user` left the recorded path and the sample is
marked so rather than continued."""


class Usage(Record):
    """Token counts as the endpoint reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage | None) -> None:
        if other is not None:
            self.prompt_tokens += other.prompt_tokens
            self.completion_tokens += other.completion_tokens


class Effect(Record):
    """What one stateful tool call did to the sample's world (absent for canned tools)."""

    op: str = Field(description='The effect, e.g. "files.write", "records.update".')
    target: str = Field(description='What it acted on: a file path, "collection/id" for a record, or a collection/folder.')
    changed: bool = Field(default=False, description="Whether the world changed.")
    before: Any = Field(default=None, description="Only when `changed`: the file text / record object before "
                                                  "(None: did not exist). A call that changed nothing (a read, a "
                                                  "write of the same text) keeps no copy: its result says what "
                                                  "the agent saw.")
    after: Any = Field(default=None, description="Only when `changed`: after (None: deleted).")
    error: str | None = Field(default=None, description="Why the effect failed, as the agent was told.")


class StateChange(Record):
    """One difference between the world as declared and as the agent left it."""

    kind: Literal["file", "record"]
    target: str = Field(description='File path, or "collection/id".')
    before: Any = Field(default=None, description="None: created by the agent.")
    after: Any = Field(default=None, description="None: deleted by the agent.")


class ToolCall(Record):
    """One tool call the agent made and the mocked answer it got."""

    id: str = ""
    name: str
    arguments: dict[str, Any] | None = Field(default=None, description="Parsed arguments; None when unparseable.")
    raw_arguments: str = Field(default="", description="The argument string exactly as the model sent it.")
    arguments_error: str | None = Field(default=None, description="Why the arguments could not be parsed.")
    result: str = ""
    is_error: bool = Field(default=False, description="The result is an error (unknown tool, bad arguments, mock error).")
    unknown_tool: bool = False
    effect: Effect | None = Field(default=None, description="What a stateful tool did; None for canned tools.")


class Step(Record):
    """One model call inside a user turn."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    started: float = Field(default=0.0, description="Wall-clock start of the model call (epoch seconds).")
    latency_s: float = 0.0


class Turn(Record):
    """One user message and everything the agent did in response."""

    user: str | None = Field(default=None, description="The user message; None when it came pre-filled.")
    user_source: UserSource | None = Field(
        default=None, description="Where the user message came from; None on ordinary (non-simulated) samples.")
    steps: list[Step] = Field(default_factory=list)

    @property
    def answer(self) -> str:
        """The last assistant text of the turn (its final answer when the loop completed)."""
        for step in reversed(self.steps):
            if step.content:
                return step.content
        return ""

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for step in self.steps for call in step.tool_calls]


class Trajectory(Record):
    """The whole conversation as run."""

    prefilled: list[dict[str, Any]] = Field(default_factory=list, description="Pre-filled messages, as sent.")
    turns: list[Turn] = Field(default_factory=list)
    stop_reason: StopReason = "completed"
    state_changes: list[StateChange] | None = Field(
        default=None,
        description="How the agent left the sample's world; None: no environment, []: it has one and nothing changed.",
    )
    end_reason: EndReason | None = Field(
        default=None, description="Why a simulated-user conversation ended; None for ordinary samples.")
    closing_user: str | None = Field(
        default=None, description="The simulated user's last words, which ended the conversation (the text before "
        "the stop token, or given with the end tool): recorded, never sent to the agent.")
    user_usage: Usage = Field(default_factory=Usage, description="The user simulator's tokens (never the agent's).")
    user_latency_s: float = Field(default=0.0, description="Seconds spent waiting for the user simulator.")
    user_calls: int = Field(default=0, description="Calls made to the user simulator (retries included).")
    agent_model: str | None = Field(
        default=None, description="The agent model asked for this sample when its row names its own (agent_model); "
        "None: the run's model.")
    diverged_at: int | None = Field(
        default=None, description="--replay-user: the turn (from 1) whose agent reply first differed from the recorded "
        "run's (or after which the record ran out); None: on the recorded path throughout, or no replay.")

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for turn in self.turns for call in turn.tool_calls]

    @property
    def final_answer(self) -> str:
        return self.turns[-1].answer if self.turns else ""

    def usage(self) -> Usage:
        total = Usage()
        for turn in self.turns:
            for step in turn.steps:
                total.add(step.usage)
        return total

    def scoped(self, turn: int | None) -> Trajectory:
        """The trajectory up to and including one turn, for per-turn grading (None: the whole of it)."""
        if turn is None:
            return self
        return Trajectory(
            prefilled=self.prefilled,
            turns=self.turns[: turn + 1],
            stop_reason=self.stop_reason,
            state_changes=self.state_changes,
            end_reason=self.end_reason,
        )

    @property
    def simulated(self) -> bool:
        """A simulated-user conversation."""
        return self.end_reason is not None or any(t.user_source is not None for t in self.turns)
