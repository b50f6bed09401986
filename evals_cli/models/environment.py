"""A sample's mocked world (files and record collections) as declared, and what sets it up before the agent
starts. Pure data: the world itself and the effects' behaviour live in evals_cli/environment/. The effects tools
have on it are models/effects.py's, the state it should be left in models/expected_state.py's (each imported
from there: re-exported here, they would stand this module, and all that reads a world, a floor higher), the
spelling of its paths and ids models/world_values.py's (re-exported here, where callers import them).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.world_values import json_problem, normal_path, normal_target, outside_root, record_key

__all__ = [
    "DEFAULT_SETUP_TIMEOUT", "Actor", "ChangeKind", "EnvironmentSpec", "RecordObject", "SetupSpec", "json_problem",
    "normal_path", "normal_target", "outside_root", "record_key",
]


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


ChangeKind = Literal["file", "record"]
