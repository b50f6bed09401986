"""Mocked tool declarations: what the agent is shown and what it gets back."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from evals_cli.models.base import StrictModel

JsonValue = Any


class ToolCase(StrictModel):
    """A canned answer chosen when the call's arguments match `when`."""

    when: dict[str, JsonValue] = Field(description="Argument values that must all be equal for this case to apply.")
    returns: JsonValue = Field(default=None, description="What the tool returns in this case.")
    error: str | None = Field(default=None, description="Return this error instead of a result.")


class ToolSpec(StrictModel):
    """One mocked tool. Nothing is ever executed: the result is always canned."""

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

    @model_validator(mode="after")
    def _one_default(self) -> ToolSpec:
        defaults = [n for n in ("returns", "sequence", "error") if getattr(self, n) is not None]
        if len(defaults) > 1:
            raise ValueError(f"give only one of returns, sequence, error (got {', '.join(defaults)})")
        if self.sequence is not None and not self.sequence:
            raise ValueError("'sequence' is empty; list at least one result")
        return self

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
