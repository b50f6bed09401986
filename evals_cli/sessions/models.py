"""The session file format: one recorded multi-agent session (a JSON object, a JSON list of them, or JSONL).

Strict like every user-facing model (unknown keys are errors with a 'did you mean' hint): a recording whose
fields are misspelt would otherwise be scored as if the agents had done nothing. `metadata` holds anything else.
The JSON Schema shipped as `session.schema.json` is generated from these models (see `schema.py`).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import Field, model_validator

from evals_cli.json_schema import schema_problem
from evals_cli.models.base import StrictModel


class ToolDefinition(StrictModel):
    """A tool an agent may call."""

    name: str = Field(min_length=1, description="Tool name.")
    parameters_schema: dict[str, Any] = Field(
        description="The parameters: a JSON Schema of the parameters object (it has `type` or `properties`), or "
        "a map of parameter names ({\"order_id\": {\"type\": \"string\", \"required\": true}}, or a name and "
        "its description), each required unless it says \"required\": false. {} means unchecked.")
    description: str | None = Field(default=None, description="Free text.")

    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON Schema, whichever form the recording used (ValueError when neither)."""
        return parameters_json_schema(self.parameters_schema)


def _is_json_schema(raw: dict[str, Any]) -> bool:
    """Decided by shape: JSON Schema's `type` is a string or a list (a parameter named `type` is described by
    an object), and its `properties` an object that is not itself one parameter's description."""
    if "type" in raw:
        return isinstance(raw["type"], str | list)
    properties = raw.get("properties")
    return isinstance(properties, dict) and not isinstance(properties.get("type"), str)


def parameters_json_schema(raw: dict[str, Any]) -> dict[str, Any]:
    """A recording's `parameters_schema` as a JSON Schema. The multi-agent plan writes a map of parameter names
    and checks hallucinated (provided - expected) and missing (expected - provided) parameters from its keys;
    read as a JSON Schema, that map has only unknown keywords and checks nothing. The same shorthand rule as a
    suite's `parameters:`: a name with a description, or with its own schema (plus `required`)."""
    if not raw:
        return {}
    if _is_json_schema(raw):
        if raw.get("type", "object") != "object" and raw.get("type") != ["object"]:
            raise ValueError(f"parameters_schema has type {raw['type']!r}: the parameters of a tool are an object")
        return raw
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, entry in raw.items():
        if isinstance(entry, str):
            properties[name] = {"type": "string", "description": entry}
            required.append(name)
            continue
        if not isinstance(entry, dict):
            raise ValueError(
                f"parameters_schema.{name} is {type(entry).__name__} {json.dumps(entry, default=str)[:60]}: write "
                "a JSON Schema (with \"type\": \"object\" and \"properties\") or a map of parameter names, each "
                "to its description or to {\"type\": ..., \"required\": true|false}")
        flag = entry.get("required", True)
        if not isinstance(flag, bool):
            raise ValueError(f"parameters_schema.{name}.required is {flag!r}: true or false")
        properties[name] = {k: v for k, v in entry.items() if k != "required"}
        if flag:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


class AgentDefinition(StrictModel):
    """One cooperating agent and the only tools its role allows."""

    agent_id: str = Field(min_length=1, description="Unique within the session, e.g. planner.")
    role: str = Field(description="What the agent is for; shown to the judge.")
    tools_available: list[ToolDefinition] = Field(description="Tools this agent may call ([] for none).")

    @model_validator(mode="after")
    def _unique_tools(self) -> AgentDefinition:
        names = [t.name for t in self.tools_available]
        if len(names) != len(set(names)):
            raise ValueError(f"agent {self.agent_id!r} lists a tool twice: {', '.join(names)}")
        for tool in self.tools_available:
            try:
                schema = tool.json_schema()
            except ValueError as exc:
                raise ValueError(f"agent {self.agent_id!r}, tool {tool.name!r}: {exc}") from None
            # the calls are checked against it: a schema the engine cannot read is refused here, naming it
            problem = schema_problem(schema, "parameters_schema") if schema else None
            if problem is not None:
                if not _is_json_schema(tool.parameters_schema):  # a map of names: say it as it was written
                    problem = problem.replace("parameters_schema.properties.", "parameters_schema.", 1)
                raise ValueError(f"agent {self.agent_id!r}, tool {tool.name!r}: {problem}")
        return self

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools_available]


