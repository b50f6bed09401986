"""A sample's mocked world (files and record collections), the effects tools have on it, and the state it should
be left in. Pure data: the world itself and the effects' behaviour live in evals_cli/environment/."""

from __future__ import annotations

import difflib
import posixpath
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.grader_specs.fields import ArgMatch
from evals_cli.registry import Registry


def normal_path(path: str) -> str:
    """The one spelling of a file path in the world: `./config.json` and `config.json` name the same file, as
    they would on a disk; a trailing slash or a doubled one does not make another file. The world has one root,
    so `/config.json` is `config.json` too (files.list already treats `/` as the root: a listing the agent then
    could not read back would be a trap no real tool sets). Case matters, as on Linux."""
    text = unicodedata.normalize("NFC", str(path).strip())  # "café" typed or pasted decomposed is the same name
    if not text or text in (".", "./"):
        return ""
    norm = posixpath.normpath(text).lstrip("/")
    return "" if norm == "." else norm.removeprefix("./")


def outside_root(path: str) -> bool:
    """A normalised path that climbs out of the world (`../secrets`): no file of the world can be there."""
    return path == ".." or path.startswith("../")


def json_problem(value: Any, at: str) -> str | None:
    """Where a value loaded from YAML is not JSON (a date, a set, bytes, NaN), naming the spot and the fix: the
    world's files and records are what the agent reads back as JSON, and a date there failed the tool call at
    run time instead of the suite at load time."""
    stack: list[tuple[Any, str]] = [(value, at)]
    while stack:
        item, where = stack.pop()
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"{where}: {item} is not a JSON number; give a finite number or a string"
            continue
        if isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    return f"{where}: key {key!r} is not text; quote it"
                stack.append((sub, f"{where}.{key}"))
            continue
        if isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(item))
            continue
        return (f"{where}: {item!r} ({type(item).__name__}) is not a JSON value; quote it in the YAML "
                f"(e.g. '2024-01-01') to make it text")
    return None


