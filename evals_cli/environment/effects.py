"""What each effect does to the world and what the agent reads back, errors included.

Results read like a real tool's output (a file's text, a record as JSON, "Error: config.json: no such file"), so
the agent meets the same situations it would against real tools; every call, failed or not, leaves an `EffectRecord`
on its ToolCall saying what it acted on and what changed.

Every effect kind registers with `EFFECTS` (evals_cli/models/effects.py) through `effect`, the built-ins
below as a plug-in's do: a stateful tool's `effect:` names any registered kind.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from evals_cli.environment.world import World
from evals_cli.models.effects import EFFECTS, EffectInfo, EffectSpec
from evals_cli.models.trajectory import EffectRecord
from evals_cli.models.world_values import normal_path, outside_root, record_key

EffectFn = Callable[[World, EffectSpec, dict[str, Any]], tuple[str, EffectRecord]]


def effect(op: str, *, summary: str, arguments: tuple[str, ...] = (), required: tuple[str, ...] = (),
           mutating: bool = False, records: bool = False) -> Callable[[EffectFn], EffectFn]:
    """Register `fn(world, spec, arguments) -> (result text, EffectRecord)` as the effect `op` (`files.read`,
    `acme.kv.incr`): what a tool with `effect: op` does to the sample's world. `arguments` are the EffectSpec
    settings naming tool parameters it reads (path, content, directory, key, fields), `required` those the tool
    must declare; `mutating` says it can change the world, `records` that it acts on a records collection (the
    effect mapping's value names it). Raise EffectError for a call that cannot have its effect."""

    def register(fn: EffectFn) -> EffectFn:
        info = EffectInfo(arguments, required, mutating, records, summary, fn)
        EFFECTS.register(op, module=getattr(fn, "__module__", None))(info)
        return fn

    return register


class EffectError(Exception):
    """The call cannot have its effect; the message is what the agent is told (after "Error: ")."""

    def __init__(self, message: str, target: str = "") -> None:
        super().__init__(message)
        self.target = target


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _argument(args: dict[str, Any], name: str, what: str) -> Any:
    if name not in args or args[name] is None:
        raise EffectError(f"missing argument '{name}' ({what})")
    return args[name]


def _path(args: dict[str, Any], spec: EffectSpec) -> str:
    value = _argument(args, spec.path, "the file path")
    if isinstance(value, dict | list):
        raise EffectError(f"argument '{spec.path}' must be a file path, got {type(value).__name__}")
    path = normal_path(str(value))
    if not path:
        raise EffectError(f"argument '{spec.path}' is empty; give a file path")
    if outside_root(path):
        raise EffectError(f"{path}: outside the workspace (permission denied)", path)
    return path


def _is_folder(world: World, path: str) -> bool:
    return path not in world.files and any(p.startswith(path + "/") for p in world.files)


def _no_file_above(world: World, path: str) -> None:
    """A file cannot be written under another file (`README.md/x`): a disk says "not a directory", and a world
    holding both `README.md` and `README.md/x` would list, read and grade neither way consistently."""
    parts = path.split("/")
    for depth in range(1, len(parts)):
        above = "/".join(parts[:depth])
        if above in world.files:
            raise EffectError(f"{path}: not a directory ({above} is a file)", path)


def _content(args: dict[str, Any], spec: EffectSpec) -> str:
    return _text(_argument(args, spec.content, "the text to write"))


def _existing_file(world: World, spec: EffectSpec, args: dict[str, Any]) -> str:
    """The call's path, which must name a file of the world (read, delete)."""
    path = _path(args, spec)
    if _is_folder(world, path):
        raise EffectError(f"{path}: is a directory", path)
    if path not in world.files:
        raise EffectError(f"{path}: no such file", path)
    return path


@effect("files.read", arguments=("path",), required=("path",), summary="the file's text; error when it does not exist")
def files_read(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    path = _existing_file(world, spec, args)
    return world.files[path], EffectRecord(op=spec.op, target=path)


def _put(world: World, spec: EffectSpec, args: dict[str, Any], append: bool) -> tuple[str, EffectRecord]:
    """files.write and files.append: the same checks; append adds to the end (creating a missing file)."""
    path = _path(args, spec)
    content = _content(args, spec)
    if _is_folder(world, path):
        raise EffectError(f"{path}: is a directory", path)
    _no_file_above(world, path)
    before = world.files.get(path)
    after = (before or "") + content if append else content
    world.files[path] = after
    verb = "Appended" if append else "Wrote"
    return (f"{verb} {len(content)} characters to {path}",
            EffectRecord(op=spec.op, target=path, changed=before != after, before=before, after=after))


@effect("files.write", arguments=("path", "content"), required=("path", "content"), mutating=True,
        summary="creates or replaces the file; 'Wrote N characters to PATH'")
def files_write(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    return _put(world, spec, args, append=False)


@effect("files.append", arguments=("path", "content"), required=("path", "content"), mutating=True,
        summary="adds to the end of the file (created when missing); 'Appended N characters to PATH'")
def files_append(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    return _put(world, spec, args, append=True)


@effect("files.list", arguments=("directory",),
        summary="every file under the folder (all files without one), one path a line")
def files_list(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    raw = args.get(spec.directory)
    if isinstance(raw, dict | list):
        raise EffectError(f"argument '{spec.directory}' must be a folder path, got {type(raw).__name__}")
    folder = normal_path(_text(raw)) if raw not in (None, "") else ""
    if outside_root(folder):
        raise EffectError(f"{folder}: outside the workspace (permission denied)", folder)
    if folder in world.files:
        raise EffectError(f"{folder}: not a directory", folder)
    found = sorted(p for p in world.files if not folder or p.startswith(folder + "/"))
    if folder and not found:
        raise EffectError(f"{folder}: no such directory", folder)
    listing = "\n".join(found) if found else "(no files)"
    return listing, EffectRecord(op=spec.op, target=folder or ".")


@effect("files.delete", arguments=("path",), required=("path",), mutating=True, summary="removes the file; 'Deleted PATH'")
def files_delete(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    path = _existing_file(world, spec, args)
    before = world.files.pop(path)
    return f"Deleted {path}", EffectRecord(op=spec.op, target=path, changed=True, before=before, after=None)


@effect("files.exists", arguments=("path",), required=("path",), summary="'true' or 'false'")
def files_exists(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    path = _path(args, spec)
    present = path in world.files or _is_folder(world, path)
    return ("true" if present else "false"), EffectRecord(op=spec.op, target=path)


def _collection(world: World, spec: EffectSpec) -> dict[str, dict[str, Any]]:
    name = spec.collection or ""
    if name not in world.records:
        raise EffectError(f"no collection '{name}'", name)
    return world.records[name]


def _key(args: dict[str, Any], spec: EffectSpec) -> str:
    value = _argument(args, spec.key, "the record id")
    if isinstance(value, dict | list):
        raise EffectError(f"argument '{spec.key}' must be an id, got {type(value).__name__}")
    return record_key(value)


def _fields(args: dict[str, Any], spec: EffectSpec, default_all: bool, skip: str | None = None) -> dict[str, Any]:
    """Record field -> value taken from the call's arguments, as `fields` says (default: all or none)."""
    if spec.fields is None:
        return {k: v for k, v in args.items() if k != skip} if default_all else {}
    mapping = {n: n for n in spec.fields} if isinstance(spec.fields, list) else dict(spec.fields)
    return {field: args[param] for param, field in mapping.items() if param in args}


def _existing_record(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """(the collection, the record id, "collection/id") of a call naming a record that exists (get, update,
    delete)."""
    records = _collection(world, spec)
    rid = _key(args, spec)
    target = f"{spec.collection}/{rid}"
    if rid not in records:
        raise EffectError(f"{target}: not found", target)
    return records, rid, target


@effect("records.get", arguments=("key",), required=("key",), records=True,
        summary="the record as JSON; error when no record has the id")
def records_get(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    records, rid, target = _existing_record(world, spec, args)
    return _dump(records[rid]), EffectRecord(op=spec.op, target=target)


@effect("records.list", records=True, summary="every record of the collection, a JSON array")
def records_list(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    records = _collection(world, spec)
    return _dump(list(records.values())), EffectRecord(op=spec.op, target=spec.collection or "")


def _matches(wanted: Any, actual: Any) -> bool:
    """Search semantics: text matches text containing it, ignoring case; anything else must be equal."""
    if isinstance(wanted, str) and isinstance(actual, str):
        return wanted.casefold() in actual.casefold()
    if isinstance(wanted, str) and isinstance(actual, int | float) and not isinstance(actual, bool):
        return wanted.strip() == record_key(actual)
    return json.dumps(wanted, sort_keys=True) == json.dumps(actual, sort_keys=True)


@effect("records.search", arguments=("fields",), records=True,
        summary="the records whose fields match the call's arguments, a JSON array")
def records_search(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    records = _collection(world, spec)
    wanted = {k: v for k, v in _fields(args, spec, default_all=True).items() if v not in (None, "")}
    found = [r for r in records.values() if all(k in r and _matches(v, r[k]) for k, v in wanted.items())]
    return _dump(found), EffectRecord(op=spec.op, target=spec.collection or "")


@effect("records.create", arguments=("key", "fields"), mutating=True, records=True,
        summary="adds a record from the arguments (and `set`); the new record as JSON")
def records_create(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    records = _collection(world, spec)
    fields = _fields(args, spec, default_all=True, skip=spec.key)
    if spec.key in args and args[spec.key] not in (None, ""):
        rid = _key(args, spec)
    else:  # no id given: the next free number, as a database would assign one
        number = len(records) + 1
        while str(number) in records:
            number += 1
        rid = str(number)
    target = f"{spec.collection}/{rid}"
    if rid in records:
        raise EffectError(f"{target}: already exists", target)
    original_id = args.get(spec.key, rid) if isinstance(args.get(spec.key), int | str) else rid
    record = {"id": original_id, **{k: v for k, v in fields.items() if k != "id"}, **copy.deepcopy(spec.set)}
    records[rid] = record
    return _dump(record), EffectRecord(op=spec.op, target=target, changed=True, before=None, after=copy.deepcopy(record))


@effect("records.update", arguments=("key", "fields"), required=("key",), mutating=True, records=True,
        summary="sets `set` (and `fields` from the arguments) on the record; the record as JSON")
def records_update(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    records, rid, target = _existing_record(world, spec, args)
    before = copy.deepcopy(records[rid])
    fields = _fields(args, spec, default_all=not spec.set, skip=spec.key)
    fields.pop("id", None)  # an update never renames a record
    records[rid].update(fields)
    records[rid].update(copy.deepcopy(spec.set))
    after = copy.deepcopy(records[rid])
    changed = json.dumps(before, sort_keys=True, default=str) != json.dumps(after, sort_keys=True, default=str)
    return _dump(after), EffectRecord(op=spec.op, target=target, changed=changed, before=before, after=after)


@effect("records.delete", arguments=("key",), required=("key",), mutating=True, records=True,
        summary="removes the record; 'Deleted COLLECTION/ID'")
def records_delete(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, EffectRecord]:
    records, rid, target = _existing_record(world, spec, args)
    before = records.pop(rid)
    return f"Deleted {target}", EffectRecord(op=spec.op, target=target, changed=True, before=before, after=None)


def run_effect(world: World, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, bool, EffectRecord]:
    """(result text, is_error, effect) of one call; a failed effect changes nothing and says why."""
    try:
        result, done = EFFECTS[spec.op].impl.apply(world, spec, args)
    except EffectError as exc:
        return f"Error: {exc}", True, EffectRecord(op=spec.op, target=exc.target, error=str(exc))
    if not done.changed:  # a read, or a write of the same text: the call's result already holds what the agent
        done.before = done.after = None  # saw; a copy here made every read of a big file grow results.jsonl
    return result, False, done
