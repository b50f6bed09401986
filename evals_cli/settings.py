"""Every environment variable evals-cli reads, in one validated model (pydantic-settings).

A knob used to be read where it was used, each with its own silent fallback: `EVALS_REGEX_TIMEOUT=abc`
quietly became the default, and a run went on with a bound its user had not chosen. Here each variable has
one declaration (its name, type, default and description), a bad value is a ConfigError (exit 2) naming the
variable and what it expects, and `evals list settings` lists them all.

An empty value is an unset one (`EVALS_DEBUG=` is off, `EVAL_AGENT_MODEL=` falls through to the next place a
model is named). Values are read when they are asked for, so a variable changed while a program runs (a test,
a library user) takes effect; each read of one knob costs one environment look-up, the model being built again
only when that variable's text changed. The module imports pydantic-settings: import it where a knob is read,
not at the top of modules that `evals --help` loads.

Two variables of the display are not here yet (`NO_COLOR`, `COLUMNS`, read by evals_cli/display/console.py).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from evals_cli.errors import ConfigError

DEFAULT_MAX_FIELD_CHARS = 256 * 1024
DEFAULT_REGEX_TIMEOUT_S = 1.0
DEFAULT_RUBRIC_TIMEOUT_S = 2.0
DEFAULT_RUBRIC_MAX_CHARS = 2_000_000
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024

POSITIVE_INT = "a whole number greater than 0"
POSITIVE_SECONDS = "a number of seconds greater than 0"
SWITCH = "a switch: 1, true, yes or on; 0, false, no or off"


def _knob(env: str, default: Any, description: str, expects: str = "any text", *, secret: bool = False,
          gt: float | None = None) -> Any:
    """A field read from the variable `env`; `expects` says, in an error, what a good value looks like."""
    return Field(default=default, validation_alias=env, description=description, gt=gt,
                 json_schema_extra={"env": env, "expects": expects, "secret": secret})


class Settings(BaseSettings):
    """The environment's knobs. Field order is the order `evals list settings` shows them in."""

    model_config = SettingsConfigDict(case_sensitive=True, env_ignore_empty=True, extra="ignore", frozen=True)

    debug: bool = _knob("EVALS_DEBUG", False, "Show the traceback of an internal error instead of one line.",
                        SWITCH)
    max_field_chars: int = _knob(
        "EVALS_MAX_FIELD_CHARS", DEFAULT_MAX_FIELD_CHARS, "Characters kept per stored text field (replies, tool "
        "arguments and results, rationales); a longer one is cut and marked.", POSITIVE_INT, gt=0)
    regex_timeout: float = _knob(
        "EVALS_REGEX_TIMEOUT", DEFAULT_REGEX_TIMEOUT_S, "Seconds one match of a user's regex may take (ground "
        "truth, extractors, tool_args, tool schema patterns) before it is a grade error.", POSITIVE_SECONDS, gt=0)
    rubric_timeout: float = _knob(
        "EVALS_RUBRIC_TIMEOUT", DEFAULT_RUBRIC_TIMEOUT_S, "Seconds one rubric may take to compile and render.",
        POSITIVE_SECONDS, gt=0)
    rubric_max_chars: int = _knob(
        "EVALS_RUBRIC_MAX_CHARS", DEFAULT_RUBRIC_MAX_CHARS, "Characters a rendered rubric (or any text built "
        "while rendering it) may reach.", POSITIVE_INT, gt=0)
    max_response_bytes: int = _knob(
        "EVALS_MAX_RESPONSE_BYTES", DEFAULT_MAX_RESPONSE_BYTES, "Bytes of one response body from a model "
        "endpoint; a larger one fails that call.", POSITIVE_INT, gt=0)
    agent_model: str | None = _knob("EVAL_AGENT_MODEL", None, "The agent's model, when neither --model nor the "
                                    "suite's target names one.")
    agent_base_url: str | None = _knob("EVAL_AGENT_BASE_URL", None, "The agent's endpoint, when neither "
                                       "--base-url nor the suite's target names one.")
    agent_api_key: str | None = _knob("EVAL_AGENT_API_KEY", None, "The agent's API key, when the suite gives "
                                      "none (else OPENAI_API_KEY).", secret=True)
    judge_model: str | None = _knob("EVAL_JUDGE_MODEL", None, "The judge's model, after --judge-model, the "
                                    "grader's own and the suite's judge block.")
    judge_base_url: str | None = _knob("EVAL_JUDGE_BASE_URL", None, "The judge's endpoint, after "
                                       "--judge-base-url, the grader's own and the suite's judge block.")
    judge_api_key: str | None = _knob("EVAL_JUDGE_API_KEY", None, "The judge's API key, after --judge-api-key, "
                                      "the grader's own and the suite's judge block.", secret=True)
    user_model: str | None = _knob("EVAL_USER_MODEL", None, "The simulated users' model, after the suite's "
                                   "user_simulator block (else the judge's, then the agent's).")
    user_base_url: str | None = _knob("EVAL_USER_BASE_URL", None, "The simulated users' endpoint, after the "
                                      "suite's user_simulator block (else the judge's, then the agent's).")
    user_api_key: str | None = _knob("EVAL_USER_API_KEY", None, "The simulated users' API key, after the "
                                     "suite's user_simulator block (else the judge's, then the agent's).", secret=True)
    openai_api_key: str | None = _knob("OPENAI_API_KEY", None, "The agent's API key when nothing else gives one; "
                                       "the key of a judge with provider: openai.", secret=True)
    openai_base_url: str | None = _knob("OPENAI_BASE_URL", None, "The endpoint of a judge with provider: openai "
                                        "(letta-evals suites).")
    anthropic_api_key: str | None = _knob("ANTHROPIC_API_KEY", None, "The key of a judge with provider: "
                                          "anthropic (letta-evals suites).", secret=True)
    gemini_api_key: str | None = _knob("GEMINI_API_KEY", None, "The key of a judge with provider: google "
                                       "(letta-evals suites).", secret=True)
    google_api_key: str | None = _knob("GOOGLE_API_KEY", None, "The key of a judge with provider: google, when "
                                       "GEMINI_API_KEY is not set.", secret=True)
    otel_endpoint: str | None = _knob("OTEL_EXPORTER_OTLP_ENDPOINT", None, "Send OpenTelemetry traces there "
                                      "(as --otel does; needs the otel extra).")


