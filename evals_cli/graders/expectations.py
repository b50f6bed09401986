"""An expected state checked against the world as the agent left it: one outcome per expectation, each unmet one
saying what is wrong in the words a reviewer would use ("config.json: port is 8080, expected 3000").

final_state scores these outcomes; stop_behavior asks, call by call, when they were first all met.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evals_cli.environment.world import World
from evals_cli.graders.arg_match import check, describe, equal
from evals_cli.graders.calls import short
from evals_cli.models.expected_state import ExpectedState, FileExpectation, field_matcher
from evals_cli.models.grader_specs.fields import ArgMatch
from evals_cli.models.trajectory import StateChange
from evals_cli.models.world_values import normal_target, record_key

_MISSING: Any = object()


@dataclass(frozen=True)
class Outcome:
    """One expectation and whether the final world meets it."""

    expectation: str  # what was expected, e.g. "files.config.json" or "unchanged README.md"
    met: bool
    problem: str = ""  # why not, naming the file or record


def _json_path_problem(expected: Any, actual: Any, at: str, m: ArgMatch) -> str | None:
    """The first place `actual` (parsed JSON) does not contain `expected`, in words; None when it does."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{at or 'the document'} is {short(actual)}, expected an object containing {short(expected)}"
        for key, value in expected.items():
            where = f"{at}.{key}" if at else str(key)
            if key not in actual:
                return f"{where} is missing, expected {short(value)}"
            problem = _json_path_problem(value, actual[key], where, m)
            if problem is not None:
                return problem
        return None
    if equal(expected, actual, m, subset=True):
        return None
    return f"{at or 'the document'} is {short(actual)}, expected {short(expected)}"


def file_problem(path: str, want: FileExpectation, text: str | None) -> str | None:
    """Why the file's final text does not meet the expectation (None: it does)."""
    if text is None:
        return f"{path}: does not exist, expected {_wanted(want)}"
    if want.json_subset is not None:
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            return f"{path}: not valid JSON ({exc.__class__.__name__}: {exc}), expected {_wanted(want)}"
        problem = _json_path_problem(want.json_subset, parsed, "", want)
        return f"{path}: {problem}" if problem is not None else None
    expected = want.exact if "exact" in want.model_fields_set else _MISSING
    if check(want, expected, {"text": text}, "text"):
        return None
    return f"{path}: text is {short(text)}, expected {describe(want, expected)}"


def _wanted(want: FileExpectation) -> str:
    if want.json_subset is not None:
        return f"JSON containing {short(want.json_subset)}"
    return describe(want, want.exact if "exact" in want.model_fields_set else _MISSING)


def record_problems(target: str, fields: dict[str, Any], record: dict[str, Any] | None) -> list[str]:
    """Why the record does not have the expected fields (empty: it does)."""
    if record is None:
        return [f"{target}: does not exist"]
    problems = []
    for name, wanted in fields.items():
        raw = field_matcher(wanted)
        m = ArgMatch.model_validate(raw) if raw is not None else ArgMatch()
        expected = (m.exact if "exact" in m.model_fields_set else _MISSING) if raw is not None else wanted
        if not check(m, expected, record, name):
            got = short(record[name]) if name in record else "missing"
            problems.append(f"{target}: {name} is {got}, expected {describe(m, expected)}")
    return problems


def _kind_of(target: str, initial: World, final: World) -> str:
    """Whether a target names a file (or folder) or a record: a path that is a file or folder in either world is
    one; else a target whose first part is a collection names a record ("orders/12345")."""
    for world in (initial, final):
        if target in world.files or any(p.startswith(target + "/") for p in world.files):
            return "file"
    collection = target.partition("/")[0]
    return "record" if collection in initial.records or collection in final.records else "file"


def _expand(target: str, initial: World, final: World) -> list[tuple[str, str]]:
    """A path, folder, collection or collection/id as the (target, kind) pairs it names in either world."""
    if "/" not in target and (target in initial.records or target in final.records):  # a whole collection
        ids = list(dict.fromkeys([*initial.records.get(target, {}), *final.records.get(target, {})]))
        return [(f"{target}/{i}", "record") for i in ids]
    kind = _kind_of(target, initial, final)
    if kind == "file" and target not in initial.files and target not in final.files:
        under = sorted({p for p in [*initial.files, *final.files] if p.startswith(target + "/")})
        if under:
            return [(p, "file") for p in under]
    return [(target, kind)]


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _change_words(before: Any, after: Any) -> str:
    if before is None:
        return f"created ({short(after)})"
    if after is None:
        return "deleted"
    return f"changed from {short(before)} to {short(after)}"


def _what_changed(before: Any, after: Any) -> str:
    """A change in words a reviewer can act on: for a record or a JSON file, the fields that changed (the two
    objects cut to 60 characters each hid them behind the fields that did not)."""
    if isinstance(before, str) and isinstance(after, str):
        old, new = _json_object(before), _json_object(after)
        if isinstance(old, dict) and isinstance(new, dict):
            before, after = old, new
    if isinstance(before, dict) and isinstance(after, dict):
        keys = _key_changes({}, before, after, "")
        if keys:
            return "; ".join(keys)
        return "rewritten with the same data"
    return _change_words(before, after)