class ToolCallRecord(StrictModel):
    """One tool call as it happened."""

    tool_name: str = Field(min_length=1, description="The tool called.")
    parameters: dict[str, Any] = Field(description="The parameters sent.")
    result: Any = Field(description="What the tool returned (any JSON).")
    latency_ms: float | None = Field(ge=0, description="How long the call took.")


class AgentStep(StrictModel):
    """One step of an agent: a thought, a tool call and/or an output."""

    thought: str | None = Field(default=None, description="The agent's reasoning, when recorded.")
    tool_call: ToolCallRecord | None = Field(default=None, description="A tool call made in this step.")
    output: str | None = Field(default=None, description="Text the agent produced.")

    @model_validator(mode="after")
    def _not_empty(self) -> AgentStep:
        if self.thought is None and self.tool_call is None and self.output is None:
            raise ValueError("a step needs at least one of thought, tool_call or output")
        return self


class AgentInteraction(StrictModel):
    """One agent's turn at the work inside a user turn, possibly ending with a handoff."""

    agent_id: str = Field(description="Which agent acted (one of the session's agents).")
    latency_ms: float | None = Field(ge=0, description="Wall time of the whole interaction.")
    agent_steps: list[AgentStep] = Field(description="What the agent did, in order.")
    handoff_to: str | None = Field(default=None, description="The agent the work was handed to.")
    handoff_context: str | dict[str, Any] | None = Field(default=None, description="What was passed along.")

    @property
    def tool_calls(self) -> list[tuple[int, ToolCallRecord]]:
        """(step index, call) of every tool call."""
        return [(i, s.tool_call) for i, s in enumerate(self.agent_steps) if s.tool_call is not None]

    @property
    def thoughts(self) -> list[str]:
        return [s.thought for s in self.agent_steps if s.thought]

    @property
    def outputs(self) -> list[str]:
        return [s.output for s in self.agent_steps if s.output]

    def context_text(self) -> str:
        """The handoff context as text ('' when none was passed)."""
        ctx = self.handoff_context
        if ctx is None:
            return ""
        return ctx if isinstance(ctx, str) else json.dumps(ctx, ensure_ascii=False, sort_keys=True)


class SessionTurn(StrictModel):
    """One user message, the agents' work on it, and the answer the user got."""

    user_message: str = Field(description="What the user said.")
    agent_interactions: list[AgentInteraction] = Field(description="The agents' work, in order.")
    final_response: str = Field(description="The answer the user got.")


class AgentSession(StrictModel):
    """A whole recorded multi-agent session."""

    id: str = Field(min_length=1, description="Unique session id.")
    task: str = Field(description="What the agents were asked to achieve.")
    agents: list[AgentDefinition] = Field(min_length=1, description="The cooperating agents.")
    turns: list[SessionTurn] = Field(min_length=1, description="The conversation, turn by turn.")
    total_cost: float | None = Field(default=None, ge=0, description="Spend of the session, when known.")
    total_latency_ms: float | None = Field(default=None, ge=0, description="Wall time of the session.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Anything else; carried along, not scored.")
    analyses: list[Any] | None = Field(
        default=None, description="Analyses a recording already carries (the multi-agent plan writes `analyses[]`): "
        "loaded and kept, never scored; evals-cli computes its own.")

    @model_validator(mode="after")
    def _known_agents(self) -> AgentSession:
        ids = [a.agent_id for a in self.agents]
        if len(ids) != len(set(ids)):
            raise ValueError(f"agent ids must be unique: {', '.join(ids)}")
        problems = []
        for t, turn in enumerate(self.turns):
            for i, interaction in enumerate(turn.agent_interactions):
                where = f"turns[{t}].agent_interactions[{i}]"
                for field, value in (("agent_id", interaction.agent_id), ("handoff_to", interaction.handoff_to)):
                    if value is not None and value not in ids:
                        hint = difflib.get_close_matches(value, ids, n=1)
                        more = f" (did you mean {hint[0]!r}?)" if hint else ""
                        problems.append(f"{where}.{field} {value!r} is not one of the agents ({', '.join(ids)}){more}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def agent(self, agent_id: str) -> AgentDefinition:
        return next(a for a in self.agents if a.agent_id == agent_id)
