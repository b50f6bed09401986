"""What a run knows of its endpoints, gathered in one place: every secret (for the Redactor of every output and
recording) and who answers for each role (kept in run.json, so that a resume pointed elsewhere is refused)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evals_cli.endpoints.resolve import DEFAULT_URL, NO_KEY, Endpoint
from evals_cli.endpoints.secrets import mask_url, spec_secrets
from evals_cli.suite.spec import SuiteSpec


def judges_of(grader: Any) -> list[Endpoint]:
    """The endpoints a grader asks (a judge, or a panel of them)."""
    return [e for e in getattr(grader, "endpoints", None) or [getattr(grader, "endpoint", None)]
            if isinstance(e, Endpoint)]


def run_secrets(suite: SuiteSpec, agent: Endpoint | None, user: Endpoint | None,
                graders: Mapping[str, Any]) -> list[str]:
    """The resolved keys and URL credentials of the agent, the user simulator and every judge (from the suite, the
    CLI or the environment), what the suite states (api_key, base_url credentials, secret-looking extra_body
    values) and its MCP servers' credentials."""
    endpoints = [e for e in (agent, user) if e is not None]
    for grader in graders.values():
        endpoints += judges_of(grader)
    found = {s for e in endpoints for s in e.secrets()}
    found.update(spec_secrets(suite.model_dump(mode="json")))
    if suite.mcp_servers or suite.user_mcp_servers:
        from evals_cli.mcp.hub import mcp_secrets

        found.update(mcp_secrets({**suite.mcp_servers, **suite.user_mcp_servers}))
    return sorted(s for s in found if s and s != NO_KEY)


def who_answers(agent: Endpoint | None, user: Endpoint | None, graders: Mapping[str, Any]) -> dict[str, str]:
    """Model and URL (credentials masked) of the agent, each grader's judges and the user simulator (`user`:
    given only when the run has simulated samples)."""
    def shown(endpoint: Endpoint) -> str:
        return f"{endpoint.model} at {mask_url(endpoint.base_url or DEFAULT_URL)}"

    found = {"agent": shown(agent)} if agent is not None else {}
    for name, grader in graders.items():
        judges = judges_of(grader)
        if judges:
            found[f"judge of {name}"] = ", ".join(shown(e) for e in judges)
    if user is not None:
        found["user simulator"] = shown(user)
    return found
