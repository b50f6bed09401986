"""JSON Schema, with one engine (`jsonschema`): a tool's parameters checked as a schema (`schema_problem`, for the
suite's tools and the recorded sessions' tools) and a call's arguments checked against it (`check_value`, for the
tool_schema grader and the sessions' tool validation).

Two things are ours. First, the "hallucinated parameter" rule: a model that invents a parameter has misread the
tool even when a lenient schema would let it through, so arguments are checked against the schema with
`additionalProperties: false` added wherever it declares `properties` and says nothing about other keys
(`strict_schema`). An object with no `properties` stays free-form, and `additionalProperties` or
`unevaluatedProperties` given by the schema win; an `allOf` and its parts are left open (each part lists only
some of the keys, so closing one would refuse the keys the others declare). Second, the messages: each problem
is built from the error's fields (where, which keyword, what it asked for), never from the engine's sentences,
which change between versions and quote Python reprs.

Argument problems are (kind, detail) pairs. Kinds: type_mismatch (type, or no `anyOf`/`oneOf` alternative
fits), missing_required, hallucinated_parameter, invalid_value (enum, const, bounds, patterns, lengths, ...). At
one place in the arguments a wrong type is the only problem said (its enum or bounds follow from it).
`jsonschema` is imported on first use only: most suites never check a schema, and `evals --help` stays fast.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evals_cli.wording import short

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

Problem = tuple[str, str]  # (violation kind, detail)

JSON_TYPES = ("object", "string", "integer", "number", "boolean", "array", "null")
_VALIDATORS: dict[str, Validator] = {}  # canonical schema text -> its validator (tools repeat, calls are many)
_SCHEMA_PROBLEMS: dict[str, str | None] = {}  # the same: a dataset's rows often repeat one tool override
_MAX_CACHED = 256
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONES = ("additionalProperties", "unevaluatedProperties", "items", "additionalItems", "unevaluatedItems",
                "contains", "not", "if", "then", "else", "propertyNames")
_DATA = ("enum", "const", "default", "examples")  # keywords holding values, not schemas


class SchemaUnusable(ValueError):
    """The schema itself cannot be evaluated (an unknown type name, a `$ref` that points nowhere, a pattern that
    is no regex): a problem of the schema, never a verdict on the call."""


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


# --- the hallucinated-parameter rule -------------------------------------------------------------------------


def strict_schema(schema: Any, *, in_all_of: bool = False) -> Any:
    """`schema` with `additionalProperties: false` wherever it declares `properties` and says nothing about
    other keys: the hallucinated-parameter rule as a schema transform (see the module docstring). A copy."""
    if isinstance(schema, list):
        return [strict_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [strict_schema(sub) for sub in value]
        elif key == "allOf" and isinstance(value, list):
            out[key] = [strict_schema(sub, in_all_of=True) for sub in value]
        elif key in _SCHEMA_ONES and isinstance(value, dict | list):
            out[key] = strict_schema(value)
        else:
            out[key] = value
    closes = isinstance(schema.get("properties"), dict) and not in_all_of and "allOf" not in schema
    if closes and "additionalProperties" not in schema and "unevaluatedProperties" not in schema:
        out["additionalProperties"] = False
    return out


def _validator(schema: dict[str, Any]) -> Validator:
    """The validator of the strict form of `schema`, of the draft its `$schema` names (2020-12 by default)."""
    key = json.dumps(schema, sort_keys=True, default=str)
    found = _VALIDATORS.get(key)
    if found is None:
        from jsonschema import Draft202012Validator
        from jsonschema.validators import validator_for

        strict = strict_schema(schema)
        found = _bounded(validator_for(strict, default=Draft202012Validator))(strict)
        if len(_VALIDATORS) >= _MAX_CACHED:
            _VALIDATORS.pop(next(iter(_VALIDATORS)))
        _VALIDATORS[key] = found
    return found


_BOUNDED: dict[Any, Any] = {}


def _bounded(cls: Any) -> Any:
    """`cls` with `pattern` matched by safe_regex: the pattern is the suite's, the text the model's, and a
    pattern that backtracks for ever must cost a grade error, never a hung run."""
    if cls not in _BOUNDED:
        from jsonschema.exceptions import ValidationError
        from jsonschema.validators import extend

        from evals_cli import safe_regex

        def pattern(validator: Any, wanted: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
            if validator.is_type(instance, "string") and not safe_regex.search(wanted, instance):
                yield ValidationError(f"{instance!r} does not match {wanted!r}")

        _BOUNDED[cls] = extend(cls, {"pattern": pattern})
    return _BOUNDED[cls]


# --- arguments against a schema ------------------------------------------------------------------------------


def check_value(value: Any, schema: Any, path: str = "") -> list[Problem]:
    """Every problem of `value` against `schema`, each naming the parameter path (`filters.tags[0]`) under
    `path`, in the order of the arguments (an object's missing keys first). SchemaUnusable when the schema
    cannot be evaluated."""
    if not isinstance(schema, dict) or not schema:
        return []
    from jsonschema.exceptions import UnknownType
    from referencing.exceptions import Unresolvable

    from evals_cli.safe_regex import RegexError

    try:
        errors = list(_validator(schema).iter_errors(value))
    except UnknownType as exc:
        raise SchemaUnusable(f"the schema names the type {exc.type!r}, which JSON Schema does not have") from None
    except Unresolvable as exc:
        raise SchemaUnusable(f"a $ref of the schema points nowhere ({getattr(exc, 'ref', '')})") from None
    except (re.error, RegexError) as exc:
        raise SchemaUnusable(f"a pattern of the schema is not a regular expression ({exc})") from None
    except (TypeError, AttributeError) as exc:  # a keyword of the wrong shape, such as `required: true`
        raise SchemaUnusable(f"the schema cannot be evaluated ({type(exc).__name__}: {exc})") from None
    found = list(_placed(errors, value, path))
    found.sort(key=lambda item: item[0])
    return [problem for _, problem in found]


def _placed(errors: list[ValidationError], root: Any, base: str) -> Iterator[tuple[tuple[int, ...], Problem]]:
    places: dict[tuple[Any, ...], list[ValidationError]] = {}
    for error in errors:
        places.setdefault(tuple(error.absolute_path), []).append(error)
    for at, group in places.items():
        yield from _problems(group, root, at, base)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _path_text(parts: Any, base: str = "") -> str:
    text = base
    for part in parts:
        text = _join(text, part)
    return text


def _order(value: Any, parts: tuple[Any, ...]) -> tuple[int, ...]:
    """Where a place sits in the arguments: the position of each key (-1: not there, a missing key) or index."""
    key: list[int] = []
    node = value
    for part in parts:
        if isinstance(node, dict):
            key.append(list(node).index(part) if part in node else -1)
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            key.append(part)
            node = node[part]
        else:
            key.append(-1)
            node = None
    return tuple(key)


def _problems(group: list[ValidationError], root: Any, at: tuple[Any, ...],
              base: str) -> Iterator[tuple[tuple[int, ...], Problem]]:
    """The problems at one place of the arguments: a failed type (or no fitting alternative) alone."""
    where = _path_text(at, base)
    shown = where or "arguments"
    order = _order(root, at)
    composed = next((e for e in group if e.validator in ("anyOf", "oneOf") and e.context), None)
    if composed is not None:
        fitting = _type_fitting(composed)
        if fitting:  # an alternative of the value's type: what is wrong with the value as that one
            yield from _placed(fitting, root, base)
        else:
            yield order, ("type_mismatch", f"{shown}: {_phrase(composed)}")
        return
    wrong_type = next((e for e in group if e.validator == "type"), None)
    if wrong_type is not None:
        yield order, ("type_mismatch", f"{shown}: {_phrase(wrong_type)}")
        return
    said: set[str] = set()
    for error in group:
        if error.validator == "required" and isinstance(error.validator_value, list):
            for name in error.validator_value:
                if isinstance(error.instance, dict) and name not in error.instance and name not in said:
                    said.add(name)
                    yield (*order, -1), ("missing_required", f"{_join(where, name)} is required but missing")
        elif error.validator == "additionalProperties":
            yield from _invented(error, where, order)
        elif error.validator in ("dependentRequired", "dependencies") and _needed(error) is not None:
            name, given = _needed(error)  # type: ignore[misc]
            yield (*order, -1), ("missing_required", f"{_join(where, name)} is required when {given} is given")
        else:
            yield order, ("invalid_value", f"{shown}: {_phrase(error)}")


def _type_fitting(composed: ValidationError) -> list[ValidationError]:
    """The errors of the first alternative of an `anyOf`/`oneOf` whose type the value has ([] when none has):
    `1.5` against "a number up to 1, or null" is a number past its maximum, not a value of no fitting type."""
    by_option: dict[Any, list[ValidationError]] = {}
    for error in composed.context or []:
        by_option.setdefault(error.relative_schema_path[0], []).append(error)
    for errors in by_option.values():
        if not any(e.validator in ("type", "anyOf", "oneOf") and not e.relative_path for e in errors):
            return errors
    return []


def _invented(error: ValidationError, where: str, order: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], Problem]]:
    """One hallucinated parameter per key the object's schema does not declare."""
    from evals_cli import safe_regex

    instance, schema = error.instance, error.schema
    declared = schema.get("properties") if isinstance(schema, dict) else None
    props = declared if isinstance(declared, dict) else {}
    patterns = (schema.get("patternProperties") or {}) if isinstance(schema, dict) else {}
    known = ", ".join(props) or "none"
    for position, key in enumerate(instance if isinstance(instance, dict) else {}):
        if key in props or any(safe_regex.search(p, key) for p in patterns):
            continue
        yield (*order, position), ("hallucinated_parameter", f"{_join(where, key)} is not a parameter (known: {known})")


def _needed(error: ValidationError) -> tuple[str, str] | None:
    """(missing key, the key that needs it) of a dependentRequired error, when it is one of names."""
    value, wanted = error.instance, error.validator_value
    if not isinstance(value, dict) or not isinstance(wanted, dict):
        return None
    for given, needs in wanted.items():
        if given in value and isinstance(needs, list):
            missing = [n for n in needs if n not in value]
            if missing:
                return str(missing[0]), str(given)
    return None


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


def _phrase(error: ValidationError) -> str:
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
    phrase = _PHRASES.get(keyword)
    if phrase is not None:
        return f"{short(value)} {phrase.format(short(wanted, 80 if keyword == 'enum' else 60))}"
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
        at = _path_text(error.absolute_path, field)
        if error.validator == "anyOf" and error.absolute_path and error.absolute_path[-1] == "type":
            what = f"{short(error.instance)} is not a JSON Schema type (one of {', '.join(JSON_TYPES)})"
        else:
            what = _phrase(error)
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
            return (f"{_path_text(path, field)}: {ref!r} names no part of the schema; refer to one of its own parts "
                    "(#/$defs/NAME): schemas elsewhere are never fetched")
    return None
