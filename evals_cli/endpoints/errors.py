"""Map SDK exceptions to an error category, a message naming what to fix, and whether the run can go on."""

from __future__ import annotations

from dataclasses import dataclass

from evals_cli.endpoints.context import ReplayMiss
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.errors import SandboxUnavailable, SetupFailed, ToolServerFailed, WorkspaceTooLarge


@dataclass(frozen=True)
class Classified:
    category: str
    message: str
    fatal: bool  # no later sample can succeed either: stop the run with one message
    fatal_after_success: bool = True  # False: only fatal until the endpoint has answered once


class InvalidResponse(Exception):
    """The endpoint answered, but not with something usable (no choices, no message)."""


class AgentFailed(InvalidResponse):
    """An agent program evals-cli runs (`kind: command`) failed its protocol: exited, replied without text, hung at
    its end. Its own category (`agent`): the program is what to fix, not an endpoint."""


def _cause(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, kind):
            return exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return None


def classify(exc: BaseException, endpoint: Endpoint) -> Classified:
    """The category and message of a failed call; the message never carries the endpoint's credentials (the
    exception text may quote the URL or an echoed key), whoever prints it."""
    from dataclasses import replace

    from evals_cli.endpoints.secrets import Redactor

    found = _classify(exc, endpoint)
    return replace(found, message=Redactor(endpoint.secrets())(found.message))


def _classify(exc: BaseException, endpoint: Endpoint) -> Classified:
    import openai

    from evals_cli.custom_code import CustomCodeError

    server = _cause(exc, ToolServerFailed)
    if server is not None:  # an MCP server crashed, hung or broke the protocol: no later sample can trust it
        return Classified("tool_server", str(server), True)
    if isinstance(exc, WorkspaceTooLarge):  # this episode's folder only: the next one starts from its own
        return Classified("tool_server", str(exc), False)
    if isinstance(exc, CustomCodeError):  # the suite's own code exited, was interrupted or ran out of time
        return Classified("custom_code", str(exc), False)
    unavailable = _cause(exc, SandboxUnavailable)
    if unavailable is not None:  # the episode's machine could not be made or used: not the agent's, never a zero
        return Classified("sandbox", str(unavailable), False)
    if isinstance(exc, SetupFailed):  # the sample's environment.setup failed: the agent never started
        return Classified("setup", str(exc), False)
    where = endpoint.describe()
    role = endpoint.role.upper()
    miss = _cause(exc, ReplayMiss)
    if miss is not None:
        return Classified("replay", f"replay miss: {miss}", False)
    if isinstance(exc, AgentFailed):
        return Classified("agent", str(exc), False)
    if isinstance(exc, InvalidResponse):
        return Classified("invalid_response", f"{where}: {exc}", False)
    if isinstance(exc, openai.APITimeoutError):
        if endpoint.is_local:  # one local server answers one request at a time: the rest wait in its queue
            return Classified("timeout", f"{where}: request timed out after {endpoint.timeout:g}s; with a local "
                                         "server that time includes waiting in the server's queue behind the other "
                                         "requests in flight: run one at a time (-c 1), lower max_tokens, or raise "
                                         "timeout (--timeout)", False)
        return Classified("timeout", f"{where}: request timed out after {endpoint.timeout:g}s "
                                     f"(raise timeout in the suite, or --timeout, for slow models)", False)
    if isinstance(exc, openai.APIConnectionError):
        from evals_cli.endpoints.httpx_compat import httpx

        if _cause(exc, httpx.ConnectError) is not None:  # refused / no route: nothing will get through
            return Classified("endpoint", f"cannot reach {where}: {exc.__cause__ or exc}; check "
                                          f"{_url_source(endpoint)} and that the server is running", True, False)
        return Classified("endpoint", f"{where}: connection lost ({exc.__cause__ or exc}) after "
                                      f"{endpoint.max_retries} retries", False)
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        flag = "--judge-api-key or " if role == "JUDGE" else ""
        return Classified("auth", f"{where} refused the API key (HTTP {exc.status_code}); set "
                                  f"{flag}EVAL_{role}_API_KEY", True)
    if isinstance(exc, openai.NotFoundError):
        if _request_path(exc).endswith("/responses") and not _mentions_model(exc, endpoint):
            return Classified("endpoint", f"{where}: not found (HTTP 404) at /responses: this endpoint has no "
                                          "Responses API (most local servers serve only /chat/completions); use "
                                          "target kind: openai_chat, or check the base URL "
                                          f"({_url_source(endpoint)})", True)
        return Classified("endpoint", f"{where}: not found (HTTP 404): the model name or base URL is wrong; "
                                      f"check the model setting or EVAL_{role}_MODEL, and {_url_source(endpoint)}",
                          True)
    if isinstance(exc, openai.RateLimitError):
        return Classified("rate_limit", f"{where}: rate limited (HTTP 429) after {endpoint.max_retries} "
                                        f"retries; lower concurrency or raise max_retries", False)
    if isinstance(exc, openai.BadRequestError):
        return Classified("endpoint", f"{where} rejected the request (HTTP 400: {str(exc.message)[:200]}); check "
                                      "the target's model, temperature, max_tokens, tool_choice and extra_body", True, False)
    if isinstance(exc, openai.APIStatusError):
        body = str(exc.message)[:300]
        return Classified("endpoint", f"{where}: HTTP {exc.status_code}: {body}", False)
    if isinstance(exc, openai.APIResponseValidationError | ValueError):
        return Classified("invalid_response", f"{where}: unusable response: {exc}", False)
    return Classified("internal", f"{type(exc).__name__}: {exc}", False)


def _url_source(endpoint: Endpoint) -> str:
    """Where to change the endpoint's URL: where it was set, or where it can be set when it was not."""
    where = endpoint.base_url_from
    if where == "target.base_url":
        return "target.base_url in the suite (or EVAL_AGENT_BASE_URL, --base-url)"
    if where == "judge.base_url":
        return "judge.base_url in the suite (or EVAL_JUDGE_BASE_URL, --judge-base-url)"
    if where == "the grader's base_url":
        return "the judge's base_url (the grader's own in the suite, or --judge-base-url / EVAL_JUDGE_BASE_URL)"
    if where:  # the command line or the environment: exactly what the user set
        return where
    if endpoint.role == "agent":
        return "target.base_url (or --base-url, EVAL_AGENT_BASE_URL)"
    return f"judge.base_url (or --judge-base-url, EVAL_{endpoint.role.upper()}_BASE_URL)"


def _request_path(exc: BaseException) -> str:
    """The path the failed request went to ('' when the exception does not say)."""
    try:
        return str(exc.request.url.path).rstrip("/")  # type: ignore[attr-defined]
    except AttributeError:
        return ""


def _mentions_model(exc: BaseException, endpoint: Endpoint) -> bool:
    """The 404 names the model (`model 'x' not found`): the route exists, the model does not."""
    text = str(getattr(exc, "message", "") or exc).lower()
    return "model" in text and endpoint.model.lower() in text
