"""What a stateful tool does to the world: the `Effect` protocol (public: `evals_cli.Effect`), the `EFFECTS`
registry of effect kinds, and `EffectSpec`, a tool's `effect:` as the suite writes it.

Apart from the world's declaration (environment.py) because a tool's spec names its effect without the world
being declared at all (a suite's `tools:`), and an effect kind a plug-in adds registers here.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.world_values import json_problem
from evals_cli.registry import Registry


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
