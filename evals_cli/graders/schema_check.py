"""A small JSON Schema checker for tool arguments, without the `jsonschema` dependency.

Covers what tool schemas use: `type` (one or a list; the seven basic types), `enum`, `const`, `properties`,
`required`, `additionalProperties`, `items`, and `anyOf`/`oneOf` (any alternative fits). Formats, patterns
and numeric bounds are not checked. Unlike JSON Schema, a key outside `properties` is reported (a hallucinated
parameter) unless `additionalProperties` allows it or the object declares no `properties` at all: a model that
invents a parameter has misread the tool even when a lenient schema would let it through.
"""

from __future__ import annotations

from typing import Any

from evals_cli.graders.calls import short
from evals_cli.tools.mock import same_value

Problem = tuple[str, str]  # (violation kind, detail)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_type(value: Any, name: str) -> bool:
    """JSON Schema's basic types; 3.0 is an integer, true is not a number. Unknown type names accept anything."""
    actual = json_type(value)
    if name == "number":
        return actual in ("integer", "number")
    if name == "integer":
        return actual == "integer" or (actual == "number" and float(value).is_integer())
    if name in ("string", "boolean", "array", "object", "null"):
        return actual == name
    return True


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def check_value(value: Any, schema: Any, path: str) -> list[Problem]:
    """Every problem of `value` against `schema`, each naming the parameter path (`filters.tags[0]`)."""
    if not isinstance(schema, dict):
        return []
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options:
            if all(check_value(value, option, path) for option in options):
                return [("type_mismatch", f"{path or 'arguments'}: {short(value)} fits none of the {keyword} schemas")]
    types = schema.get("type")
    if types is not None:
        wanted = types if isinstance(types, list) else [types]
        if not any(is_type(value, str(t)) for t in wanted):
            got = "null" if value is None else f"{json_type(value)} {short(value)}"
            return [("type_mismatch", f"{path or 'arguments'}: expected {' or '.join(map(str, wanted))}, got {got}")]
    if "enum" in schema and isinstance(schema["enum"], list) and not any(same_value(value, e) for e in schema["enum"]):
        return [("invalid_value", f"{path}: {short(value)} is not one of {short(schema['enum'], 80)}")]
    if "const" in schema and not same_value(value, schema["const"]):
        return [("invalid_value", f"{path}: {short(value)} is not {short(schema['const'])}")]
    if isinstance(value, dict):
        return _check_object(value, schema, path)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [p for i, item in enumerate(value) for p in check_value(item, schema["items"], _join(path, i))]
    return []


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[Problem]:
    problems: list[Problem] = []
    properties = schema.get("properties")
    props = properties if isinstance(properties, dict) else {}
    for name in schema.get("required") or []:
        if name not in value:
            problems.append(("missing_required", f"{_join(path, name)} is required but missing"))
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        where = _join(path, key)
        if key in props:
            problems += check_value(item, props[key], where)
        elif isinstance(extra, dict):
            problems += check_value(item, extra, where)
        elif isinstance(properties, dict) and extra is not True:
            known = ", ".join(props) or "none"
            problems.append(("hallucinated_parameter", f"{where} is not a parameter (known: {known})"))
    return problems
