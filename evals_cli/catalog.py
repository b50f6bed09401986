"""What `evals list` prints: every registered grader, extractor, target and gate kind with its options, and the
effects a stateful tool can have, generated from the pydantic schemas and the registries (nothing hard-coded)."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any


def render_section(name: str, width: int) -> str:
    """One section of the listing. Every name, description and option text is shown with its control characters
    spelled out (`\\x1b`): a plug-in writes them (its kind names, docstrings, field descriptions), and an escape
    sequence printed raw would drive the reader's terminal. The text is written as it is, never read as markup."""
    import textwrap

    from evals_cli.display.state_diff import visible

    intro, kinds = _CATALOG[name]()
    lines = [f"{name}:"] + textwrap.wrap(intro, width, initial_indent="  ", subsequent_indent="  ")
    for kind, description, options in kinds:
        kind, description = visible(kind), visible(description)
        lines.append("")
        lines += textwrap.wrap(f"{kind} — {description}" if description else kind, width,
                               subsequent_indent="    ")
        for option, shape, text in options:
            lines += textwrap.wrap(visible(f"{option}: {shape}"), width, initial_indent="    ",
                                   subsequent_indent="        ")
            if text:
                lines += textwrap.wrap(visible(text), width, initial_indent="        ", subsequent_indent="        ")
    return "\n".join(lines)


Option = tuple[str, str, str]


def _model_options(model: Any, skip: Iterable[str] = ("kind",)) -> list[Option]:
    """(name, 'type = default', description) of every field of a pydantic model: its own fields first, then
    the ones it inherits, each in declaration order."""
    own = set(vars(model).get("__annotations__", {}))
    out = []
    for name, info in sorted(model.model_fields.items(), key=lambda item: item[0] not in own):
        if name in skip:
            continue
        if info.is_required():
            shape = f"{_type_name(info.annotation)}, required"
        else:
            try:
                default = info.get_default(call_default_factory=True)
            except TypeError:  # a factory that needs the other fields
                default = None
            shape = f"{_type_name(info.annotation)} = {_value_text(default)}"
        out.append((info.alias or name, shape, info.description or ""))  # the name a suite writes
    return out


