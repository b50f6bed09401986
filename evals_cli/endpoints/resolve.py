"""Decide which URL, key and model a role (agent, judge or user simulator) talks to, and remember where each came from."""

from __future__ import annotations

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

        label = "user simulator" if self.role == "user" else self.role
        return f"{label} endpoint {mask_url(self.base_url or DEFAULT_URL)} (model {self.model})"

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


def knob(field: str) -> str | None:
    """An endpoint variable, read through the settings model (evals_cli/settings.py)."""
    from evals_cli.settings import knob as read

    value: str | None = read(field)
    return value


def env(variable: str) -> str | None:
    """A provider's variable (OPENAI_API_KEY, OPENAI_BASE_URL, ...), by its name, through the settings model."""
    from evals_cli.settings import knob_of

    return knob_of(variable)


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
    """CLI override, else the suite's target, else EVAL_AGENT_* (else OPENAI_API_KEY for the key). The base URL:
    `--model NAME@URL`, `--base-url`, the model's own `target.models` entry, `target.base_url`, the environment;
    the key: the model's own entry, then the target's. With `--base-url` and no model anywhere, the endpoint's own
    list (`GET /models`) decides when it holds one."""
    o = overrides or {}
    names = spec.model_names() if hasattr(spec, "model_names") else None
    # several models: validate checks the first; each run passes its own
    model = _pick(o.get("model"), spec.model, names[0] if names else None, knob("agent_model"))
    own = spec.model_endpoint(model) if model is not None and hasattr(spec, "model_endpoint") else None
    base_url, base_url_from = _pick_from((o.get("model_base_url"), f"--model {model}@URL"),
                                         (o.get("base_url"), "--base-url"),
                                         (own and own.base_url, f"target.models ({model})"),
                                         (spec.base_url, "target.base_url"),
                                         (knob("agent_base_url"), "EVAL_AGENT_BASE_URL"))
    # a model's own key goes only where that model's entry sends it (a --base-url over it gets the target's)
    own_key = own.api_key if own is not None and (own.base_url is None or base_url == own.base_url) else None
    api_key = _pick(o.get("api_key"), own_key, spec.api_key, knob("agent_api_key"),
                    knob("openai_api_key")) or NO_KEY
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


PROVIDERS: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "openai": (DEFAULT_URL, ("OPENAI_API_KEY",), "OPENAI_BASE_URL"),
    "anthropic": ("https://api.anthropic.com/v1", ("ANTHROPIC_API_KEY",), None),
    "google": ("https://generativelanguage.googleapis.com/v1beta/openai", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), None),
}
"""letta-evals' judge `provider`s: each one's OpenAI-compatible endpoint, the variables its key is read from (as
letta-evals reads them), and the variable that moves its URL (letta-evals honours OPENAI_BASE_URL)."""


def resolve_judge(grader_spec: Any, judge_spec: Any, agent: Endpoint | None,
                  overrides: JudgeOverrides | None = None) -> Endpoint:
    """Each of model, base URL and key from the first place that sets it:

    1. --judge-model / --judge-base-url / --judge-api-key (`overrides`);
    2. a --target file's judge block (the loader writes it over every judge grader's own settings, so it reaches
       here as the grader's: evals_cli/suite/loader.py `_redirect_judges`);
    3. the grader's own model / base_url / api_key;
    4. the suite's judge block;
    5. EVAL_JUDGE_MODEL / EVAL_JUDGE_BASE_URL / EVAL_JUDGE_API_KEY;
    6. the grader's `provider` (letta-evals): that provider's endpoint and key variable, for the base URL and key
       only, and only while the model is the grader's own (a model named anywhere above belongs to the endpoint
       named with it, never to the provider's);
    7. the agent's endpoint.

    A value is taken whole from its level: a --judge-model with no --judge-base-url still goes to the base URL the
    lower levels give."""
    j = judge_spec
    o = overrides or JudgeOverrides()
    model, model_from = _pick_from((o.model, "--judge-model"), (grader_spec.model, "grader"),
                                   (j and j.model, "judge.model"),
                                   (knob("judge_model"), "EVAL_JUDGE_MODEL"),
                                   (agent and agent.model, "agent"))
    if model is None:
        raise ConfigError("judge: no model set; give judge.model in the suite, --judge-model or EVAL_JUDGE_MODEL")
    base_url, base_url_from = _pick_from(
        (o.base_url, "--judge-base-url"), (grader_spec.base_url, "the grader's base_url"),
        (j and j.base_url, "judge.base_url"), (knob("judge_base_url"), "EVAL_JUDGE_BASE_URL"))
    api_key = _pick(o.api_key, grader_spec.api_key, j and j.api_key, knob("judge_api_key"))
    provider = getattr(grader_spec, "provider", None)
    if base_url is None and provider in PROVIDERS and model_from == "grader":
        url, key_variables, url_variable = PROVIDERS[provider]
        base_url, base_url_from = _pick_from((url_variable and env(url_variable), str(url_variable)),
                                             (url, f"the grader's provider ({provider})"))
        api_key = api_key or _pick(*(env(v) for v in key_variables))  # never the agent's key
    elif base_url is None and agent is not None:
        base_url, base_url_from = agent.base_url, agent.base_url_from
        api_key = api_key or agent.api_key
    elif agent is not None:
        api_key = api_key or agent.api_key
    return Endpoint(
        role="judge",
        base_url=base_url,
        api_key=api_key or NO_KEY,
        model=model,
        timeout=j.timeout if j else (agent.timeout if agent else 120.0),
        max_retries=j.max_retries if j else (agent.max_retries if agent else 2),
        base_url_from=base_url_from,
    )


