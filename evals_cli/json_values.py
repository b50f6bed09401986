"""A tool call's arguments checked against the tool's JSON Schema (`check_value`, for the tool_schema grader and
the sessions' tool validation), with the engine and the messages of json_schema.py, which checks the schema
itself when the tools are read: this is grade-time work, and it matches the schema's patterns under safe_regex's
time bound (a pattern is the suite's, the text the model's).

The "hallucinated parameter" rule is ours: a model that invents a parameter has misread the tool even when a
lenient schema would let it through, so arguments are checked against the schema with
`additionalProperties: false` added wherever it declares `properties` and says nothing about other keys
(`strict_schema`). An object with no `properties` stays free-form, and `additionalProperties` or
`unevaluatedProperties` given by the schema win; an `allOf` and its parts are left open (each part lists only
some of the keys, so closing one would refuse the keys the others declare).

Argument problems are (kind, detail) pairs. Kinds: type_mismatch (type, or no `anyOf`/`oneOf` alternative
fits), missing_required, hallucinated_parameter, invalid_value (enum, const, bounds, patterns, lengths, ...). At
one place in the arguments a wrong type is the only problem said (its enum or bounds follow from it).
`jsonschema` is imported on first use only, as in json_schema.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evals_cli import safe_regex
from evals_cli.json_schema import join_path, path_text, phrase

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

Problem = tuple[str, str]  # (violation kind, detail)

_VALIDATORS: dict[str, Validator] = {}  # canonical schema text -> its validator (tools repeat, calls are many)
_MAX_CACHED = 256
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONES = ("additionalProperties", "unevaluatedProperties", "items", "additionalItems", "unevaluatedItems",
                "contains", "not", "if", "then", "else", "propertyNames")


class SchemaUnusable(ValueError):
    """The schema itself cannot be evaluated (an unknown type name, a `$ref` that points nowhere, a pattern that
    is no regex): a problem of the schema, never a verdict on the call."""


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


def _validator(schema: dict[str, Any], strict: bool = True) -> Validator:
    """The validator of the strict form of `schema` (with `strict` False: of `schema` as written), of the draft
    its `$schema` names (2020-12 by default)."""
    key = json.dumps([schema, strict], sort_keys=True, default=str)
    found = _VALIDATORS.get(key)
    if found is None:
        from jsonschema import Draft202012Validator
        from jsonschema.validators import validator_for

        checked = strict_schema(schema) if strict else schema
        found = _bounded(validator_for(checked, default=Draft202012Validator))(checked)
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

        def pattern(validator: Any, wanted: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
            if validator.is_type(instance, "string") and not safe_regex.search(wanted, instance):
                yield ValidationError(f"{instance!r} does not match {wanted!r}")

        _BOUNDED[cls] = extend(cls, {"pattern": pattern})
    return _BOUNDED[cls]


# --- arguments against a schema ------------------------------------------------------------------------------


def check_value(value: Any, schema: Any, path: str = "", *, strict: bool = True) -> list[Problem]:
    """Every problem of `value` against `schema`, each naming the parameter path (`filters.tags[0]`) under
    `path`, in the order of the arguments (an object's missing keys first). SchemaUnusable when the schema
    cannot be evaluated. `strict` False checks against the schema as written, without the hallucinated-parameter
    rule (a value that is no tool's arguments: an agent's answer against the suite's output schema)."""
    if not isinstance(schema, dict) or not schema:
        return []
    from jsonschema.exceptions import UnknownType
    from referencing.exceptions import Unresolvable

    try:
        errors = list(_validator(schema, strict).iter_errors(value))
    except UnknownType as exc:
        raise SchemaUnusable(f"the schema names the type {exc.type!r}, which JSON Schema does not have") from None
    except Unresolvable as exc:
        raise SchemaUnusable(f"a $ref of the schema points nowhere ({getattr(exc, 'ref', '')})") from None
    except (re.error, safe_regex.RegexError) as exc:
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
    where = path_text(at, base)
    shown = where or "arguments"
    order = _order(root, at)
    composed = next((e for e in group if e.validator in ("anyOf", "oneOf") and e.context), None)
    if composed is not None:
        fitting = _type_fitting(composed)
        if fitting:  # an alternative of the value's type: what is wrong with the value as that one
            yield from _placed(fitting, root, base)
        else:
            yield order, ("type_mismatch", f"{shown}: {phrase(composed)}")
        return
    wrong_type = next((e for e in group if e.validator == "type"), None)
    if wrong_type is not None:
        yield order, ("type_mismatch", f"{shown}: {phrase(wrong_type)}")
        return
    said: set[str] = set()
    for error in group:
        if error.validator == "required" and isinstance(error.validator_value, list):
            for name in error.validator_value:
                if isinstance(error.instance, dict) and name not in error.instance and name not in said:
                    said.add(name)
                    yield (*order, -1), ("missing_required", f"{join_path(where, name)} is required but missing")
        elif error.validator == "additionalProperties":
            yield from _invented(error, where, order)
        elif error.validator in ("dependentRequired", "dependencies") and _needed(error) is not None:
            name, given = _needed(error)  # type: ignore[misc]
            yield (*order, -1), ("missing_required", f"{join_path(where, name)} is required when {given} is given")
        else:
            yield order, ("invalid_value", f"{shown}: {phrase(error)}")


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
    instance, schema = error.instance, error.schema
    declared = schema.get("properties") if isinstance(schema, dict) else None
    props = declared if isinstance(declared, dict) else {}
    patterns = (schema.get("patternProperties") or {}) if isinstance(schema, dict) else {}
    known = ", ".join(props) or "none"
    for position, key in enumerate(instance if isinstance(instance, dict) else {}):
        if key in props or any(safe_regex.search(p, key) for p in patterns):
            continue
        yield (*order, position), ("hallucinated_parameter", f"{join_path(where, key)} is not a parameter (known: {known})")


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
