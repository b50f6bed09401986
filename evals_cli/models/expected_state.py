"""The state a sample's world must be left in (`expected_state`, read by final_state and stop_behavior): each
file's text or a matcher of it, record fields, what must be unchanged, deleted or exist, and nothing else.

Apart from the world's declaration (environment.py) because it is checked after the episode, with the matchers
of tool_args (`ArgMatch`), while the declaration is what the episode starts from.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from evals_cli.models.base import StrictModel
from evals_cli.models.grader_specs.fields import ArgMatch
from evals_cli.models.world_values import json_problem, normal_path, normal_target, outside_root, record_key

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
