"""The world one sample run acts on: a private copy of the declared files and records, changed only by effects.

A copy per (sample, repeat) is what makes state isolated: concurrent samples and repeats each build their own
toolbox, hence their own World, so no run can see another's writes.

A world is rebuilt by replaying effects: the stored after of a whole one, else the edit a cut one keeps in memory
(environment/excerpts.py decides what is stored); a cut effect read back from a results file has no edit, and
cannot be replayed (`NotStored`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any

from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.trajectory import EffectRecord, StateChange, ToolCall
from evals_cli.models.world_values import record_key


class World:
    """Files (path -> text) and collections (name -> id -> object, in declared order)."""

    def __init__(self, spec: EnvironmentSpec | None = None) -> None:
        declared = (spec or EnvironmentSpec()).resolved()
        self.files: dict[str, str] = dict(declared.files)  # type: ignore[arg-type]  # resolved: no None left
        self.records: dict[str, dict[str, dict[str, Any]]] = {
            name: {record_key(o["id"]): copy.deepcopy(o) for o in objects or []}
            for name, objects in declared.records.items()
        }

    def copy(self) -> World:
        twin = World()
        twin.files = dict(self.files)
        twin.records = copy.deepcopy(self.records)
        return twin

    def get(self, target: str, kind: str) -> Any:
        """The current value of a file path or a `collection/id` record (None: absent)."""
        if kind == "file":
            return self.files.get(target)
        name, _, rid = target.partition("/")
        return self.records.get(name, {}).get(rid)

    def put(self, target: str, kind: str, value: Any) -> None:
        """Set a target to a value, None deleting it (used to replay recorded effects)."""
        if kind == "file":
            if value is None:
                self.files.pop(target, None)
            else:
                self.files[target] = value
            return
        name, _, rid = target.partition("/")
        collection = self.records.setdefault(name, {})
        if value is None:
            collection.pop(rid, None)
        else:
            collection[rid] = copy.deepcopy(value)

    def diff(self, initial: World) -> list[StateChange]:
        """Every difference from `initial`: files in path order, then records by collection and id."""
        changes: list[StateChange] = []
        for path in sorted(set(initial.files) | set(self.files)):
            before, after = initial.files.get(path), self.files.get(path)
            if before != after:
                changes.append(StateChange(kind="file", target=path, before=before, after=after))
        for name in sorted(set(initial.records) | set(self.records)):
            old, new = initial.records.get(name, {}), self.records.get(name, {})
            for rid in [*old, *(r for r in new if r not in old)]:
                if not _same(old.get(rid), new.get(rid)):
                    changes.append(StateChange(kind="record", target=f"{name}/{rid}",
                                               before=copy.deepcopy(old.get(rid)), after=copy.deepcopy(new.get(rid))))
        return changes

    def apply(self, changes: Iterable[StateChange]) -> World:
        """This world with recorded changes applied (the final state, from the declared one and the diff)."""
        out = self.copy()
        for change in changes:
            if change.cut is not None:  # read back from a results file: an excerpt is not the final value
                raise NotStored(f"{change.target}: the change was stored cut (its values are excerpts), so the final "
                                "world cannot be rebuilt from the results file")
            out.put(change.target, change.kind, change.after)
        return out

    def replay(self, call: ToolCall) -> bool:
        """Apply one recorded call's effect; True when it changed the world."""
        effect = call.effect
        if effect is None or not effect.changed:
            return False
        kind = "record" if effect.op.startswith("records.") else "file"
        self.put(effect.target, kind, replayed_after(effect, self.get(effect.target, kind)))
        return True


def _same(a: Any, b: Any) -> bool:
    """JSON equality (true is not 1), key order aside: an update that sets a field to its own value is no change."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


class NotStored(ValueError):
    """A cut effect read back from a results file: the world after it cannot be rebuilt from the excerpt."""


def replayed_after(effect: EffectRecord, current: Any) -> Any:
    """The value of the effect's target after the call, from its value before (`current`): the stored after
    when it is whole, else the edit kept in memory."""
    if effect.cut is None:
        return effect.after
    edit = effect.replay_edit
    if effect.cut.after_chars is None:  # deleted
        return None
    if edit is None:
        raise NotStored(f"{effect.op} {effect.target}: the effect was stored cut (its values are excerpts), so the "
                        "world after it cannot be rebuilt from the results file")
    if isinstance(edit, tuple):
        p, s, middle = edit
        text = current if isinstance(current, str) else ""
        return text[:p] + middle + text[len(text) - s:]
    return edit
