"""Mocked tool declarations: what the agent is shown and what it gets back."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import Field, PrivateAttr, model_validator

from evals_cli.json_schema import JSON_TYPES, schema_problem
from evals_cli.models.base import StrictModel
from evals_cli.models.effects import EffectSpec
from evals_cli.models.injection import InjectSpec

JsonValue = Any

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def tool_name_problem(name: object) -> str | None:
    """Why endpoints would reject this tool name (OpenAI and most servers: 1-64 of [a-zA-Z0-9_-]), or None."""
    text = str(name)
    if TOOL_NAME.fullmatch(text):
        return None
    if not text:
        return "a tool name cannot be empty"
    if len(text) > 64:
        return f"tool name '{text[:40]}...' has {len(text)} characters; endpoints accept at most 64"
    bad = sorted({c for c in text if not re.fullmatch(r"[A-Za-z0-9_-]", c)})
    shown = ", ".join(repr(c) for c in bad[:5])
    return f"tool name '{text[:60]}' has characters endpoints reject ({shown}); use only letters, digits, _ and -"


NO_RESULT = ("has no return configured: give it returns (returns: \"\" for an empty answer), cases, sequence, "
             "error or effect")


class ToolCase(StrictModel):
    """A canned answer chosen when the call's arguments match `when`."""

    when: dict[str, JsonValue] = Field(description="Argument values that must all be equal for this case to apply.")
    returns: JsonValue = Field(default=None, description="What the tool returns in this case.")
    error: str | None = Field(default=None, description="Return this error instead of a result.")


