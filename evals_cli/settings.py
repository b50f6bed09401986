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

The knobs are declared as plain data (`KNOBS`) and the model is built from them on first need: only the
`EVALS_*` knobs have a type that can be wrong (the others are text, where an empty value is unset), so while
none of them is set a knob is its default (or its variable's text) and the check has nothing to refuse, without
importing pydantic-settings (some 25 ms of every start). One set, every read goes through the model.

Two variables of the display are not here yet (`NO_COLOR`, `COLUMNS`, read by evals_cli/display/console.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, NamedTuple

from evals_cli.errors import ConfigError

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

DEFAULT_MAX_FIELD_CHARS = 256 * 1024
DEFAULT_REGEX_TIMEOUT_S = 1.0
DEFAULT_RUBRIC_TIMEOUT_S = 2.0
DEFAULT_RUBRIC_MAX_CHARS = 2_000_000
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
DEFAULT_PLUGIN_IMPORT_TIMEOUT_S = 60.0  # read by evals_cli/registry.py, which stays below this module
DEFAULT_MAX_MCP_MESSAGE_BYTES = 4 * 1024 * 1024  # 16 times the stored field cap: a tool result is cut to that

POSITIVE_INT = "a whole number greater than 0"
POSITIVE_SECONDS = "a number of seconds greater than 0"
SWITCH = "a switch: 1, true, yes or on; 0, false, no or off"


class KnobSpec(NamedTuple):
    """One field of the model: read from the variable `env`; `expects` says, in an error, what a good value is."""

    env: str
    kind: type  # bool, int, float or str (text: optional, None when unset)
    default: Any
    description: str
    expects: str = "any text"
    secret: bool = False
    gt: float | None = None
    empty_is_set: bool = False  # read where it is used: set but empty means something (EVALS_PLUGINS: none)


KNOBS: dict[str, KnobSpec] = {  # field order is the order `evals list settings` shows them in
    "debug": KnobSpec("EVALS_DEBUG", bool, False, "Show the traceback of an internal error instead of one line.",
                      SWITCH),
    "max_field_chars": KnobSpec(
        "EVALS_MAX_FIELD_CHARS", int, DEFAULT_MAX_FIELD_CHARS, "Characters kept per stored text field (replies, "
        "tool arguments and results, rationales); a longer one is cut and marked.", POSITIVE_INT, gt=0),
    "regex_timeout": KnobSpec(
        "EVALS_REGEX_TIMEOUT", float, DEFAULT_REGEX_TIMEOUT_S, "Seconds one match of a user's regex may take "
        "(ground truth, extractors, tool_args, tool schema patterns) before it is a grade error.", POSITIVE_SECONDS,
        gt=0),
    "rubric_timeout": KnobSpec(
        "EVALS_RUBRIC_TIMEOUT", float, DEFAULT_RUBRIC_TIMEOUT_S, "Seconds one rubric may take to compile and "
        "render.", POSITIVE_SECONDS, gt=0),
    "rubric_max_chars": KnobSpec(
        "EVALS_RUBRIC_MAX_CHARS", int, DEFAULT_RUBRIC_MAX_CHARS, "Characters a rendered rubric (or any text built "
        "while rendering it) may reach.", POSITIVE_INT, gt=0),
    "max_response_bytes": KnobSpec(
        "EVALS_MAX_RESPONSE_BYTES", int, DEFAULT_MAX_RESPONSE_BYTES, "Bytes of one response body from a model "
        "endpoint; a larger one fails that call.", POSITIVE_INT, gt=0),
    "plugins": KnobSpec(
        "EVALS_PLUGINS", str, None, "Which installed plug-ins (entry points of the group evals_cli) load: unset, "
        "every one; empty, none; else the entry point or package names, comma-separated (a name no installed "
        "plug-in answers to stops every command with exit 2).", "entry point or package names, comma-separated",
        empty_is_set=True),
    "plugin_import_timeout": KnobSpec(
        "EVALS_PLUGIN_IMPORT_TIMEOUT", float, DEFAULT_PLUGIN_IMPORT_TIMEOUT_S, "Seconds a plug-in's import may "
        "take before every command stops with exit 2 naming it (an import that hangs would hang every command).",
        POSITIVE_SECONDS, gt=0),
    "max_mcp_message_bytes": KnobSpec(
        "EVALS_MAX_MCP_MESSAGE_BYTES", int, DEFAULT_MAX_MCP_MESSAGE_BYTES, "Bytes of one message from an MCP "
        "server (a stdio line, an HTTP body or event), refused before it is parsed; a larger one is a "
        "tool_server error of that sample.", POSITIVE_INT, gt=0),
    "agent_model": KnobSpec("EVAL_AGENT_MODEL", str, None, "The agent's model, when neither --model nor the "
                            "suite's target names one."),
    "agent_base_url": KnobSpec("EVAL_AGENT_BASE_URL", str, None, "The agent's endpoint, when neither --base-url "
                               "nor the suite's target names one."),
    "agent_api_key": KnobSpec("EVAL_AGENT_API_KEY", str, None, "The agent's API key, when the suite gives none "
                              "(else OPENAI_API_KEY).", secret=True),
    "judge_model": KnobSpec("EVAL_JUDGE_MODEL", str, None, "The judge's model, after --judge-model, the grader's "
                            "own and the suite's judge block."),
    "judge_base_url": KnobSpec("EVAL_JUDGE_BASE_URL", str, None, "The judge's endpoint, after --judge-base-url, "
                               "the grader's own and the suite's judge block."),
    "judge_api_key": KnobSpec("EVAL_JUDGE_API_KEY", str, None, "The judge's API key, after --judge-api-key, the "
                              "grader's own and the suite's judge block.", secret=True),
    "user_model": KnobSpec("EVAL_USER_MODEL", str, None, "The simulated users' model, after the suite's "
                           "user_simulator block (else the judge's, then the agent's)."),
    "user_base_url": KnobSpec("EVAL_USER_BASE_URL", str, None, "The simulated users' endpoint, after the suite's "
                              "user_simulator block (else the judge's, then the agent's)."),
    "user_api_key": KnobSpec("EVAL_USER_API_KEY", str, None, "The simulated users' API key, after the suite's "
                             "user_simulator block (else the judge's, then the agent's).", secret=True),
    "openai_api_key": KnobSpec("OPENAI_API_KEY", str, None, "The agent's API key when nothing else gives one; the "
                               "key of a judge with provider: openai.", secret=True),
    "openai_base_url": KnobSpec("OPENAI_BASE_URL", str, None, "The endpoint of a judge with provider: openai "
                                "(letta-evals suites)."),
    "anthropic_api_key": KnobSpec("ANTHROPIC_API_KEY", str, None, "The key of a judge with provider: anthropic "
                                  "(letta-evals suites).", secret=True),
    "gemini_api_key": KnobSpec("GEMINI_API_KEY", str, None, "The key of a judge with provider: google "
                               "(letta-evals suites).", secret=True),
    "google_api_key": KnobSpec("GOOGLE_API_KEY", str, None, "The key of a judge with provider: google, when "
                               "GEMINI_API_KEY is not set.", secret=True),
    "otel_endpoint": KnobSpec("OTEL_EXPORTER_OTLP_ENDPOINT", str, None, "Send OpenTelemetry traces there (as "
                              "--otel does; needs the otel extra)."),
}

_TYPED = tuple(k.env for k in KNOBS.values() if k.kind is not str)  # the variables a value of can be wrong
_model: type[BaseSettings] | None = None


def settings_model() -> type[BaseSettings]:
    """The pydantic-settings model of `KNOBS` (one field each, in order), built and imported on first use."""
    global _model
    if _model is None:
        from pydantic import Field, create_model
        from pydantic_settings import BaseSettings, SettingsConfigDict

        class Base(BaseSettings):
            model_config = SettingsConfigDict(case_sensitive=True, env_ignore_empty=True, extra="ignore",
                                              frozen=True)

        fields: dict[str, Any] = {
            name: (k.kind if k.kind is not str else str | None,
                   Field(default=k.default, validation_alias=k.env, description=k.description, gt=k.gt,
                         json_schema_extra={"env": k.env, "expects": k.expects, "secret": k.secret}))
            for name, k in KNOBS.items()}
        _model = create_model("Settings", __base__=Base, __doc__="The environment's knobs.", **fields)
    return _model


def __getattr__(name: str) -> Any:
    """`Settings`, the model, built on first use (importing this module costs no pydantic-settings)."""
    if name == "Settings":
        return settings_model()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def env_name(field: str) -> str:
    """The variable a field is read from."""
    return KNOBS[field].env


_ENV = {name: k.env for name, k in KNOBS.items()}
_FIELD_OF = {env: name for name, env in _ENV.items()}


def default_text(value: Any) -> str:
    """A default as a person reads it: a switch is on or off (1.0 is no switch, though 1.0 == True)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return "not set" if value is None else str(value)


def load() -> Any:
    """The settings (a `Settings`) as the environment has them now; ConfigError naming every variable with a
    bad value."""
    from pydantic import ValidationError

    try:
        return settings_model()()
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            env = str(error["loc"][0]) if error["loc"] else "?"
            field = _FIELD_OF.get(env, env)
            shown = os.environ.get(env, "")
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            spec = KNOBS.get(field)
            default = spec.default if spec is not None else None
            expects = spec.expects if spec is not None else "a valid value"
            problems.append(f"environment variable {env}={shown!r}: expected {expects}; "
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
    spec = KNOBS[field]
    if spec.kind is str or not raw:  # text is taken as it is (empty: unset); unset, a typed knob is its default
        value = raw or None if spec.kind is str else spec.default
    else:
        value = getattr(load(), field)
    _cache[field] = (raw, value)
    return value


def knob_of(env: str) -> Any:
    """The setting read from the variable `env` (KeyError for a variable the model does not declare)."""
    return knob(_FIELD_OF[env])


def check() -> None:
    """Raise ConfigError when any variable has a bad value: before a command or a run does anything. Only a
    typed (EVALS_*) knob can hold one: with none set there is nothing to check, and no model is built."""
    if any(os.environ.get(env) for env in _TYPED):
        load()


class Knob(NamedTuple):
    """One row of `evals list settings`."""

    env: str
    kind: str  # switch, integer, number or text
    default: Any
    current: str | None  # the variable's text, None when unset (or empty, unless empty means something)
    secret: bool  # a key: shown masked
    description: str


def listing() -> list[Knob]:
    """Every knob as the environment has it now, in model order (raw text: a bad value is shown, not refused)."""
    kinds = {bool: "switch", int: "integer", float: "number"}
    return [Knob(k.env, kinds.get(k.kind, "text"), k.default,
                 os.environ.get(k.env) if k.empty_is_set else os.environ.get(k.env) or None, k.secret, k.description)
            for k in KNOBS.values()]


def child_environment() -> dict[str, str]:
    """The environment an agent program evals-cli starts inherits (a `command` target): evals-cli's own, as a shell
    would pass it, so the program finds its model's key and PATH as when run by hand. Read here, where every other
    environment read is, so that which modules look at the environment stays one list (tests/test_settings.py)."""
    return dict(os.environ)
