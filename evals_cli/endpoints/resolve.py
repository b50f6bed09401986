"""Decide which URL, key and model a role (agent or judge) talks to, and remember where each came from."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evals_cli.errors import ConfigError

NO_KEY = "sk-no-key-set"  # local servers ignore the key; the SDK insists on one
DEFAULT_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "[::1]")


@dataclass(frozen=True)
class Endpoint:
    """A resolved endpoint. `api_key` is never printed: see `describe`. `base_url_from` says where the URL was
    set (`--base-url`, `target.base_url`, `EVAL_AGENT_BASE_URL`, ...), so an error can name what to change."""

    role: str
    base_url: str | None
    api_key: str
    model: str
    timeout: float = 120.0
    max_retries: int = 2
    base_url_from: str = ""

    def describe(self) -> str:
        """How messages name this endpoint: its URL with any credentials in it masked (messages reach CI logs)."""
        from evals_cli.endpoints.secrets import mask_url

        return f"{self.role} endpoint {mask_url(self.base_url or DEFAULT_URL)} (model {self.model})"

    def secrets(self) -> list[str]:
        """What must never be printed: the key (unless the placeholder) and any credential in the URL."""
        from evals_cli.endpoints.secrets import endpoint_secrets

        return endpoint_secrets(None if self.api_key == NO_KEY else self.api_key, self.base_url)

    @property
    def is_local(self) -> bool:
        """The server runs on this machine (a llama.cpp / Ollama / vLLM on localhost): requests queue there."""
        from urllib.parse import urlsplit

        try:
            host = urlsplit(self.base_url or DEFAULT_URL).hostname or ""
        except ValueError:
            return False
        return host in LOCAL_HOSTS or host.startswith("127.")


@dataclass(frozen=True)
class JudgeOverrides:
    """`--judge-model`, `--judge-base-url`, `--judge-api-key`: over a grader's own settings, the suite's judge
    block and EVAL_JUDGE_* (a suite written for a hosted judge can be pointed at a local one)."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None

    def __bool__(self) -> bool:
        return any(v not in (None, "") for v in (self.model, self.base_url, self.api_key))


def _pick(*values: Any) -> Any:
    for value in values:
        if value not in (None, ""):
            return value
    return None


def _pick_from(*pairs: tuple[Any, str]) -> tuple[Any, str]:
    """The first set value and the name of where it came from."""
    for value, where in pairs:
        if value not in (None, ""):
            return value, where
    return None, ""


def resolve_agent(spec: Any, overrides: dict[str, Any] | None = None) -> Endpoint:
    """CLI override, else the suite's target, else EVAL_AGENT_* (else OPENAI_API_KEY for the key). With
    `--base-url` and no model anywhere, the endpoint's own list (`GET /models`) decides when it holds one."""
    o = overrides or {}
    base_url, base_url_from = _pick_from((o.get("base_url"), "--base-url"), (spec.base_url, "target.base_url"),
                                         (os.environ.get("EVAL_AGENT_BASE_URL"), "EVAL_AGENT_BASE_URL"))
    api_key = _pick(o.get("api_key"), spec.api_key, os.environ.get("EVAL_AGENT_API_KEY"),
                    os.environ.get("OPENAI_API_KEY")) or NO_KEY
    model = _pick(o.get("model"), spec.model, os.environ.get("EVAL_AGENT_MODEL"))
    if model is None:
        if base_url is None or base_url_from != "--base-url":
            raise ConfigError("target: no model set; give target.model in the suite, --model, or EVAL_AGENT_MODEL")
        model = only_model(base_url, api_key, base_url_from)  # `--base-url URL` alone: the server's only model
    return Endpoint(role="agent", base_url=base_url, api_key=api_key, model=model, timeout=spec.timeout,
                    max_retries=spec.max_retries, base_url_from=base_url_from)


def only_model(base_url: str, api_key: str, where: str) -> str:
    """The model an endpoint serves, when it lists exactly one (`GET {base_url}/models`): what a local server
    started with one model answers. ConfigError naming the models (or the failure) otherwise. Standard library
    only: `evals validate` must not import the HTTP stack."""
    import json
    import urllib.error
    import urllib.request

    from evals_cli.endpoints.secrets import Redactor, endpoint_secrets, mask_url

    url = base_url.rstrip("/") + "/models"
    shown = mask_url(url)
    redact = Redactor(endpoint_secrets(None if api_key == NO_KEY else api_key, base_url))
    ask = f"no model set and {shown} ({where})"
    headers = {"Accept": "application/json"} | ({} if api_key == NO_KEY else {"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as reply:  # noqa: S310
            data = json.loads(reply.read(1_000_000))
        ids = [str(m["id"]) for m in data.get("data", []) if isinstance(m, dict) and m.get("id")]
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        raise ConfigError(redact(f"target: {ask} did not list its models ({type(exc).__name__}: {exc}); "
                                 "give --model NAME (or target.model, EVAL_AGENT_MODEL)")) from None
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise ConfigError(f"target: {ask} lists no model; give --model NAME (or target.model, EVAL_AGENT_MODEL)")
    listed = ", ".join(ids[:20]) + (f" (+{len(ids) - 20} more)" if len(ids) > 20 else "")
    raise ConfigError(f"target: {ask} serves {len(ids)} models ({listed}); choose one with --model NAME (or "
                      "target.model, EVAL_AGENT_MODEL)")


def resolve_judge(grader_spec: Any, judge_spec: Any, agent: Endpoint | None,
                  overrides: JudgeOverrides | None = None) -> Endpoint:
    """--judge-* (`overrides`), else the grader spec, else the suite's judge block, else EVAL_JUDGE_*, else the
    agent's endpoint."""
    j = judge_spec
    o = overrides or JudgeOverrides()
    model = _pick(o.model, grader_spec.model, j and j.model, os.environ.get("EVAL_JUDGE_MODEL"),
                  agent and agent.model)
    if model is None:
        raise ConfigError("judge: no model set; give judge.model in the suite, --judge-model or EVAL_JUDGE_MODEL")
    base_url, base_url_from = _pick_from(
        (o.base_url, "--judge-base-url"), (grader_spec.base_url, "the grader's base_url"),
        (j and j.base_url, "judge.base_url"), (os.environ.get("EVAL_JUDGE_BASE_URL"), "EVAL_JUDGE_BASE_URL"),
        (agent and agent.base_url, agent.base_url_from if agent else ""))
    return Endpoint(
        role="judge",
        base_url=base_url,
        api_key=_pick(o.api_key, grader_spec.api_key, j and j.api_key, os.environ.get("EVAL_JUDGE_API_KEY"),
                      agent and agent.api_key) or NO_KEY,
        model=model,
        timeout=j.timeout if j else (agent.timeout if agent else 120.0),
        max_retries=j.max_retries if j else (agent.max_retries if agent else 2),
        base_url_from=base_url_from,
    )