def record_key(value: Any) -> str:
    """Record ids compare as text: a model sends `"12345"` or `12345` for the same order."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@runtime_checkable
class Effect(Protocol):
    """What a stateful tool does to the world (public: `evals_cli.Effect`): one effect kind, registered in
    `EFFECTS` under the name a tool's `effect:` gives (`files.read`). `apply(world, spec, arguments)` acts on
    the sample's own world (`world.files`: path -> text, `world.records`: collection -> id -> record) as the
    tool call's arguments say (`spec`, the tool's EffectSpec, names the parameters), and returns the text the
    agent reads back and the trajectory's record of what it did (evals_cli.models.trajectory.EffectRecord); it raises
    evals_cli.environment.effects.EffectError, changing nothing, when the call cannot have its effect. The
    attributes say what `evals list effects` shows and what `evals validate` checks: the EffectSpec settings
    naming tool parameters it reads (`arguments`), those the tool must declare (`required`), whether it can
    change the world (`mutating`: stop_behavior counts such calls) and acts on a records collection
    (`records`)."""

    @property
    def arguments(self) -> tuple[str, ...]: ...

    @property
    def required(self) -> tuple[str, ...]: ...

    @property
    def mutating(self) -> bool: ...

    @property
    def records(self) -> bool: ...

    @property
    def summary(self) -> str: ...

    def apply(self, world: Any, spec: EffectSpec, args: dict[str, Any]) -> tuple[str, Any]:
        """(result text, EffectRecord) of one call; EffectError when it cannot have its effect."""
        ...


@dataclass(frozen=True)
class EffectInfo:
    """One effect kind: what it reads from a call and does (shown by `evals list effects` and the README), and
    `apply`, the function doing it: `(world, spec, arguments) -> (result text, EffectRecord)`, raising
    evals_cli.environment.effects.EffectError for a call that cannot have its effect. It satisfies the public
    `evals_cli.Effect` protocol."""

    arguments: tuple[str, ...]  # the effect settings naming tool parameters (path, content, directory, key, fields)
    required: tuple[str, ...]  # those the tool must declare
    mutating: bool
    records: bool  # acts on a records collection (the mapping's value names it)
    summary: str
    apply: Callable[[Any, EffectSpec, dict[str, Any]], tuple[str, Any]]


EFFECTS: Registry[Effect] = Registry("effect", "evals_cli.environment.effects")
"""Every effect kind, by name (`files.read`): the built-ins register in evals_cli/environment/effects.py (a
string here, imported on the first lookup: the models layer never imports the environment), a plug-in's with
`evals_cli.environment.effects.effect`."""


DEFAULT_ARGUMENT = {"path": "path", "content": "content", "directory": "directory", "key": "id"}


def unknown_effect(name: str) -> str:
    hint = difflib.get_close_matches(name, EFFECTS.kinds(), n=1, cutoff=0.6)
    did = f"; did you mean '{hint[0]}'?" if hint else ""
    return f"unknown effect '{name}'{did} (effects: {', '.join(EFFECTS)})"


class EffectSpec(StrictModel):
    """What a tool does to the world. Written `effect: files.read`, or as a mapping whose effect key names the
    collection (records) and whose other keys name the tool parameters holding the path, content, key...:
    `{records.update: orders, key: order_id, set: {status: refunded}}`."""

    op: str = Field(description="The effect: files.read|write|append|list|delete|exists, "
                                "records.get|list|search|create|update|delete.")
    collection: str | None = Field(default=None, description="The records collection it acts on.")
    path: str = Field(default="path", description="The tool parameter holding the file path.")
    content: str = Field(default="content", description="The tool parameter holding the text to write or append.")
    directory: str = Field(default="directory", description="The tool parameter holding the folder to list.")
    key: str = Field(default="id", description="The tool parameter holding the record id.")
    fields: list[str] | dict[str, str] | None = Field(
        default=None, description="Tool parameters copied into the record (create/update) or matched against it "
        "(search): a list, or {parameter: record field}. Default: every argument (update: none when `set` is "
        "given; the key is never copied by update).")
    set: dict[str, Any] = Field(default_factory=dict, description="Fixed field values written by create/update.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"op": data}
        if not isinstance(data, dict | EffectSpec):
            raise ValueError(f"give an effect name (effect: files.read) or a mapping naming one (effect: "
                             f"{{records.get: orders, key: order_id}}), not {type(data).__name__} {data!r:.60}")
        if isinstance(data, dict) and "op" not in data:
            named = [k for k in data if isinstance(k, str) and "." in k]
            if len(named) != 1:
                raise ValueError("an effect mapping needs exactly one effect key, e.g. {records.get: orders, "
                                 f"key: order_id}} (got {', '.join(map(str, data)) or 'none'})")
            data = dict(data)
            op = named[0]
            value = data.pop(op)
            data["op"] = op
            if value is not None:
                data["collection"] = value
        return data

    @field_validator("op")
    @classmethod
    def _known(cls, op: str) -> str:
        if op not in EFFECTS:
            raise ValueError(unknown_effect(op))
        return op

    @model_validator(mode="after")
    def _collection(self) -> EffectSpec:
        info = EFFECTS[self.op].impl
        if info.records and not self.collection:
            raise ValueError(f"{self.op} acts on a records collection: write {{{self.op}: COLLECTION, key: ...}}")
        if not info.records and self.collection is not None:
            raise ValueError(f"{self.op} acts on files; it takes no collection")
        if self.set and self.op not in ("records.create", "records.update"):
            raise ValueError(f"'set' applies to records.create and records.update, not {self.op}")
        if "id" in self.set:  # the record would be filed under one id and hold another
            raise ValueError("'set' cannot set the record's id: the id comes from the call's key argument")
        problem = json_problem(self.set, "set")
        if problem is not None:
            raise ValueError(problem)
        return self

    @property
    def info(self) -> Effect:
        return EFFECTS[self.op].impl

    def parameters_read(self) -> dict[str, str]:
        """Effect setting -> tool parameter, for the settings this effect reads (`fields` expanded)."""
        out = {name: getattr(self, name) for name in self.info.arguments if name != "fields"}
        if "fields" in self.info.arguments and self.fields is not None:
            names = self.fields if isinstance(self.fields, list) else list(self.fields)
            out.update({f"fields.{n}": n for n in names})
        return out

    def label(self) -> str:
        """How `evals list` shows it."""
        head = f"{self.op}: {self.collection}" if self.collection else self.op
        extras = [f"{k}={v}" for k, v in self.parameters_read().items()
                  if not k.startswith("fields.") and v != DEFAULT_ARGUMENT.get(k)]
        if self.set:
            extras.append("set " + ", ".join(f"{k}={v}" for k, v in self.set.items()))
        return head + (f" ({'; '.join(extras)})" if extras else "")


RecordObject = dict[str, Any]

Actor = Literal["setup", "agent", "user"]
"""Who changed the world: `setup` (the environment's setup step, and an MCP server writing into its workspace
while it starts: the starting state), `agent` (its tool calls), `user` (a user who acts, with dual control)."""

DEFAULT_SETUP_TIMEOUT = 60.0


class SetupSpec(StrictModel):
    """What prepares a sample's world before the agent starts, in the episode's workspace: commands (each a list
    of strings: the program and its arguments, run without a shell) or a Python function `python: file.py:fn`
    given the world (`world.files`, `world.records`) to change. Written as a list of commands, or a mapping."""

    commands: list[list[str]] | None = Field(
        default=None, description="Commands run one after another in the episode's folder (each [program, arg...], "
        "no shell); a command that exits non-zero or runs past `timeout` errors the sample with its output.")
    python: str | None = Field(default=None, description="file.py:function (relative to the suite) or "
                                                         "module:function, called with the world before the agent "
                                                         "starts, under the custom-code guard.")
    timeout: float = Field(default=DEFAULT_SETUP_TIMEOUT, gt=0, description="Seconds each command may take.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, list):
            return {"commands": data}
        return data

    @field_validator("commands")
    @classmethod
    def _argv(cls, commands: list[list[str]] | None) -> list[list[str]] | None:
        for i, command in enumerate(commands or []):
            if not command or not all(isinstance(a, str) and a for a in command):
                raise ValueError(f"commands[{i}]: give the program and its arguments as a list of non-empty strings, "
                                 "e.g. [git, init]")
        if commands is not None and not commands:
            raise ValueError("an empty list of commands sets nothing up; give at least one, or leave setup out")
        return commands

    @field_validator("python")
    @classmethod
    def _function(cls, ref: str | None) -> str | None:
        if ref is not None:
            module, sep, name = ref.rpartition(":")
            if not sep or not module or not name.isidentifier():
                raise ValueError(f"expected file.py:function (or module:function), got {ref!r}")
        return ref

    @model_validator(mode="after")
    def _one(self) -> SetupSpec:
        if (self.commands is None) == (self.python is None):
            raise ValueError("give commands (a list of [program, args...]) or python: file.py:function, not both "
                             "and not neither")
        return self


class EnvironmentSpec(StrictModel):
    """A small world the stateful tools act on, copied afresh for every sample and repeat."""

    files: dict[str, str | None] = Field(
        default_factory=dict, description="Path -> text. Nothing touches the disk. In a row, null removes the "
        "suite's file for that row.")
    records: dict[str, list[RecordObject] | None] = Field(
        default_factory=dict, description="Collection -> objects, each with an `id`. In a row, an object replaces "
        "the suite's object with the same id; null removes the suite's collection.")
    replace: bool = Field(default=False, description="In a row: use this environment alone instead of extending "
                                                     "the suite's.")
    setup: SetupSpec | None = Field(
        default=None, description="Prepares the world before the agent starts (commands in the episode's folder, or "
        "python: file.py:fn given the world); its changes are the starting state, not the agent's. In a row: "
        "replaces the suite's setup.")

    @field_validator("files")
    @classmethod
    def _paths(cls, files: dict[str, str | None]) -> dict[str, str | None]:
        seen: dict[str, str] = {}
        for path in files:
            norm = normal_path(path)
            if not norm:
                raise ValueError(f"'{path}' is not a file path")
            if outside_root(norm):
                raise ValueError(f"'{path}' climbs out of the environment; give a path inside it")
            if norm in seen:
                raise ValueError(f"'{path}' and '{seen[norm]}' are the same file; give it once")
            seen[norm] = path
        return files

    @field_validator("records")
    @classmethod
    def _ids(cls, records: dict[str, list[RecordObject] | None]) -> dict[str, list[RecordObject] | None]:
        for name, objects in records.items():
            if not name or "/" in name:
                raise ValueError(f"collection name '{name}': give a non-empty name without '/'")
            ids: set[str] = set()
            for i, obj in enumerate(objects or []):
                if "id" not in obj:
                    raise ValueError(f"{name}[{i}]: a record needs an 'id' field")
                if isinstance(obj["id"], dict | list) or obj["id"] is None:
                    raise ValueError(f"{name}[{i}].id: give a string or a number")
                key = record_key(obj["id"])
                if key in ids:
                    raise ValueError(f"{name}[{i}]: id '{key}' appears twice in the collection")
                ids.add(key)
                problem = json_problem(obj, f"{name}[{i}]")
                if problem is not None:
                    raise ValueError(problem)
        return records

    def merged(self, row: EnvironmentSpec | None) -> EnvironmentSpec:
        """This (suite) environment with a row's on top: files by path (row wins, null removes), records by
        collection and id (a row object replaces the suite's of the same id, new ids are added after, null
        removes the collection); `replace: true` in the row drops the suite's."""
        if row is None:
            return self.resolved()
        if row.replace:
            return row.resolved()
        setup = row.setup if row.setup is not None else self.setup
        files = {normal_path(p): t for p, t in self.files.items()}
        files.update({normal_path(p): t for p, t in row.files.items()})
        records: dict[str, list[RecordObject] | None] = {k: list(v or []) for k, v in self.records.items()}
        for name, objects in row.records.items():
            if objects is None:
                records[name] = None
                continue
            base = {record_key(o["id"]): o for o in records.get(name) or []}
            base.update({record_key(o["id"]): o for o in objects})
            records[name] = list(base.values())
        # both sides were validated when loaded; validating the union again cost seconds per sample for a world
        # of 100,000 files (a file/folder clash between them is reported by `evals validate`)
        return EnvironmentSpec.model_construct(files=files, records=records, replace=False, setup=setup).resolved()

    def resolved(self) -> EnvironmentSpec:
        """Without the removals (null files and collections) and with normal paths: the world as declared."""
        files: dict[str, str | None] = {normal_path(p): t for p, t in self.files.items() if t is not None}
        records: dict[str, list[RecordObject] | None] = {k: v for k, v in self.records.items() if v is not None}
        return EnvironmentSpec.model_construct(files=files, records=records, replace=False,  # validated parts
                                               setup=self.setup)


