"""One dataset row, as every later stage sees it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.expected_state import ExpectedState
from evals_cli.models.injection import InjectSpec
from evals_cli.models.sandbox import SandboxSpec
from evals_cli.models.simulated_user import UserSpec
from evals_cli.models.tools import NO_RESULT, ToolSpec, tool_name_problem


class Message(StrictModel):
    """A pre-filled chat message (mid-conversation samples)."""

    role: Literal["system", "user", "assistant", "tool"] = Field(
        description="system, user, assistant or tool (the roles every OpenAI-compatible endpoint accepts).")
    content: str | None = Field(default=None, description="Message text.")
    tool_calls: list[dict[str, Any]] | None = Field(default=None, description="Assistant tool calls, OpenAI shape.")
    tool_call_id: str | None = Field(default=None, description="For role tool: the call it answers.")
    name: str | None = Field(default=None, description="Optional author name.")


Scalars = str | int | float | list[str | int | float]

# Row fields a grader reads that earlier versions read under `metadata:`. The top-level name is the one to write;
# the metadata spelling is still read (when the top-level field is absent) and noted as deprecated.
METADATA_ALIASES = ("expected_calls", "must_cite", "must_not_say")


def row_field_note(name: str) -> str:
    """The words for a row's deprecated `metadata.NAME` (the same in `evals validate` and the README)."""
    return (f"metadata.{name} is the old place of the row field {name}: still read, but deprecated; "
            f"write {name} at the top level of the row")


def agent_model_note(model: str) -> str:
    """What `evals validate` says about a row naming its own agent model (one wording per model)."""
    return (f"agent_model: this row asks the agent model {model!r}, not the run's (--model, target.model, "
            "EVAL_AGENT_MODEL); a run over several models asks each one's own model instead")


class ExpectedAction(StrictModel):
    """One gold call: the expected world is the initial one with these calls applied by the suite's tools."""

    tool: str = Field(description="The tool to call (a tool of the suite, with an effect or python logic).")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Its arguments.")
    requestor: Literal["agent", "user"] = Field(
        default="agent", description="Who makes the call (tau2's key): the agent, with the suite's tools, or the "
        "simulated user, with its user_tools (dual control).")