def provider_note(provider: str | None) -> str | None:
    """What `evals validate` says about a grader's letta-evals `provider`: where its judge goes when nothing
    else names a judge endpoint (never a silent change of endpoint)."""
    if provider not in PROVIDERS:
        return None
    url, key_variables, url_variable = PROVIDERS[provider]
    where = f"{url_variable} or {url}" if url_variable else url
    return (f"provider {provider}: with no judge base URL set (--judge-base-url, a --target file's judge block, the "
            f"grader's base_url, the suite's judge block, EVAL_JUDGE_BASE_URL), the grader's model is asked at "
            f"{where} (the provider's OpenAI-compatible endpoint) with the key in {' or '.join(key_variables)}; "
            "a judge model named anywhere else is asked where it is named")


def resolve_user(simulator_spec: Any, judge_spec: Any, agent: Endpoint | None,
                 overrides: JudgeOverrides | None = None) -> Endpoint:
    """The user simulator's endpoint. Each of model, base URL and key from the first place that sets it:

    1. the suite's `user_simulator:` block;
    2. EVAL_USER_MODEL / EVAL_USER_BASE_URL / EVAL_USER_API_KEY;
    3. the judge's endpoint: --judge-model / --judge-base-url / --judge-api-key, the suite's `judge:` block,
       EVAL_JUDGE_*;
    4. the agent's endpoint (when the agent is a model: `agent` is None otherwise).

    ConfigError when no model is set anywhere (a python agent with no judge or simulator configured)."""
    s, j = simulator_spec, judge_spec
    o = overrides or JudgeOverrides()
    model = _pick(s and s.model, knob("user_model"), o.model, j and j.model,
                  knob("judge_model"), agent and agent.model)
    if model is None:
        raise ConfigError("user_simulator: no model set for the simulated users; give user_simulator.model in the "
                          "suite, or EVAL_USER_MODEL (the judge's and then the agent's model are used when set)")
    base_url, base_url_from = _pick_from(
        (s and s.base_url, "user_simulator.base_url"), (knob("user_base_url"), "EVAL_USER_BASE_URL"),
        (o.base_url, "--judge-base-url"), (j and j.base_url, "judge.base_url"),
        (knob("judge_base_url"), "EVAL_JUDGE_BASE_URL"),
        (agent and agent.base_url, agent.base_url_from if agent else ""))
    api_key = _pick(s and s.api_key, knob("user_api_key"), o.api_key, j and j.api_key,
                    knob("judge_api_key"), agent and agent.api_key)
    source = s or j
    return Endpoint(role="user", base_url=base_url, api_key=api_key or NO_KEY, model=model,
                    timeout=source.timeout if source else (agent.timeout if agent else 120.0),
                    max_retries=source.max_retries if source else (agent.max_retries if agent else 2),
                    base_url_from=base_url_from or "user_simulator.base_url")
