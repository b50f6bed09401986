"""JSON Schema, with one engine (`jsonschema`): a tool's parameters checked as a schema (`schema_problem`, when
the suite's tools and the recorded sessions' tools are read), and the messages that checking a call's arguments
against it (json_values.py, at grade time) shares.

The messages are ours: each problem is built from the error's fields (where, which keyword, what it asked for),
never from the engine's sentences, which change between versions and quote Python reprs. `jsonschema` is
imported on first use only: most suites never check a schema, and `evals --help` stays fast.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evals_cli.wording import short

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

JSON_TYPES = ("object", "string", "integer", "number", "boolean", "array", "null")
_SCHEMA_PROBLEMS: dict[str, str | None] = {}  # schema text -> its problem: a dataset's rows often repeat one tool override
_MAX_CACHED = 256
_DATA = ("enum", "const", "default", "examples")  # keywords holding values, not schemas


def json_type(value: Any) -> str:
    """The JSON name of a value's type, as messages name it (true is a boolean, not an integer)."""
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


# --- the messages, json_values.py's too ----------------------------------------------------------------------


def join_path(path: str, key: str | int) -> str:
    """A parameter path one key or index deeper: `filters` + `tags` + 0 is `filters.tags[0]`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def path_text(parts: Any, base: str = "") -> str:
    """The parameter path of an error's place (its keys and indexes), under `base`."""
    text = base
    for part in parts:
        text = join_path(text, part)
    return text


_PHRASES = {
    "minimum": "is less than the minimum {}",
    "maximum": "is more than the maximum {}",
    "exclusiveMinimum": "is not more than {}",
    "exclusiveMaximum": "is not less than {}",
    "multipleOf": "is not a multiple of {}",
    "minLength": "is shorter than {} characters",
    "maxLength": "is longer than {} characters",
    "pattern": "does not match the pattern {}",
    "minItems": "has fewer than {} items",
    "maxItems": "has more than {} items",
    "minProperties": "has fewer than {} keys",
    "maxProperties": "has more than {} keys",
    "enum": "is not one of {}",
    "const": "is not {}",
}


def phrase(error: ValidationError) -> str:
    """What is wrong with the value at the error's place, from the keyword and what it asks for."""
    value, wanted, keyword = error.instance, error.validator_value, str(error.validator)
    if keyword == "type":
        got = "null" if value is None else f"{json_type(value)} {short(value)}"
        return f"expected {' or '.join(map(str, wanted if isinstance(wanted, list) else [wanted]))}, got {got}"
    if keyword in ("anyOf", "oneOf") and error.context:
        return f"{short(value)} fits none of the {keyword} schemas"
    if keyword == "oneOf":  # no context: more than one alternative fits, which oneOf forbids
        return f"{short(value)} fits more than one of the oneOf schemas"
    if keyword == "uniqueItems":
        return f"{short(value)} repeats an item (the items must be unique)"
    if keyword == "format":
        return f"{short(value)} is not a valid {wanted}"
    if keyword == "not":
        return f"{short(value)} matches a schema it must not (not: {short(wanted)})"
    said = _PHRASES.get(keyword)
    if said is not None:
        return f"{short(value)} {said.format(short(wanted, 80 if keyword == 'enum' else 60))}"
    return f"{short(value)} does not satisfy {keyword}: {short(wanted)}"


# --- a schema as a schema ------------------------------------------------------------------------------------


def schema_problem(schema: dict[str, Any], field: str = "parameters") -> str | None:
    """Why `schema` is not a JSON Schema that arguments can be checked against, naming where (`field.path`),
    or None: checked against its draft's meta-schema (2020-12 unless `$schema` names another), patterns must
    compile, and every `$ref` must name a part of the schema (no schema is fetched from elsewhere)."""
    key = json.dumps([schema, field], sort_keys=True, default=str)
    if key not in _SCHEMA_PROBLEMS:
        if len(_SCHEMA_PROBLEMS) >= _MAX_CACHED:
            _SCHEMA_PROBLEMS.pop(next(iter(_SCHEMA_PROBLEMS)))
        _SCHEMA_PROBLEMS[key] = _schema_problem(schema, field)
    return _SCHEMA_PROBLEMS[key]


def _schema_problem(schema: dict[str, Any], field: str) -> str | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    cls = validator_for(schema, default=Draft202012Validator)
    error = best_match(cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER).iter_errors(schema))
    if error is not None:
        at = path_text(error.absolute_path, field)
        if error.validator == "anyOf" and error.absolute_path and error.absolute_path[-1] == "type":
            what = f"{short(error.instance)} is not a JSON Schema type (one of {', '.join(JSON_TYPES)})"
        else:
            what = phrase(error)
        return f"{at}: not a valid JSON Schema: {what}"
    return _dangling_ref(schema, field, cls)


def _refs(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield (*path, key), value
            elif key not in _DATA:
                yield from _refs(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _refs(value, (*path, index))


def _dangling_ref(schema: dict[str, Any], field: str, cls: Any) -> str | None:
    """The first `$ref` that names nothing inside the schema, or a schema elsewhere (never fetched)."""
    found = list(_refs(schema))
    if not found:
        return None
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import specification_with

    spec = specification_with(cls.META_SCHEMA["$schema"])
    resolver = Registry().resolver_with_root(Resource.from_contents(schema, default_specification=spec))
    for path, ref in found:
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return (f"{path_text(path, field)}: {ref!r} names no part of the schema; refer to one of its own parts "
                    "(#/$defs/NAME): schemas elsewhere are never fetched")
    return None
