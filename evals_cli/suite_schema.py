"""The JSON Schema of suite.yaml (`evals schema`), generated from the same pydantic models that validate a suite,
so an editor (the YAML language server, through a `# yaml-language-server: $schema=...` line) completes and
checks every key the loader accepts, the installed plug-ins' kinds included.

Generated, then adjusted where the models accept a shorter spelling than their fields say (a `before` validator
rewrites it), so that a suite the loader accepts is never flagged:

- `target:` is one of the target kinds, told apart by `kind:`; only openai_chat may leave `kind:` out (the
  loader's default), every other kind must name itself;
- every grader names its `kind:` (the loader requires it);
- an effect is a name (`files.read`), the canonical mapping, or the shorthand mapping whose one effect key names
  the collection (`{records.update: orders, key: order_id}`), one alternative per registered effect;
- a file whose `target.kind` is `recorded_sessions` is a sessions suite (evals_cli/sessions/suite.py).

The schema is a check an editor runs as you type; the loader stays the judge (`${VAR}` expansion, file paths,
cross-field rules such as a per-turn row's list lengths are beyond what a schema can say).
"""

from __future__ import annotations

import copy
import json
from typing import Any

SCHEMA_FILE = "suite.schema.json"
DEFAULT_TARGET = "openai_chat"


def suite_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a suite file, with every registered kind (plug-ins' included)."""
    from evals_cli.sessions.suite import SessionsSuiteSpec
    from evals_cli.suite import spec

    spec.refresh()  # every kind, discovered: the built-in ones and the installed plug-ins'
    live = spec.SuiteSpec.model_json_schema(mode="validation")
    sessions = SessionsSuiteSpec.model_json_schema(mode="validation")
    _require_kinds(live)
    _effect_spellings(live)
    defs = {**_prefixed(sessions.pop("$defs", {}), "Sessions_"), **live.pop("$defs", {})}
    sessions = _renamed_refs(sessions, "Sessions_")
    recorded = {"properties": {"target": {"properties": {"kind": {"const": "recorded_sessions"}},
                                          "required": ["kind"]}}, "required": ["target"]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "evals-cli suite",
            "description": "A suite file of evals-cli (evals run suite.yaml).",
            "if": recorded, "then": sessions, "else": live, "$defs": defs}


def _members(union: dict[str, Any]) -> list[dict[str, Any]]:
    return list(union.get("oneOf") or union.get("anyOf") or [])


def _definition(schema: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    name = str(ref.get("$ref", "")).rsplit("/", 1)[-1]
    return schema["$defs"][name] if name in schema.get("$defs", {}) else ref


def _require_kinds(schema: dict[str, Any]) -> None:
    """`kind:` required in every grader and every target kind but the default one, as the loader requires it."""
    props = schema["properties"]
    for member in _members(props["graders"]["additionalProperties"]):
        _require(_definition(schema, member), "kind")
    for member in _members(props["target"]):
        definition = _definition(schema, member)
        if definition.get("properties", {}).get("kind", {}).get("const") != DEFAULT_TARGET:
            _require(definition, "kind")


def _require(definition: dict[str, Any], key: str) -> None:
    required = definition.setdefault("required", [])
    if key not in required:
        required.append(key)


def _effect_spellings(schema: dict[str, Any]) -> None:
    """The EffectSpec definition replaced by its three spellings (see the module's docstring)."""
    from evals_cli.models.effects import EFFECTS

    defs = schema.get("$defs", {})
    if "EffectSpec" not in defs:
        return
    canonical = defs["EffectSpec"]
    settings = {k: v for k, v in canonical["properties"].items() if k not in ("op", "collection")}
    ops = [entry.kind for entry in EFFECTS.entries()]
    shorthand = []
    for entry in EFFECTS.entries():
        named = ({"type": "string", "description": "The records collection it acts on."} if entry.impl.records
                 else {"type": "null", "description": "A files effect names no collection."})
        shorthand.append({"type": "object", "title": entry.kind, "description": entry.impl.summary,
                          "properties": {entry.kind: named, **copy.deepcopy(settings)},
                          "required": [entry.kind], "additionalProperties": False})
    defs["EffectSpec"] = {
        "title": "EffectSpec", "description": canonical.get("description", ""),
        "anyOf": [{"type": "string", "enum": ops, "description": "An effect with its default settings."},
                  {**canonical, "properties": {**canonical["properties"],
                                               "op": {**canonical["properties"]["op"], "enum": ops}}},
                  *shorthand]}


def _prefixed(defs: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {prefix + name: _renamed_refs(value, prefix) for name, value in defs.items()}


def _renamed_refs(value: Any, prefix: str) -> Any:
    """`value` with every `#/$defs/NAME` reference pointing at `#/$defs/PREFIXNAME` (the sessions suite's
    definitions are kept apart from the live suite's, which may share names)."""
    if isinstance(value, dict):
        return {k: (f"#/$defs/{prefix}{v.rsplit('/', 1)[-1]}" if k == "$ref" and isinstance(v, str)
                    else _renamed_refs(v, prefix)) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed_refs(v, prefix) for v in value]
    return value


def schema_text() -> str:
    """The schema as `evals schema` prints it and `evals init` writes it (suite.schema.json)."""
    return json.dumps(suite_schema(), indent=2, ensure_ascii=False) + "\n"
