"""Where the user simulator lives, and the checks, before a run's first sample, that its endpoints were set and
something answers there.

An agent endpoint that was set is found out by its first call (a refused connection stops the run with one message,
exit 3); one that was set nowhere (`unconfigured`) is said before the first sample, exit 2. The simulator's first
call may come only after the agent has run a scripted opening on every sample in flight, so a run with simulated
samples opens one TCP connection to the simulator's server before it starts: nothing listening there stops the run
at once (exit 3), naming the endpoint and where it was set. Replays make no network call and skip both."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from evals_cli.endpoints.resolve import DEFAULT_URL, NO_KEY, Endpoint

CONNECT_TIMEOUT = 5.0


async def unreachable(endpoint: Endpoint) -> str | None:
    """Why nothing answers at the endpoint's host and port (None: a connection opened)."""
    try:
        parts = urlsplit(endpoint.base_url or DEFAULT_URL)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        return f"its base URL is not a URL ({exc})"
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                           timeout=min(CONNECT_TIMEOUT, endpoint.timeout))
    except (OSError, TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return None


def unreachable_message(endpoint: Endpoint, why: str, simulated: int | None) -> str:
    """The one message of a run stopped because its simulator cannot be reached."""
    from evals_cli.endpoints.secrets import Redactor

    rows = f"{simulated} simulated-user samples" if simulated else "the simulated-user samples"
    return Redactor(endpoint.secrets())(
        f"cannot reach the {endpoint.describe()} ({why}); {rows} need it. Set user_simulator.base_url in the "
        f"suite or EVAL_USER_BASE_URL (it is now from {endpoint.base_url_from}), and check the server is running; "
        "no sample was run")


async def unconfigured(agent: Endpoint, defaulted: str | None) -> str | None:
    """Why a live run's agent endpoint was configured nowhere (None: it was). `defaulted` is the variable whose
    `${VAR:-default}` default gave `target.base_url`: a suite's local default with nothing listening there means
    the user set no endpoint, which is said before any sample instead of as every sample's error."""
    if agent.base_url is None and agent.api_key == NO_KEY:
        return ("target: no agent endpoint is configured: set EVAL_AGENT_BASE_URL or pass --base-url (or write "
                "target.base_url in the suite; with OPENAI_API_KEY set, OpenAI's API is used); no sample was run")
    if defaulted is None or agent.base_url_from != "target.base_url" or not agent.is_local:
        return None
    why = await unreachable(agent)
    if why is None:
        return None
    from evals_cli.endpoints.secrets import Redactor

    return Redactor(agent.secrets())(
        f"target.base_url: no agent endpoint is configured: {defaulted} is not set, so the suite's default "
        f"{agent.base_url} is used, and nothing listens there ({why}); set {defaulted} or pass --base-url, or "
        "start the server there; no sample was run")
