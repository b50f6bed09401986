"""The record of what the agent did; graders read only this."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, SerializerFunctionWrapHandler, model_serializer

from evals_cli.models.base import Record

StopReason = Literal["completed", "empty_answer", "unparsed_tool_call", "max_steps", "token_limit", "message_limit",
                     "cut_off", "error"]
"""Why the loop stopped. `completed`: the agent answered in text. `empty_answer`: it stopped without calling a
tool and without a word. `unparsed_tool_call`: its final answer is a tool call written as text (JSON, fenced, or
in <tool_call> tags) that the endpoint did not parse into a call, so no tool ran. `max_steps`: cut off at the
step bound of a turn. `token_limit` / `message_limit`: cut off at the sample's `max_tokens_per_sample` (the
agent's prompt plus completion tokens, over every turn) or `max_messages` (the conversation's messages); see
targets/limits.py. `cut_off`: a recorded conversation (a trace) ends mid-call: its last model reply asked for
tools and no model call followed, or its last model call never ended (the agent was stopped by its own step cap, a crash or a
timeout: the recording cannot say which), so there is no final answer. `error`: the sample failed. Anything but
`completed` is shown in the table and given to graders."""
LIMIT_OPTIONS: dict[str, str] = {"max_steps": "max_steps", "token_limit": "max_tokens_per_sample",
                                 "message_limit": "max_messages"}
"""The stop reasons of a loop cut off at one of its bounds (no final answer of the agent's own), each with the
option that set the bound."""
LIMIT_STOPS: frozenset[str] = frozenset(LIMIT_OPTIONS)

UserSource = Literal["prefilled", "scripted", "simulated", "replayed"]
"""Where a user message came from: `prefilled` (the row's pre-filled messages end with it), `scripted` (the row's
`input`, or its user's `first_message` / `script`), `simulated` (the user simulator wrote it), `replayed` (taken
from an earlier run's conversation, `--replay-user`)."""

EndReason = Literal["user_done", "max_turns", "time_limit", "agent_error", "user_error", "agent_max_steps",
                    "agent_token_limit", "agent_message_limit", "diverged", "attacker_out_of_character"]
"""Why a simulated-user conversation ended. `user_done`: the user said so (the stop token or the end tool; the
words before it were sent and answered). `max_turns`: the agent answered the user's last allowed message.
`time_limit`: the conversation ran past the user's `max_seconds` (the agent had answered every message it got).
`agent_error`: the agent's endpoint or code failed. `user_error`: the simulator failed (its endpoint, or a reply
out of character twice). `agent_max_steps`: the agent hit its step bound within a turn. `agent_token_limit` /
`agent_message_limit`: the sample's token or message limit stopped the agent (stop reason `token_limit` /
`message_limit`). `diverged`:
`--replay-user` left the recorded path and the sample is marked so rather than continued.
`attacker_out_of_character`: an attacker that had sent at least one message broke character twice (refused to go
on, wrote as the assistant): the attack ended there and what it got from the agent is graded."""


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


class Cut(Record):
    """How a change too large to store whole was stored (environment/excerpts.py): a world's file can grow to
    megabytes, and a whole copy before and after each call made one sample's results line grow with the square
    of the calls (44 appends of 200,000 characters: a 414 MB line). The sizes are the real ones, so a reader
    always learns how much was not kept."""

    stored: Literal["excerpt", "sizes"] = Field(
        default="excerpt", description="excerpt: `before`/`after` hold the part that changed; sizes: nothing of "
        "the values was stored (the sample's budget for stored state was spent), `before`/`after` are null.")
    before_chars: int | None = Field(default=None, description="The whole before's size in characters (a record: "
                                                               "of its JSON); null: it did not exist.")
    after_chars: int | None = Field(default=None, description="The whole after's size; null: deleted.")
    start: int = Field(default=0, description="Text: the offset, the same in both texts, where the stored "
                                              "excerpts begin; the text before it is the same in both.")
    rest_same: bool = Field(default=True, description="Text: the text after the stored excerpts is the same in "
                                                      "both; false when the excerpts stop short of the change's end.")
    fields_left_out: int = Field(default=0, description="Record: changed fields not stored (the stored objects "
                                                        "hold `id` and the changed fields that fit).")


_CUT = "Set when `before`/`after` are not the whole values: how they were cut, and the real sizes."


class _MaybeCut(Record):
    """A model with an optional `cut`, written only when set: a change stored whole keeps the line's old shape."""

    @model_serializer(mode="wrap")
    def _without_empty_cut(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("cut") is None:
            data.pop("cut", None)
        return data


class EffectRecord(_MaybeCut):
    """What one stateful tool call did to the sample's world (absent for canned tools): the record an effect kind
    (`evals_cli.Effect`, models/effects.py) returns beside the text the agent reads."""

    op: str = Field(description='The effect, e.g. "files.write", "records.update".')
    target: str = Field(description='What it acted on: a file path, "collection/id" for a record, or a collection/folder.')
    changed: bool = Field(default=False, description="Whether the world changed.")
    before: Any = Field(default=None, description="Only when `changed`: the file text / record object before "
                                                  "(None: did not exist). A call that changed nothing (a read, a "
                                                  "write of the same text) keeps no copy: its result says what "
                                                  "the agent saw. A large value is stored cut (see `cut`).")
    after: Any = Field(default=None, description="Only when `changed`: after (None: deleted).")
    error: str | None = Field(default=None, description="Why the effect failed, as the agent was told.")
    cut: Cut | None = Field(default=None, description=_CUT)
    # what replaying a cut effect needs (the edit, not a whole copy), in memory only: stop_behavior replays the
    # calls one by one in the process that ran them; a results file read back has none
    _replay: Any = PrivateAttr(default=None)

    def keep_for_replay(self, edit: Any) -> None:
        self._replay = edit

    @property
    def replay_edit(self) -> Any:
        return self._replay


class StateChange(_MaybeCut):
    """One difference in the sample's world, and who made it: the setup's from the world as declared to the
    starting state (`Trajectory.setup_changes`), the agent's from the starting state to the world it left
    (`Trajectory.state_changes`). In memory (what graders read) the values are whole; the results file stores
    large ones cut (see `cut`)."""

    kind: Literal["file", "record"]
    target: str = Field(description='File path, or "collection/id".')
    before: Any = Field(default=None, description="None: created by this actor.")
    after: Any = Field(default=None, description="None: deleted by this actor.")
    cut: Cut | None = Field(default=None, description=_CUT)
    actor: Literal["setup", "agent", "user"] = Field(
        default="agent", description="Who made the change: setup (the environment's setup step and MCP servers "
        "starting: the starting state), agent, or user; written only when it is not the agent.")

    @model_serializer(mode="wrap")
    def _without_agent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("cut") is None:
            data.pop("cut", None)
        if data.get("actor") == "agent":  # the agent's changes keep the line's old shape
            data.pop("actor", None)
        return data


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
    effect: EffectRecord | None = Field(default=None, description="What a stateful tool did; None for canned tools.")
    injected: bool = Field(default=False, description="The result carries an attack the suite put there (a tool's "
                           "`inject:`, indirect prompt injection); written only when true.")

    @model_serializer(mode="wrap")
    def _without_injected(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # calls without an attack keep the line's old shape
        data: dict[str, Any] = handler(self)
        if not data.get("injected"):
            data.pop("injected", None)
        return data


class Step(Record):
    """One model call inside a user turn."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    started: float = Field(default=0.0, description="Wall-clock start of the model call (epoch seconds).")
    latency_s: float = 0.0
    agent: str | None = Field(default=None, description="Recorded multi-agent sessions: the agent that took the "
                                                        "step; written only when set.")
    handoff_to: str | None = Field(default=None, description="Recorded multi-agent sessions: the agent the work "
                                                             "was handed to after this step; written only when set.")
    actor: Literal["agent", "user"] = Field(
        default="agent", description="Who acted: the agent, or a simulated user with tools of its own (dual "
        "control: the user's steps are `Turn.user_steps`); written only when it is the user.")

    @model_serializer(mode="wrap")
    def _without_agents(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a live run has one agent: its results lines keep the shape they always had
        data: dict[str, Any] = handler(self)
        for key in ("agent", "handoff_to"):
            if data.get(key) is None:
                data.pop(key, None)
        if data.get("actor") == "agent":
            data.pop("actor", None)
        return data


class Turn(Record):
    """One user message and everything the agent did in response."""

    user: str | None = Field(default=None, description="The user message; None when it came pre-filled.")
    user_source: UserSource | None = Field(
        default=None, description="Where the user message came from; None on ordinary (non-simulated) samples.")
    steps: list[Step] = Field(default_factory=list)
    user_steps: list[Step] = Field(
        default_factory=list, description="Dual control: the tool calls the simulated user made (on its own tools, "
        "over the same world) before it sent this message; written only when there are some. Kept apart from "
        "`steps` so every grader that reads the agent's steps keeps reading the agent's alone.")

    @model_serializer(mode="wrap")
    def _without_user_steps(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("user_steps"):  # a user without tools: the line keeps its old shape
            data.pop("user_steps", None)
        return data

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


# An episode's OpenTelemetry spans as kept on its trajectory: what the `spans` grader queries and the results
# show. A traced agent (a `command` or `http` agent exporting to the run's receiver, a `kind: traces` conversation)
# says more in its spans than its turns rebuild (a retriever, a guardrail, a failed call no tool result names), and
# a span assertion reads that.
#
# Spans are kept bounded and masked (traces/span_records.py builds them through the trace cleaner): at most
# `MAX_SPANS` per episode (the earliest started), at most `MAX_ATTRIBUTES` attributes per span, each string in an
# attribute value cut at `MAX_VALUE_CHARS` characters with the usual truncation marker, and `MAX_ATTRIBUTE_CHARS`
# characters of attributes (as JSON) per episode: past it, the later spans keep their name, links, times and status
# but no attributes, so a results line stays small whatever the agent exports. What was not kept is
# counted (`left_out`, `SpanRecord.attributes_left_out`), so a query that could change with it is said to be
# unknown, never passed.
MAX_SPANS = 1000
MAX_ATTRIBUTES = 64
MAX_VALUE_CHARS = 1000
MAX_ATTRIBUTE_CHARS = 1_000_000


class SpanRecord(Record):
    """One span of the episode, its attributes decoded to plain values and masked."""

    name: str
    span_id: str
    parent_id: str | None = Field(default=None, description="The parent span's id; None: a root span.")
    trace_id: str = ""
    start: float = Field(default=0.0, description="Start, epoch seconds.")
    duration_s: float | None = Field(default=None, description="None: the span never ended.")
    error: str | None = Field(default=None, description="The status message of a span whose status is ERROR (\"\" "
                              "when it gave none); None: not an error.")
    attributes: dict[str, Any] = Field(default_factory=dict)
    attributes_left_out: int = Field(default=0, description="Attributes over the bound, not kept; written only "
                                                            "when some were.")

    @model_serializer(mode="wrap")
    def _without_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("attributes_left_out"):
            data.pop("attributes_left_out", None)
        return data


class SpanTree(Record):
    """The spans an episode exported (in start order) and how many were over the bound."""

    spans: list[SpanRecord] = Field(default_factory=list)
    left_out: int = Field(default=0, description="Spans over the bound (MAX_SPANS), not kept.")


class Trajectory(Record):
    """The whole conversation as run."""

    prefilled: list[dict[str, Any]] = Field(default_factory=list, description="Pre-filled messages, as sent.")
    turns: list[Turn] = Field(default_factory=list)
    stop_reason: StopReason = "completed"
    state_changes: list[StateChange] | None = Field(
        default=None,
        description="What the agent changed in the sample's world, from the starting state (the declared world "
        "after setup); None: no environment, []: it has one and the agent changed nothing.",
    )
    setup_changes: list[StateChange] | None = Field(
        default=None, description="What the environment's setup (and MCP servers starting in the workspace) changed "
        "from the declared world: the starting state the agent met. None: nothing; written only when set.")
    end_reason: EndReason | None = Field(
        default=None, description="Why a simulated-user conversation ended; None for ordinary samples.")
    closing_user: str | None = Field(
        default=None, description="Results written before the user's last words were sent kept them here, unsent. "
        "Now the words before the stop token (or given with the end tool) are the last turn's user message, "
        "answered by the agent, and this stays null.")
    user_usage: Usage = Field(default_factory=Usage, description="The user simulator's tokens (never the agent's).")
    user_latency_s: float = Field(default=0.0, description="Seconds spent waiting for the user simulator.")
    user_calls: int = Field(default=0, description="Calls made to the user simulator (retries included).")
    agent_model: str | None = Field(
        default=None, description="The agent model asked for this sample when its row names its own (agent_model); "
        "None: the run's model.")
    diverged_at: int | None = Field(
        default=None, description="--replay-user: the turn (from 1) whose agent reply first differed from the recorded "
        "run's (or after which the record ran out); None: on the recorded path throughout, or no replay.")
    closing_user_steps: list[Step] = Field(
        default_factory=list, description="Dual control: the user's tool calls after the agent's last reply (it "
        "acted, then ended the conversation without a message, or its simulator failed); written only when set.")

    not_observed: str | None = Field(
        default=None, description="An external agent (command, http) whose steps were not observed: why (no telemetry "
        "from the agent, spans that do not rebuild its turns). Each turn then holds the reply alone and trajectory "
        "graders are n/a with this reason. None: every step was observed (always, for an agent evals-cli drives); "
        "written only when set.")
    spans: SpanTree | None = Field(
        default=None, description="The OpenTelemetry spans of a traced episode (a command or http agent's export, a "
        "traces conversation), bounded and masked (models/trajectory.py); None: the target records no spans; written "
        "only when set.")

    @model_serializer(mode="wrap")
    def _without_setup(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("setup_changes") is None:  # no setup: the line keeps its old shape
            data.pop("setup_changes", None)
        if not data.get("closing_user_steps"):
            data.pop("closing_user_steps", None)
        for key in ("not_observed", "spans"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The agent's tool calls (a user's own calls are `calls_by("user")`)."""
        return [call for turn in self.turns for call in turn.tool_calls]

    def steps_by(self, actor: Literal["agent", "user", "any"]) -> list[Step]:
        """The steps one actor took, in the order taken (`any`: the user's and the agent's together; in each
        turn the user acted before sending its message, the agent after reading it)."""
        out: list[Step] = []
        for turn in self.turns:
            if actor != "agent":
                out += turn.user_steps
            if actor != "user":
                out += turn.steps
        return out + (self.closing_user_steps if actor != "agent" else [])

    def calls_by(self, actor: Literal["agent", "user", "any"]) -> list[ToolCall]:
        """The tool calls one actor made, in order (`agent`: the same as `tool_calls`)."""
        return [call for step in self.steps_by(actor) for call in step.tool_calls]

    def starting_changes(self) -> list[StateChange]:
        """The setup's changes (the declared world to the starting state the agent met); [] without a setup."""
        return list(self.setup_changes or [])

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
            setup_changes=self.setup_changes,
            end_reason=self.end_reason,
        )

    @property
    def simulated(self) -> bool:
        """A simulated-user conversation."""
        return self.end_reason is not None or any(t.user_source is not None for t in self.turns)


def diverged_turn(trajectory: Trajectory) -> int | None:
    """The 1-based turn at which a `--replay-user` conversation left the recorded path (its agent reply differed,
    or the record ran out), None when it stayed on it or is no replay. Read from the trajectory alone:
    `--on-divergence stop` ends it there (end_reason diverged: its last turn); `continue` has the simulator write
    the messages after that turn, the first turn not `replayed`."""
    if trajectory.diverged_at is not None:  # set by the loop from the move that said so
        return trajectory.diverged_at
    turns = [t for t in trajectory.turns if t.user_source != "prefilled"]
    if not any(t.user_source == "replayed" for t in turns):
        return None
    if trajectory.end_reason == "diverged":
        return len(trajectory.turns)
    for index, turn in enumerate(trajectory.turns):
        if turn.user_source not in ("replayed", "prefilled"):
            return index  # the agent's reply in turn `index` (1-based) differed: the next message is not recorded
    return None