# ---- the expected final state ---------------------------------------------------------------------------------

MATCHER_KEYS = frozenset(ArgMatch.model_fields) | {"json_subset"}


class FileExpectation(ArgMatch):
    """How a file's final text is compared: a string is its exact text; a mapping is a matcher of tool_args
    (exact, regex, contains, one_of, case_insensitive) or `json_subset` (the text is JSON containing this)."""

    # strict: `case_insensitive: "yes"` or `tolerance: "0.5"` was read as true and 0.5, and a typo'd expectation
    # checked something else than was written
    model_config = ConfigDict(strict=True)

    json_subset: Any = Field(default=None, description="The file holds JSON that contains this (objects: these "
                                                       "keys with these values; lists: these elements).")

    @model_validator(mode="before")
    @classmethod
    def _text(cls, data: Any) -> Any:
        return {"exact": data} if isinstance(data, str) else data

    @field_validator("json_subset")
    @classmethod
    def _container(cls, value: Any) -> Any:
        """An object or a list: `json_subset: "x"` compared the whole document with "x", so it read as a check of
        the file's keys while checking something else."""
        if value is not None and not isinstance(value, dict | list):
            raise ValueError(f"give an object (keys the file's JSON must hold) or a list (elements it must "
                             f"contain), not {type(value).__name__} {value!r:.60}; to compare the text, use "
                             "exact, contains or regex")
        return value

    @model_validator(mode="after")
    def _one(self) -> FileExpectation:
        if self.json_subset is not None and self.comparison is not None:
            raise ValueError(f"give json_subset or {self.comparison}, not both")
        if self.json_subset is None and self.comparison is None:
            raise ValueError("say what the file must hold: its text, or one of exact, regex, contains, one_of, "
                             "json_subset")
        return self


