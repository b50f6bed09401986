"""Turn pydantic validation errors into `file:line: field.path: problem; hint` lines."""

from __future__ import annotations

import difflib
import math
import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Discriminator, ValidationError
from pydantic_core import ErrorDetails

from evals_cli.models.target_specs import DRIVEN_LOOP_ONLY

Loc = tuple[str | int, ...]

def clip(text: str, limit: int = 120) -> str:
    """A user value cut for a message: a 2 MB id or key must not become 2 MB of terminal output."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


NOT_FINITE = "NaN and infinity are not allowed here; write a finite number"


def non_finite_paths(value: object, path: Loc = ()) -> list[Loc]:
    """Key paths of every NaN or infinite number in a parsed tree (YAML `.nan`/`.inf`, JSON `NaN`): such a
    number compares false with everything, so a NaN weight or threshold would pass a gate silently."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in non_finite_paths(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in non_finite_paths(v, (*path, i))]
    return []


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional layers."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) == 1:
                tp = members[0]
                continue
        return tp


def _discriminated(tp: Any) -> bool:
    """Whether `tp` is a tagged union (Annotated with a pydantic Discriminator), whose errors carry the member's tag
    as a location part of their own."""
    return typing.get_origin(tp) is typing.Annotated and any(
        isinstance(meta, Discriminator) for meta in typing.get_args(tp)[1:])


def _tag_of(model: Any) -> str | None:
    if isinstance(model, type) and issubclass(model, BaseModel) and "kind" in model.model_fields:
        return model.model_fields["kind"].default
    return None


def _resolve(root: type[BaseModel], loc: Loc) -> tuple[Loc, list[str]]:
    """Walk a model along an error location: the path as the user wrote it, and the keys valid at its end."""
    path: list[str | int] = []
    tp: Any = root
    parent_fields: list[str] = list(root.model_fields)
    field_tagged = False  # the field just entered is a tagged union (pydantic keeps its Discriminator aside)
    for part in loc:
        tagged = field_tagged or _discriminated(tp)
        field_tagged = False
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            parent_fields = [f.alias or name for name, f in tp.model_fields.items()]  # as a suite spells them
            if tagged and part == _tag_of(tp):
                # a tagged union of one kind (a suite imports only the kinds it names) is that kind's model to
                # typing, but pydantic still puts the member's tag in the location: not part of the user's path
                continue
            field = _field(tp, part) if isinstance(part, str) else None
            path.append(part)
            tp = field.annotation if field is not None else None
            field_tagged = field is not None and any(isinstance(meta, Discriminator) for meta in field.metadata)
        elif origin is dict:
            path.append(part)
            tp = typing.get_args(tp)[1]
        elif origin is list:
            path.append(part)
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [m for m in typing.get_args(tp) if m is not type(None)]
            chosen = next((m for m in members if _tag_of(_unwrap(m)) == part), None)
            if chosen is not None:
                tp = chosen
            elif isinstance(part, int):
                path.append(part)
                tp = None
            # otherwise: a union member label such as 'str' or 'list[str]': not part of the user's path
        elif tp is None:
            if isinstance(part, int) or not _looks_like_label(part):
                path.append(part)
        else:
            path.append(part)
            tp = None
    return tuple(path), parent_fields


def _field(model: type[BaseModel], key: str) -> Any:
    """The field a suite's key names: by its name, or by its alias (`assert:` of the spans grader)."""
    found = model.model_fields.get(key)
    return found or next((f for f in model.model_fields.values() if f.alias == key), None)


def _looks_like_label(part: str) -> bool:
    return "[" in part or part in {"str", "int", "float", "bool", "list", "dict", "none"}


def _message(err: ErrorDetails, valid_keys: list[str], key: str | int | None) -> str:
    """Our own sentence for the kinds of problem users meet most (pydantic's wording changes between releases,
    and tests must not pin it); pydantic's message, lower-cased, for the rest."""
    kind = err["type"]
    if kind == "extra_forbidden":
        if str(key) in DRIVEN_LOOP_ONLY:  # a known option that this kind cannot apply
            return DRIVEN_LOOP_ONLY[str(key)]
        hint = difflib.get_close_matches(str(key), valid_keys, n=1, cutoff=0.6)
        suggestion = f"did you mean '{hint[0]}'?" if hint else f"valid keys: {', '.join(valid_keys)}"
        return f"unknown key '{clip(str(key), 80)}'; {suggestion}"
    if kind == "missing":
        return "required field is missing"
    if kind == "union_tag_invalid":
        ctx = err.get("ctx", {})
        tags = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()]
        tag = str(ctx.get("tag", ""))
        hint = difflib.get_close_matches(tag, tags, n=1, cutoff=0.5)
        more = f"did you mean '{hint[0]}'? " if hint else ""
        return f"unknown kind '{tag}'; {more}kinds: {', '.join(tags)}"
    if kind == "finite_number":
        return NOT_FINITE
    if kind == "union_tag_not_found":
        return "missing 'kind' (one of the registered kinds; see `evals list`)"
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    return msg[:1].lower() + msg[1:]


def error_message(err: ErrorDetails) -> str:
    """One pydantic error in our words, for places that name the field themselves."""
    return _message(err, [], err["loc"][-1] if err["loc"] else None)


def format_validation_error(
    exc: ValidationError,
    model: type[BaseModel],
    where: str,
    line_of: Callable[[Loc], int | None] | None = None,
    prefix: Loc = (),
) -> list[str]:
    """One line per distinct problem, naming the file, line and field."""
    merged: dict[tuple[Loc, str], list[str]] = {}
    for err in exc.errors():
        path, valid = _resolve(model, tuple(err["loc"]))
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            path = (*path, "kind")  # point at the kind line (or its mapping when kind is missing)
        key = err["loc"][-1] if err["loc"] else None
        message = _message(err, valid, key)
        field = clip(".".join(str(p) for p in (*prefix, *path)), 160)
        merged.setdefault((path, field), [])
        if message not in merged[(path, field)]:
            merged[(path, field)].append(message)
    lines = []
    for (path, field), messages in merged.items():
        line = line_of(path) if line_of else None
        location = f"{where}:{line}" if line else where
        text = " or ".join(messages) if len(messages) > 1 and all(m.startswith("input should") for m in messages) \
            else "; ".join(messages)
        lines.append(f"{location}: {field}: {text}" if field else f"{location}: {text}")
    return lines
