"""An attack carried by a tool's result (indirect prompt injection), apart from the tools that carry it: an MCP
server's spec names it too, and importing it must not lift the server spec onto the tools' floor."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evals_cli.models.base import StrictModel


class InjectSpec(StrictModel):
    """An attack carried by a tool's result (indirect prompt injection): the payload an attacker planted in the
    data the tool returns (a web page, an email, a record's note). The agent reads it as the tool's answer; the
    call is marked `injected` in the trajectory, so a report shows which results carried an attack."""

    text: str = Field(min_length=1, description="The payload put into the tool's result.")
    position: Literal["append", "prepend", "replace"] = Field(
        default="append", description="append: after the result (a blank line between); prepend: before it; "
        "replace: instead of it.")
    on_call: int | None = Field(default=None, ge=1, description="Only the N-th call of the tool in the sample "
                                "(1 is the first; counted over calls that reached the tool); every call when absent.")
    when: dict[str, Any] = Field(default_factory=dict, description="Only calls whose arguments have all "
                                 "these values (compared as JSON, like a case's `when`).")