class ToolSpec(StrictModel):
    """One mocked tool. Nothing is ever executed: the result is canned, or (with `effect`) computed from the
    sample's mocked environment, which the call may change."""

    description: str = Field(default="", description="Shown to the agent.")
    parameters: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="A JSON schema (with 'type': 'object'), or the shorthand {name: description} meaning "
        "required string parameters.",
    )
    returns: JsonValue = Field(default=None, description="Fixed result (text, or JSON that is serialised).")
    cases: list[ToolCase] = Field(default_factory=list, description="Results chosen by argument values; first match wins.")
    sequence: list[JsonValue] | None = Field(
        default=None, description="Results for successive calls; the last one repeats once exhausted."
    )
    error: str | None = Field(default=None, description="Always answer with this error message.")
    effect: EffectSpec | None = Field(
        default=None, description="Act on the sample's environment: files.read|write|append|list|delete|exists or "
        "records.get|list|search|create|update|delete (a string, or a mapping naming the collection and the "
        "parameters). `cases` still answer first when one matches.")
    python: str | None = Field(
        default=None, description="A function that computes the result: file.py:function (relative to the suite "
        "file) or module:function, called with (arguments, world); it may change the world's records and files, and "
        "raises evals_cli.tools.logic.ToolError to refuse. `cases` still answer first when one matches.")
    inject: InjectSpec | None = Field(
        default=None, description="Put an attack into this tool's result (indirect prompt injection): {text, "
        "position, on_call, when}. A row's `inject:` overrides it for that row.")
    # a tool an MCP server answers live (evals_cli/mcp): set by the server hub, never by a suite file
    _served_by: str | None = PrivateAttr(default=None)  # the server's name in mcp_servers
    _served_name: str = PrivateAttr(default="")  # the tool's name on that server (before any prefix)
    _logic: Any = PrivateAttr(default=None)  # the loaded `python` function (set when the run is prepared)
    # a computer tool (the suite's `computer:`, evals_cli/computer): answered in the episode's sandbox
    _computer: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _valid_schema(self) -> ToolSpec:
        """The schema the agent is shown must be one the endpoint accepts: `{type: strin}` passed validation and
        then failed every request (or was silently ignored by a lenient server)."""
        declared = self.parameters.get("type")
        if isinstance(declared, str) and "properties" not in self.parameters and declared != "object":
            # the shorthand allows a parameter called `type` described in words; a lone JSON type word is a
            # schema gone wrong: `{type: strin}`, or `{type: string}` where the tool needs an object of arguments
            if declared in JSON_TYPES:
                raise ValueError(f"parameters.type: a tool's parameters are an object schema (type: object, with "
                                 f"properties), not '{declared}'")
            hint = difflib.get_close_matches(declared, JSON_TYPES, n=1, cutoff=0.6)
            if hint and re.fullmatch(r"[a-z]+", declared):
                raise ValueError(f"parameters.type: '{declared}' is not a JSON Schema type; did you mean "
                                 f"'{hint[0]}'? (a parameter called type is described in words)")
        problem = schema_problem(self.json_schema()) if self.parameters and not self._words_only() else None
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _one_default(self) -> ToolSpec:
        defaults = [n for n in ("returns", "sequence", "error") if getattr(self, n) is not None]
        if len(defaults) > 1:
            raise ValueError(f"give only one of returns, sequence, error (got {', '.join(defaults)})")
        if self.sequence is not None and not self.sequence:
            raise ValueError("'sequence' is empty; list at least one result")
        if self.python is not None and (defaults or self.effect is not None):
            given = ", ".join([*defaults, *(["effect"] if self.effect is not None else [])])
            raise ValueError(f"a tool with python: computes its result: drop {given} (cases may still answer "
                             "particular arguments)")
        if self.effect is not None and defaults:
            raise ValueError(f"a tool with an effect computes its result: drop {', '.join(defaults)} (cases may "
                             "still answer particular arguments)")
        return self

    @model_validator(mode="after")
    def _effect_parameters(self) -> ToolSpec:
        """The parameters an effect reads must be ones the agent is shown: an effect reading `path` from a tool
        whose parameter is `filename` would fail every call."""
        if self.effect is None:
            return self
        declared = list(self.json_schema().get("properties") or {})
        required = self.effect.info.required
        for setting, param in self.effect.parameters_read().items():
            if param in declared:
                continue
            base = setting.split(".")[0]
            if base not in required and base != "fields" and param == getattr(EffectSpec.model_fields.get(base),
                                                                               "default", None):
                continue  # an optional argument left at its default name: the effect does without it
            hint = difflib.get_close_matches(param, declared, n=1, cutoff=0.5)
            did = f"; did you mean {base}: {hint[0]}?" if hint else ""
            shown = ", ".join(declared) or "none"
            raise ValueError(f"effect.{base}: {self.effect.op} reads argument '{param}', which the tool does not "
                             f"declare (parameters: {shown}){did}")
        return self

    def has_result(self) -> bool:
        """True when the file says what the tool answers (returns, even `returns: ""`, cases, sequence or error).
        A tool without any would answer every call with an empty string the user never wrote."""
        return bool({"returns", "sequence", "error"} & self.model_fields_set) or bool(self.cases) or \
            self.effect is not None or self._served_by is not None or self.python is not None or \
            self._computer is not None

    @property
    def computer(self) -> str | None:
        """The computer tool this is (`bash`, `edit`; None: not one), answered in the episode's sandbox."""
        return self._computer

    @property
    def served_by(self) -> str | None:
        """The MCP server that answers this tool's calls live (None: a mocked tool)."""
        return self._served_by

    def _words_only(self) -> bool:
        """The shorthand with every parameter described in words: the schema `json_schema` makes of it is valid by
        construction, so the meta-schema check (and jsonschema's import, a tenth of a short run's start-up) is
        skipped."""
        params = self.parameters
        return params.get("type") != "object" and "properties" not in params and not any(
            isinstance(desc, dict) for desc in params.values())

    def json_schema(self) -> dict[str, JsonValue]:
        """The parameters as a proper JSON schema, expanding the shorthand."""
        params = self.parameters
        if not params:
            return {"type": "object", "properties": {}}
        if params.get("type") == "object" or "properties" in params:
            return {"type": "object", **params} if "type" not in params else dict(params)
        properties = {}
        for name, desc in params.items():
            properties[name] = {"type": "string", "description": str(desc)} if not isinstance(desc, dict) else desc
        return {"type": "object", "properties": properties, "required": list(params)}