def _value_text(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return repr(value)


def _type_name(annotation: Any) -> str:
    """An annotation as a user reads it: `float | null`, `"auto" | "required"`, `list[str]`."""
    import types

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "null"
    if annotation is typing.Any:
        return "any"
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(_value_text(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin in (list, dict, tuple, set):
        return f"{origin.__name__}[{', '.join(_type_name(a) for a in args)}]"
    return getattr(annotation, "__name__", str(annotation))


def _doc(obj: Any) -> str:
    """The first paragraph of a docstring, on one line."""
    import inspect

    text = inspect.getdoc(obj) or ""
    return " ".join(text.split("\n\n")[0].split())


def _from(entry: Any) -> str:
    """' (plug-in from PACKAGE)' for a kind an installed package registered; '' for evals-cli's own."""
    package = getattr(entry, "package", None)
    return f" (plug-in from {package})" if package else ""


def _grader_catalog() -> tuple[str, list[tuple[str, str, list[Option]]]]:
    from evals_cli.graders.base import GRADERS
    from evals_cli.models.grader_specs import GraderBase
    from evals_cli.suite.spec import kind_aliases

    common = ", ".join(f"{name} ({shape})" for name, shape, _ in _model_options(GraderBase))
    aliases = kind_aliases(GRADERS)
    kinds: list[tuple[str, str, list[Option]]] = []
    for entry in sorted(GRADERS.entries(), key=lambda e: e.kind):  # alphabetical, as the suite's union lists them
        if entry.kind in aliases:  # an old name: one line pointing at the kind, whose options are listed there
            kinds.append((entry.kind, f"deprecated alias of {aliases[entry.kind]} (the same grader; still "
                                      f"accepted, write kind: {aliases[entry.kind]})", []))
            continue
        spec = entry.spec
        options = _model_options(spec, skip=("kind", *GraderBase.model_fields)) if spec else []
        old_names = [alias for alias, kind in aliases.items() if kind == entry.kind]
        description = _doc(spec) or _doc(entry.impl)
        if old_names:
            description += f" (formerly {', '.join(old_names)})"
        kinds.append((entry.kind, description + _from(entry), options))
    return f"`kind:` of an entry under graders:. Every kind also takes {common}; see `evals list extractors`.", kinds


def _extractor_catalog() -> tuple[str, list[tuple[str, str, list[Option]]]]:
    from evals_cli.models.grader_specs.extractors import EXTRACTORS

    kinds = [(e.impl.name, e.impl.description + _from(e),
              [(option, "required" if option in e.impl.required else "optional", text)
               for option, text in e.impl.options.items()]) for e in EXTRACTORS.entries()]
    return "`extractor:` of a grader (what it grades); options go in `extractor_config:`.", kinds


def _target_catalog() -> tuple[str, list[tuple[str, str, list[Option]]]]:
    from evals_cli.targets.base import TARGETS

    kinds = [(e.kind, (_doc(e.spec) or _doc(e.impl)) + _from(e), _model_options(e.spec) if e.spec else [])
             for e in sorted(TARGETS.entries(), key=lambda e: e.kind)]
    return ("`kind:` of the suite's target: (or of a --target file). letta-evals targets (agent, letta_agent, "
            "letta_code) are read but cannot run: give one of these with --target."), kinds


def _gate_catalog() -> tuple[str, list[tuple[str, str, list[Option]]]]:
    from evals_cli.gate.kinds import GATES
    from evals_cli.gate.scores import PERCENTILES, RUN_LEVEL

    kinds = [(e.kind, _doc(e.spec) + _from(e), _model_options(e.spec) if e.spec else []) for e in GATES.entries()]
    return (f"`kind:` of the suite's gate: (default weighted_average). Percentiles ({', '.join(PERCENTILES)}) "
            f"interpolate between ranks; {' and '.join(RUN_LEVEL)} are over whole samples repeated with "
            "--repeats; pass_rate is the share of samples whose own verdict passed (required graders "
            "included)."), kinds


def _effect_catalog() -> tuple[str, list[tuple[str, str, list[Option]]]]:
    from evals_cli.models.effects import EFFECTS, EffectSpec

    fields = EffectSpec.model_fields
    kinds = []
    for entry in EFFECTS.entries():
        op, info = entry.kind, entry.impl
        options: list[Option] = []
        if info.records:
            options.append((op, "collection, required", "The records collection of the environment it acts on."))
        for name in info.arguments:
            need = "required" if name in info.required else "optional"
            default = fields[name].get_default(call_default_factory=True)
            shape = (f"tool parameter = {_value_text(default)}, {need}" if default is not None
                     else "list[str] | dict[str, str] = null")
            options.append((name, shape, fields[name].description or ""))
        if op in ("records.create", "records.update"):
            options.append(("set", "dict = {}", fields["set"].description or ""))
        mutating = "changes the world" if info.mutating else "reads only"
        kinds.append((op, f"{info.summary} ({mutating}).{_from(entry)}", options))
    return ("`effect:` of a mocked tool: it acts on the sample's `environment:` (files, records). Write "
            "`effect: files.read`, or a mapping naming the collection and the tool parameters that hold the path, "
            "content, key...: `{records.update: orders, key: order_id, set: {status: refunded}}`. Failures answer "
            "'Error: ...' (is_error), as a real tool would."), kinds


def _user_catalog() -> tuple[str, list[tuple[str, str, list[Option]]]]:
    from evals_cli.models.simulated_user import STOP_TOKEN, UserSimulatorSpec, UserSpec
    from evals_cli.simulation.player import USER_PLAYERS

    kinds = [("user:", "A dataset row's simulated user; the suite's `user:` block gives defaults to every row that "
                       "has one (the row's keys win, knows is merged fact by fact). The row's `success:` says what "
                       "success means, for goal-completion judges.", _model_options(UserSpec, skip=())),
             ("user_simulator:", _doc(UserSimulatorSpec), _model_options(UserSimulatorSpec, skip=("kind", "models")))]
    kinds += [(f"player: {e.kind}", _doc(e.impl) + _from(e), []) for e in USER_PLAYERS.entries()]
    return (f"Simulated users: a row with a `user:` block is a conversation with a model playing the user, until "
            f"the user ends it ({STOP_TOKEN} or the end_conversation tool; their last words are sent and "
            "answered first), max_turns, max_seconds, the agent's step bound or an error; the trajectory's "
            "end_reason says which (user_done, max_turns, time_limit, agent_error, user_error, agent_max_steps, "
            "agent_token_limit, agent_message_limit, diverged, attacker_out_of_character)."), kinds


def _settings_catalog() -> tuple[str, list[tuple[str, str, list[Option]]]]:
    from evals_cli.endpoints.secrets import MASK, mask_url
    from evals_cli.settings import default_text, listing

    kinds = []
    for knob in listing():
        if knob.current is None:
            now = "not set (the default applies)"
        elif knob.current == "":
            now = "set, empty"
        elif knob.secret:
            now = f"set ({MASK})"
        else:
            now = mask_url(knob.current)  # a URL may carry a credential
        kinds.append((knob.env, knob.description, [("default", default_text(knob.default), ""), ("now", now, "")]))
    return ("Environment variables evals-cli reads, with their defaults and the values they have now (keys "
            "masked). Empty is unset; a bad value stops every command with exit 2, naming the variable and what "
            "it expects."), kinds


_CATALOG = {"graders": _grader_catalog, "extractors": _extractor_catalog, "targets": _target_catalog,
            "gates": _gate_catalog, "effects": _effect_catalog, "users": _user_catalog,
            "settings": _settings_catalog}