def _key_changes(named: Any, before: Any, after: Any, at: str) -> list[str]:
    """The keys of two JSON objects that differ outside what `named` (an expectation's object) speaks about:
    under no_other_changes, `json_subset: {port: 3000}` sanctions the port, not dropping `host` on the way."""
    if not (isinstance(before, dict) and isinstance(after, dict) and isinstance(named, dict)):
        return []
    out: list[str] = []
    for key in dict.fromkeys([*before, *after]):
        where = f"{at}.{key}" if at else str(key)
        old, new = before.get(key, _MISSING), after.get(key, _MISSING)
        if key in named:
            out += _key_changes(named[key], old, new, where)
        elif old is _MISSING:
            out.append(f"{where} added ({short(new)})")
        elif new is _MISSING:
            out.append(f"{where} removed (was {short(old)})")
        elif not _same(old, new):
            out.append(f"{where} changed from {short(old)} to {short(new)}")
    return out


def _json_object(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _stray(change: StateChange, scope: Any) -> list[str]:
    """What of one change no expectation sanctions: everything (scope None), nothing (scope True), or, for a
    record or a json_subset file an expectation names part of, the fields or keys outside that part."""
    if scope is True:
        return []
    if scope is None:
        return [f"{change.target}: {_what_changed(change.before, change.after)}"]
    if change.before is None or change.after is None:  # created or deleted: the expectation itself judges it
        return []
    kind, named = scope
    if kind == "record":
        before, after = change.before, change.after
    else:
        before, after = _json_object(change.before), _json_object(change.after)
    return [f"{change.target}: {words}" for words in _key_changes(named, before, after, "")]


def evaluate(expected: ExpectedState, initial: World, final: World) -> list[Outcome]:
    """Every expectation of `expected` against the final world, in the order they are written."""
    outcomes: list[Outcome] = []
    # what some expectation speaks about, so it is not an "other change": True, the whole target; or (kind,
    # named fields/keys) when a record's fields or a file's json_subset name only part of it
    accounted: dict[str, Any] = {}
    for raw_path, want in expected.files.items():
        path = normal_target(raw_path)
        accounted[path] = ("file", want.json_subset) if isinstance(want.json_subset, dict) else True
        text = final.files.get(path)
        if text is None and any(p.startswith(path + "/") for p in final.files):
            problem: str | None = f"{path}: is a folder, expected a file holding {_wanted(want)}"
        else:
            problem = file_problem(path, want, text)
        outcomes.append(Outcome(f"files {path}", problem is None, problem or ""))
    for collection, by_id in expected.records.items():
        for rid, fields in by_id.items():
            target = f"{collection}/{record_key(rid)}"
            accounted[target] = ("record", dict.fromkeys([*fields, "id"]))
            problems = record_problems(target, fields, final.get(target, "record"))
            outcomes.append(Outcome(f"records {target}", not problems, "; ".join(problems)))
    for raw in expected.unchanged:
        items = _expand(normal_target(raw), initial, final)
        bad = []
        for target, kind in items:
            accounted[target] = True
            before, after = initial.get(target, kind), final.get(target, kind)
            if not _same(before, after):
                bad.append(f"{target}: {_what_changed(before, after)}, expected unchanged")
        outcomes.append(Outcome(f"unchanged {raw}", not bad, "; ".join(bad)))
    outcomes += [_deleted(raw, initial, final, accounted) for raw in expected.deleted]
    outcomes += [_exists(raw, initial, final, accounted) for raw in expected.exists]
    if expected.no_other_changes:
        stray = [w for c in final.diff(initial) for w in _stray(c, accounted.get(c.target))]
        outcomes.append(Outcome("no_other_changes", not stray,
                                "; ".join(f"{w}, but no other changes were expected" for w in stray)))
    return outcomes


def _deleted(raw: str, initial: World, final: World, accounted: dict[str, Any]) -> Outcome:
    """`deleted:` one path: a folder or a collection must be gone with everything in it."""
    target = normal_target(raw)
    items = _expand(target, initial, final)  # a folder or a collection: everything in it must be gone
    still = [t for t, kind in items if final.get(t, kind) is not None]
    accounted.update(dict.fromkeys((t for t, _ in items), True))
    shown = ", ".join(still[:5]) + (f" and {len(still) - 5} more" if len(still) > 5 else "")
    words = (f"{target}: still exists, expected deleted" if still == [target]
             else f"{target}: {shown} still exist(s), expected deleted")
    return Outcome(f"deleted {target}", not still, words if still else "")


def _exists(raw: str, initial: World, final: World, accounted: dict[str, Any]) -> Outcome:
    """`exists:` one path: a record, a file, a folder or a collection; creating it is what was asked."""
    target = normal_target(raw)
    kind = _kind_of(target, initial, final)
    if "/" not in target and target in final.records:
        present = True  # a collection
    else:
        present = final.get(target, kind) is not None or (kind == "file" and any(
            p.startswith(target + "/") for p in final.files))
    absent = initial.get(target, kind) is None and target not in initial.records and not any(
        p.startswith(target + "/") for p in initial.files)
    if absent:  # expected to appear: creating it (a file, or a folder with what is in it) is what was asked
        accounted.update({t: True for t, _ in _expand(target, initial, final) if t not in accounted})
        accounted.setdefault(target, True)
    return Outcome(f"exists {target}", present, "" if present else f"{target}: does not exist")


def state_reached(expected: ExpectedState, initial: World, current: World) -> bool:
    """Whether the world, as it is now, meets every expectation."""
    return all(o.met for o in evaluate(expected, initial, current))