class ExpectedState(StrictModel):
    """What the world must look like once the agent is done (read by final_state and stop_behavior)."""

    # strict: `no_other_changes: "yes"` (or 1) was read as true; a wrongly typed value is a config error instead
    model_config = ConfigDict(strict=True)

    files: dict[str, FileExpectation] = Field(default_factory=dict, description="Path -> what its text must be "
                                                                                "(the file must exist).")
    records: dict[str, dict[str, dict[str, Any]]] = Field(
        default_factory=dict, description="Collection -> id -> field -> value or matcher; unnamed fields are not "
        "checked (the record must exist).")
    unchanged: list[str] = Field(default_factory=list, description="Paths and collection/id records that must be "
                                                                   "as declared (a collection name: all its records).")
    deleted: list[str] = Field(default_factory=list, description="Paths and collection/id records that must be gone.")
    exists: list[str] = Field(default_factory=list, description="Paths and collection/id records that must exist.")
    no_other_changes: bool = Field(default=False, description="Nothing may differ from the declared world except "
                                                              "what files/records/deleted expect.")

    @field_validator("records", mode="before")
    @classmethod
    def _ids_as_text(cls, records: Any) -> Any:
        """`orders: {12345: {...}}` in YAML has an integer key; ids compare as text everywhere else (record_key),
        so the expectation must not be refused for it."""
        if not isinstance(records, dict):
            return records
        return {name: {record_key(k) if isinstance(k, int | float) else k: v for k, v in by_id.items()}
                if isinstance(by_id, dict) else by_id for name, by_id in records.items()}

    @model_validator(mode="after")
    def _json_and_paths(self) -> ExpectedState:
        problem = json_problem(self.records, "records")
        for path, want in self.files.items():
            problem = problem or json_problem(want.model_dump(exclude_unset=True), f"files.{path}")
        if problem is not None:
            raise ValueError(problem)
        for field, target in self.targets():
            if not target:
                raise ValueError(f"{field}: an empty path names nothing; give a file, folder, collection or record")
            if outside_root(target):
                raise ValueError(f"{field}: '{target}' climbs out of the environment; give a path inside it")
        return self

    @field_validator("records")
    @classmethod
    def _matchers(cls, records: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
        for name, by_id in records.items():
            if not by_id:  # checked nothing, and alone it made an expected_state every world met
                raise ValueError(f"{name}: name the records to check ({name}: {{ID: {{field: value}}}}), or use "
                                 f"unchanged/deleted/exists for the whole collection")
            for rid, fields in by_id.items():
                for field_name, value in fields.items():
                    _mixed_matcher(value, f"{name}.{rid}.{field_name}")
                    matcher = field_matcher(value)
                    if matcher is not None:
                        try:
                            ArgMatch.model_validate(matcher, strict=True)
                        except ValidationError as exc:
                            first = exc.errors()[0]
                            where = ".".join(str(part) for part in (name, rid, field_name, *first["loc"]))
                            raise ValueError(f"{where}: {first['msg']}") from None
                        except ValueError as exc:
                            raise ValueError(f"{name}.{rid}.{field_name}: {exc}") from None
        return records

    @model_validator(mode="after")
    def _something(self) -> ExpectedState:
        if not (self.files or self.records or self.unchanged or self.deleted or self.exists or self.no_other_changes):
            raise ValueError("an empty expected_state checks nothing: give files, records, unchanged, deleted, "
                             "exists or no_other_changes")
        return self

    def targets(self) -> list[tuple[str, str]]:
        """(field, target) of every path or collection/id this expectation names, for `evals validate`."""
        out = [("files", normal_path(p)) for p in self.files]
        out += [("records", f"{c}/{record_key(i)}") for c, ids in self.records.items() for i in ids]
        for name in ("unchanged", "deleted", "exists"):
            out += [(name, normal_target(t)) for t in getattr(self, name)]
        return out


def normal_target(target: str) -> str:
    """A path or `collection/id` as the world spells it (paths normalised; a record target kept as written)."""
    return normal_path(target)


def _mixed_matcher(value: Any, where: str) -> None:
    """A mapping holding matcher keys beside other keys: read as a plain object, `{tolerance: 0.5, value: 10}`
    compared the field with that object and the tolerance did nothing. Refused; an object that really holds
    such keys is written under exact:."""
    if not isinstance(value, dict):
        return
    matcher = [k for k in value if k in ArgMatch.model_fields]
    other = [k for k in value if k not in ArgMatch.model_fields]
    if matcher and other:
        raise ValueError(f"{where}: {', '.join(matcher)} beside {', '.join(map(str, other[:3]))}, which is not a "
                         f"matcher key (a matcher takes {', '.join(ArgMatch.model_fields)}); give the expected "
                         f"value under exact: ({{{matcher[0]}: ..., exact: ...}}), or write an object that holds "
                         "these keys under exact:")


def field_matcher(value: Any) -> dict[str, Any] | None:
    """A record field's expectation as a matcher mapping, or None when it is a plain value (compared exactly).
    A mapping counts as a matcher only when all its keys are matcher keys, so a field holding an object whose
    keys are ordinary names is compared as that object."""
    if isinstance(value, dict) and value and all(k in ArgMatch.model_fields for k in value):
        return value
    return None


ChangeKind = Literal["file", "record"]