def env_name(field: str) -> str:
    """The variable a field is read from."""
    return str(Settings.model_fields[field].validation_alias)


def _expects(field: str) -> str:
    extra = Settings.model_fields[field].json_schema_extra
    return str(extra.get("expects", "")) if isinstance(extra, dict) else ""


_ENV = {name: env_name(name) for name in Settings.model_fields}
_FIELD_OF = {env: name for name, env in _ENV.items()}


def default_text(value: Any) -> str:
    """A default as a person reads it: a switch is on or off (1.0 is no switch, though 1.0 == True)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return "not set" if value is None else str(value)


def load() -> Settings:
    """The settings as the environment has them now; ConfigError naming every variable with a bad value."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            env = str(error["loc"][0]) if error["loc"] else "?"
            field = _FIELD_OF.get(env, env)
            shown = os.environ.get(env, "")
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            default = Settings.model_fields[field].default if field in Settings.model_fields else None
            problems.append(f"environment variable {env}={shown!r}: expected {_expects(field) or 'a valid value'}; "
                            f"fix it, or unset it for the default ({default_text(default)})")
        raise ConfigError(problems) from None


_cache: dict[str, tuple[str | None, Any]] = {}


def knob(field: str) -> Any:
    """One setting, read now: the environment looked up once, the model built again only when that variable's
    text changed since the last read (every stored field asks for its cap: this must be cheap)."""
    raw = os.environ.get(_ENV[field])
    found = _cache.get(field)
    if found is not None and found[0] == raw:
        return found[1]
    value = getattr(load(), field)
    _cache[field] = (raw, value)
    return value


def knob_of(env: str) -> Any:
    """The setting read from the variable `env` (KeyError for a variable the model does not declare)."""
    return knob(_FIELD_OF[env])


def check() -> None:
    """Raise ConfigError when any variable has a bad value: before a command or a run does anything."""
    load()


class Knob(NamedTuple):
    """One row of `evals list settings`."""

    env: str
    kind: str  # switch, integer, number or text
    default: Any
    current: str | None  # the variable's text, None when unset (or empty)
    secret: bool  # a key: shown masked
    description: str


def listing() -> list[Knob]:
    """Every knob as the environment has it now, in model order (raw text: a bad value is shown, not refused)."""
    rows = []
    for name, info in Settings.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        kind = {"bool": "switch", "int": "integer", "float": "number"}.get(getattr(info.annotation, "__name__", ""),
                                                                         "text")
        rows.append(Knob(_ENV[name], kind, info.default, os.environ.get(_ENV[name]) or None,
                         bool(extra.get("secret")), info.description or ""))
    return rows