class Sample(StrictModel):
    """One evaluation case. `input`/`ground_truth` lists of equal length switch on per-turn grading."""

    id: str | None = Field(default=None, description="Stable sample id; defaults to 'line-N'.")
    input: str | list[str] | None = Field(
        default=None, description="The user message, or a list of user messages sent in turn."
    )
    ground_truth: str | list[str] | None = Field(
        default=None,
        description="Expected answer. A list the same length as a list input means per-turn grading; "
        "otherwise a list holds acceptable alternatives.",
    )
    messages: list[Message] | None = Field(
        default=None, description="A pre-filled conversation the agent continues (mid-conversation case)."
    )
    choices: list[str] | None = Field(
        default=None, min_length=2, max_length=26, description="A multiple-choice row's options (read by choice, "
        "whose suite shows them after the input as A) ... B) ...; ground_truth is the correct one's letter).")
    expected_tool_order: list[str] | None = Field(
        default=None, description="Tools expected, in order (read by tool_order, and stop_behavior's required tools).")
    forbidden_tools: list[str] | None = Field(
        default=None, description="Tools the agent must not call (read by forbidden_tools).")
    expected_calls: list[dict[str, Any]] | None = Field(
        default=None, description="Calls expected with their arguments, each {tool, args, match} (read by tool_args; "
        "formerly metadata.expected_calls).")
    must_cite: Scalars | None = Field(
        default=None, description="Values the answer must state (read by grounding; formerly metadata.must_cite).")
    must_not_say: Scalars | None = Field(
        default=None, description="Values the answer must not state (read by grounding; formerly "
        "metadata.must_not_say).")
    secrets: list[str] | None = Field(
        default=None, description="Planted values (canaries) the agent must never reveal: in its replies or in the "
        "arguments of its tool calls (read by no_leak, added to the grader's own secrets).")
    tools: dict[str, ToolSpec] | None = Field(
        default=None, description="Per-sample mocked tools: replace or add to the suite's tools by name."
    )
    inject: dict[str, InjectSpec] | None = Field(
        default=None, description="Attacks this row puts into tool results, by tool name ({text, position, on_call, "
        "when}, as a tool's `inject:`): replaces that tool's own `inject` for this row (indirect prompt injection).")
    sandbox: SandboxSpec | None = Field(default=None, description="This row's own sandbox, in place of the "
                                        "suite's (the same shape as the suite's `sandbox`).")
    environment: EnvironmentSpec | None = Field(
        default=None, description="This row's mocked world: extends the suite's environment (files by path, records "
        "by collection and id; `replace: true` to use it alone). The runner hands targets and graders the merged one.")
    expected_state: ExpectedState | None = Field(
        default=None, description="The world as it must be left (read by final_state and stop_behavior).")
    expected_actions: list[ExpectedAction] | None = Field(
        default=None, description="Gold calls instead of (or beside) expected_state: final_state applies them to the "
        "initial world with the same tools and compares the agent's world with that one, field by field, no other "
        "change allowed.")
    tags: list[str] = Field(default_factory=list, description="Free labels, used by sample_tags filtering.")
    rubric_vars: dict[str, Any] = Field(default_factory=dict, description="Extra variables for judge rubrics.")
    agent_args: dict[str, Any] | None = Field(
        default=None,
        description="letta-evals' per-sample agent creation arguments: accepted and carried, so letta datasets "
        "load as they are; an OpenAI-compatible target has no agent to create and does not read them.",
    )
    rubric: str | None = Field(
        default=None, description="This sample's own judge rubric: inline text, builtin:NAME, or a file "
        "relative to the suite (ends in .j2, .jinja, .txt or .md)."
    )
    max_steps: int | None = Field(default=None, ge=1, description="Override of the target's loop bound.")
    max_tokens_per_sample: int | None = Field(default=None, ge=1, description="Override of the target's token "
                                              "limit for this sample (openai_chat, openai_responses targets).")
    max_messages: int | None = Field(default=None, ge=1, description="Override of the target's message limit "
                                     "for this sample (openai_chat, openai_responses targets).")
    agent_model: str | None = Field(
        default=None, min_length=1, description="This row's agent model (a tutorial item's data.config.model), asked "
        "for this row instead of the run's (--model, target.model, EVAL_AGENT_MODEL); a run over several models asks "
        "each one's own model for every row.")
    user: UserSpec | None = Field(
        default=None, description="A simulated user: the conversation goes on, turn by turn, with a model playing "
        "this user (after the row's `input` messages, if any); the suite's `user:` block gives defaults.")
    success: str | None = Field(
        default=None, description="What success means for this row, in words (read by goal-completion judges).")
    category: str | None = Field(default=None, description="Free category label.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Anything else; carried into results.")
    # what the reader of another harness's format did that the row does not say (evals validate notes it)
    _format_notes: list[str] = PrivateAttr(default_factory=list)

    @field_validator("tools")
    @classmethod
    def _tools_answer(cls, tools: dict[str, ToolSpec] | None) -> dict[str, ToolSpec] | None:
        """A row's tool replaces the suite's of that name whole, so it must say what it answers itself."""
        for name in tools or {}:
            problem = tool_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        silent = [name for name, spec in (tools or {}).items() if not spec.has_result()]
        if silent:
            raise ValueError(f"tool {', '.join(repr(n) for n in silent)} {NO_RESULT}")
        return tools

    @model_validator(mode="after")
    def _check_shape(self) -> Sample:
        if self.input is None and self.user is not None:
            return self  # the simulated user (or its first_message / script) opens the conversation
        if self.input is None and not self.messages:
            raise ValueError("a sample needs 'input' (or pre-filled 'messages' ending with a user message)")
        if self.input is None and self.messages and self.messages[-1].role != "user":
            raise ValueError("without 'input', the pre-filled 'messages' must end with a user message")
        if isinstance(self.input, list):
            if not self.input:
                raise ValueError("'input' is an empty list")
            if isinstance(self.ground_truth, list) and len(self.ground_truth) != len(self.input):
                raise ValueError(
                    f"per-turn sample: 'input' has {len(self.input)} messages but 'ground_truth' has "
                    f"{len(self.ground_truth)}; give one ground truth per user message, or a single string "
                    "to grade only the final answer"
                )
        return self

    @model_validator(mode="after")
    def _one_place_per_field(self) -> Sample:
        both = [name for name in METADATA_ALIASES if getattr(self, name) is not None and name in self.metadata]
        if both:
            raise ValueError(f"give {both[0]} or metadata.{both[0]} (its deprecated place), not both")
        return self

    def row_field(self, name: str) -> Any:
        """A field a grader reads: the top-level one, else its deprecated place under metadata (None: neither)."""
        value = getattr(self, name)
        if value is None and name in METADATA_ALIASES:
            return self.metadata.get(name)
        return value

    @property
    def simulated(self) -> bool:
        """A simulated-user conversation (the row has a `user:` block)."""
        return self.user is not None

    def with_user_defaults(self, defaults: UserSpec | None) -> Sample:
        """This sample with the suite's `user:` defaults merged under its own block (itself without one)."""
        if self.user is None or defaults is None:
            return self
        return self.model_copy(update={"user": self.user.over(defaults)})

    def with_environment(self, suite: EnvironmentSpec | None) -> Sample:
        """This sample with the suite's environment merged under its own (itself when neither declares one)."""
        if suite is None and self.environment is None:
            return self
        merged = (suite or EnvironmentSpec()).merged(self.environment)
        return self.model_copy(update={"environment": merged})

    def naming_notes(self) -> list[str]:
        """Deprecated spellings this row uses (notes, not problems: the row is read as it is)."""
        return [row_field_note(name) for name in METADATA_ALIASES if name in self.metadata]

    def add_format_notes(self, notes: list[str]) -> None:
        """Record what reading this row from another harness's format decided for it (a tutorial tool with no
        result answers ""), for `evals validate` to say."""
        self._format_notes.extend(notes)

    @property
    def format_notes(self) -> list[str]:
        return list(self._format_notes)

    def notes(self) -> list[str]:
        """Everything `evals validate` says about this row: deprecated spellings, what its format's reader
        decided, and a model of its own (the run's model does not apply to it)."""
        own = [agent_model_note(self.agent_model)] if self.agent_model is not None else []
        return self.naming_notes() + self.format_notes + own

    @property
    def user_turns(self) -> list[str]:
        """The user messages to send, in order (empty when the pre-filled messages end with the user)."""
        if self.input is None:
            return []
        return [self.input] if isinstance(self.input, str) else list(self.input)

    @property
    def per_turn(self) -> bool:
        """True when every user turn has its own ground truth."""
        return (
            isinstance(self.input, list)
            and isinstance(self.ground_truth, list)
            and len(self.input) == len(self.ground_truth)
        )

    def ground_truth_for(self, turn: int | None) -> str | list[str] | None:
        """The ground truth to grade a turn (or, with None, the whole sample) against."""
        if turn is not None and self.per_turn:
            assert isinstance(self.ground_truth, list)
            return self.ground_truth[turn]
        if self.per_turn:
            assert isinstance(self.ground_truth, list)
            return self.ground_truth[-1]
        return self.ground_truth

    def input_text(self) -> str:
        """The user side as one string, for tables and rubrics."""
        if self.input is None:
            if self.user is not None and not self.messages:  # what the table can say before the user has spoken
                opening = self.user.opening([])
                return opening[0] if opening else f"[simulated user] {self.user.goal or self.user.persona or ''}"
            last = self.messages[-1] if self.messages else None
            return (last.content or "") if last else ""
        return self.input if isinstance(self.input, str) else "\n".join(self.input)


class RowNotes:
    """Deprecated spellings and format notes across a dataset, one note per wording (its first row and how many
    rows have it), so a dataset of a million old rows gives a few lines, not a million."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, int]] = {}

    def add(self, sample: Sample, where: str) -> None:
        for note in sample.notes():
            first, count = self._seen.get(note, (where, 0))
            self._seen[note] = (first, count + 1)

    def notes(self) -> list[str]:
        return [f"{first}: {note}" + (f" ({count} rows)" if count > 1 else "")
                for note, (first, count) in self._seen.items()]
