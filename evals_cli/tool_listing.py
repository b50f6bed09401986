"""`evals list tools SUITE`: the tools the agent will be offered, each with where it comes from (the suite's
`tools:`, or which MCP server, live or mock), listed the way a run would list them; then, with dual control, the
simulated user's own (`user_tools:` and `user_mcp_servers:`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class OfferedTool:
    name: str
    source: str
    description: str
    actor: str = "agent"  # or "user": a tool of the simulated user (dual control)


def offered_tools(suite_path: Path, target_file: Path | None = None,
                  replay: Path | None = None) -> list[OfferedTool]:
    """Start the suite's servers (or read them from `replay`), list, stop; ConfigError for the suite's faults."""
    from evals_cli.mcp.hub import McpHub
    from evals_cli.suite.loader import TargetOverride, load_suite

    suite = load_suite(suite_path, TargetOverride(file=target_file) if target_file is not None else None)
    computer = _computer_tools(suite.computer, suite.sandbox.kind if suite.sandbox is not None else "none")
    if not suite.mcp_servers and not suite.user_mcp_servers:
        return computer + ([OfferedTool(name, "tools: (mocked)", spec.description)
                            for name, spec in suite.tools.items()]
                + [OfferedTool(name, "user_tools: (mocked)", spec.description, "user")
                   for name, spec in suite.user_tools.items()])
    hub = McpHub(suite.mcp_servers, suite.tools, base_dir=suite.base_dir, replay=replay,
                 user_servers=suite.user_mcp_servers, user_tools=suite.user_tools)
    try:
        sources, user_sources = hub.sources(), hub.sources("user")
        return computer + ([OfferedTool(name, sources[name], spec.description)
                            for name, spec in hub.tools().items()]
                + [OfferedTool(name, user_sources[name], spec.description, "user")
                   for name, spec in hub.user_tools().items()])
    finally:
        hub.close()


def _computer_tools(names: Sequence[str], kind: str) -> list[OfferedTool]:
    from evals_cli.computer.tools import computer_tools

    return [OfferedTool(name, f"computer: (run in the episode's sandbox, kind {kind})", spec.description)
            for name, spec in computer_tools(names).items()]


def render(tools: list[OfferedTool], width: int) -> str:
    agent = [t for t in tools if t.actor == "agent"]
    user = [t for t in tools if t.actor == "user"]
    lines = [_section(agent, "the agent will see", width) if agent else "the agent is offered no tools"]
    if user:
        lines.append(_section(user, "the simulated user will see (user_tools, user_mcp_servers)", width))
    return "\n".join(lines)


def _section(tools: list[OfferedTool], whose: str, width: int) -> str:
    name_width = min(max(len(t.name) for t in tools), 40)
    lines = [f"{len(tools)} tool(s) {whose}:"]
    for tool in tools:
        lines.append(f"  {tool.name.ljust(name_width)}  {tool.source}")
        if tool.description:
            first = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
            room = max(20, width - name_width - 6)
            lines.append(f"  {''.ljust(name_width)}  {first[:room]}")
    return "\n".join(lines)
