"""The generator's request: a Jinja2 template (the shipped templates/rows.j2, or the user's `--template`) rendered
in the rubrics' bounded sandbox with what the model must know to write rows the suite can run: the policy, the
tools (their schemas, and which ones change the world), the world they act on, how many rows, which strategies
(attacker rows) and the goals already written (so a later request does not write them again)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.models.effects import EFFECTS
from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.tools import ToolSpec

DEFAULT_TEMPLATE_PATH = Path(__file__).resolve().parent / "templates" / "rows.j2"
MAX_WORLD_CHARS = 20_000  # the world shown to the model: a large one is cut (the model needs its ids, not all of it)
MAX_AVOID = 40  # goals already written listed in a request: the latest ones


def has_logic(spec: ToolSpec) -> bool:
    """A tool a gold action can be applied with: an effect or a python function (never a live MCP tool)."""
    return spec.served_by is None and (spec.effect is not None or spec.python is not None)


def changes_world(spec: ToolSpec) -> bool:
    """A tool that may change the world: a mutating effect (as its kind registered it), or a python function
    (which may do anything)."""
    if not has_logic(spec):
        return False
    if spec.effect is None:
        return True
    entry = EFFECTS.get(spec.effect.op)
    return entry is None or bool(entry.impl.mutating)


def load_template(path: Path | None) -> str:
    """The template text: the user's file, else the shipped one; a missing file or a syntax error is exit 2
    naming `--template`."""
    from evals_cli.graders.rubric import read_template

    return read_template(path or DEFAULT_TEMPLATE_PATH, f"--template {path}",
                         ": no such file; give a Jinja2 template (or leave --template out for the built-in one)")


@dataclass(frozen=True)
class Brief:
    """What every request of one generation shows the model."""

    policy: str
    tools: dict[str, ToolSpec]
    environment: EnvironmentSpec | None
    kind: str  # task | attacker
    #: dual control: the simulated user's own tools (the suite's `user_tools`); a gold action with one of them
    #: says `requestor: user` and is applied by it, as the run applies it
    user_tools: dict[str, ToolSpec] = field(default_factory=dict)

    @property
    def needs_actions(self) -> bool:
        """Rows must give expected_actions: the suite has tools (the agent's or the user's) a gold action can be
        applied with."""
        return any(has_logic(spec) for spec in (*self.tools.values(), *self.user_tools.values()))

    def actor_tools(self, requestor: str) -> dict[str, ToolSpec]:
        """The tools a gold action of `requestor` (agent or user) is applied with."""
        return self.user_tools if requestor == "user" else self.tools

    def tool_lines(self, requestor: str = "agent") -> list[dict[str, Any]]:
        """Each tool of one actor as the template shows it: the schema that actor is offered, so gold arguments
        fit it."""
        return [{"name": name, "description": spec.description or "",
                 "parameters": json.dumps(spec.json_schema(), ensure_ascii=False, sort_keys=True),
                 "changes_world": changes_world(spec)} for name, spec in self.actor_tools(requestor).items()]

    def world(self) -> str:
        """The starting world as JSON: the model needs its ids to write gold actions the tools accept."""
        if self.environment is None:
            return ""
        text = json.dumps(self.environment.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)
        return text if len(text) <= MAX_WORLD_CHARS else text[:MAX_WORLD_CHARS] + " ... (cut)"


def render_request(template: str, brief: Brief, count: int, strategies: list[str], avoid: list[str],
                   order: list[str]) -> str:
    """One request's prompt. `order`: the agent's tools in this request's (seeded) order; the user's tools
    (`user_tools`, dual control) are shown in the suite's order."""
    from evals_cli.graders.rubric import RubricError, render_rubric

    lines = {line["name"]: line for line in brief.tool_lines()}
    variables = {"policy": brief.policy, "tools": [lines[name] for name in order],
                 "user_tools": brief.tool_lines("user"), "environment": brief.world(),
                 "count": count, "kind": brief.kind, "strategies": strategies,
                 "needs_actions": brief.needs_actions, "avoid": avoid[-MAX_AVOID:]}
    try:
        return render_rubric(template, variables).strip()
    except RubricError as exc:
        raise ConfigError(f"--template: the template does not render: {exc}") from None
