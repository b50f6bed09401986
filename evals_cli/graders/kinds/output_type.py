"""`kind: output_type`: the answer has the shape a program reading it needs: JSON (promptfoo's `is-json`), JSON
matching a JSON Schema (`is-json` with a schema), a number, or an integer.

The answer is the extracted submission (the final answer by default), its surrounding whitespace aside, read
whole: prose around the JSON, or a Markdown fence, fails `json`, as `JSON.parse` fails it in promptfoo (pick the
part to check with an extractor: `pattern` with a fence's regex). JSON is strict JSON (no NaN or Infinity). A
number is decimal text (`-2.5`, `1e3`; no thousands separators, units or currency), an integer is digits with an
optional sign. The schema is checked as written (extra keys are allowed unless it says otherwise), under the
draft its `$schema` names (2020-12 by default), with the engine the tool_schema grader uses."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, model_validator

from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.json_schema import schema_problem
from evals_cli.json_values import SchemaUnusable, check_value
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import RECORDED_CUT_OFF, Grade, ending_without_answer

OutputType = Literal["json", "number", "integer", "schema"]
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_SHOWN_PROBLEMS = 3


class OutputTypeSpec(GraderBase):
    """The answer parses as JSON, matches a JSON Schema, or is a number or an integer; binary."""

    kind: Literal["output_type"] = "output_type"
    type: OutputType | None = Field(
        default=None, description="json: the answer is JSON; schema: JSON that matches `schema`; number: a decimal "
        "number (-2.5, 1e3); integer: digits with an optional sign. Default: schema when `schema` is given, else "
        "json.")
    json_schema: dict[str, Any] | str | None = Field(
        default=None, alias="schema", description="The JSON Schema the answer must match (type: schema): inline, "
        "or the path of a .json or .yaml file relative to the suite.")

    @model_validator(mode="after")
    def _schema_with_its_type(self) -> OutputTypeSpec:
        if self.json_schema is not None and self.type not in (None, "schema"):
            raise ValueError(f"schema is read only with type: schema (this grader checks type: {self.type}); drop "
                             "schema, or set type: schema")
        if self.type == "schema" and self.json_schema is None:
            raise ValueError("type: schema needs schema: the JSON Schema the answer must match (inline, or a file "
                             "relative to the suite)")
        return self

    @property
    def checks(self) -> OutputType:
        """The type checked, the default filled in."""
        return self.type or ("schema" if self.json_schema is not None else "json")


def load_schema(given: dict[str, Any] | str, base_dir: Path) -> dict[str, Any]:
    """The schema inline, or read from its file (relative to the suite); ValueError naming `schema` when it cannot
    be read or is not a JSON Schema."""
    if isinstance(given, str):
        path = Path(given).expanduser()
        path = path if path.is_absolute() else base_dir / path
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"schema: file {given!r} not found (relative to the suite's folder, {base_dir})") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"schema: cannot read {given!r} ({type(exc).__name__})") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"schema: {given!r} is neither JSON nor YAML ({exc})".replace("\n", " ")) from None
        if not isinstance(loaded, dict):
            raise ValueError(f"schema: {given!r} holds {type(loaded).__name__}, not a JSON Schema object")
        given = loaded
    problem = schema_problem(given, "schema")
    if problem is not None:
        raise ValueError(problem)
    return given


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> tuple[Any, str | None]:
    """(value, None) when `text` is one JSON document, else (None, why not)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant), None
    except ValueError as exc:  # json.JSONDecodeError is one
        return None, str(exc)


def type_problem(answer: str, wanted: OutputType, schema: dict[str, Any] | None) -> str | None:
    """Why `answer` (stripped) is not of the type `wanted`, None when it is. SchemaUnusable: the schema, not the
    answer, is at fault."""
    if wanted == "number":
        return None if _NUMBER.fullmatch(answer) and math.isfinite(float(answer)) else "not a number"
    if wanted == "integer":
        return None if _INTEGER.fullmatch(answer) else "not an integer"
    value, error = parse_json(answer)
    if error is not None:
        return f"not JSON ({error})"
    if wanted == "schema" and schema is not None:
        problems = [detail for _, detail in check_value(value, schema, strict=False)]
        if problems:
            more = f" and {len(problems) - _SHOWN_PROBLEMS} more" if len(problems) > _SHOWN_PROBLEMS else ""
            return f"JSON that does not match the schema: {'; '.join(problems[:_SHOWN_PROBLEMS])}{more}"
    return None


@GRADERS.register("output_type", spec=OutputTypeSpec)
class OutputTypeGrader(Grader[OutputTypeSpec]):
    """1 when the answer is of the type asked, 0 when it is not (binary)."""

    per_turn = True

    def __init__(self, name: str, spec: OutputTypeSpec, ctx: GraderContext) -> None:
        super().__init__(name, spec, ctx)
        given = spec.json_schema
        self.schema = load_schema(given, ctx.base_dir) if given is not None else None

    async def grade(self, ctx: GradeContext) -> Grade:
        wanted = self.spec.checks
        submission = await ctx.asubmission(self.spec.extractor, self.spec.extractor_config)
        cut = ending_without_answer(self.spec.extractor, ctx.view.stop_reason, RECORDED_CUT_OFF)
        if cut is not None:
            return Grade(score=0.0, rationale=f"no answer: {cut}", submission=submission)
        answer = submission.strip()
        if not answer:
            return Grade(score=0.0, rationale=f"the answer is empty: not {_named(wanted)}", submission=submission)
        try:
            problem = type_problem(answer, wanted, self.schema)
        except SchemaUnusable as exc:
            return Grade.failed(f"schema: {exc}")
        if problem is not None:
            return Grade(score=0.0, rationale=f"the answer is {problem}", submission=submission)
        return Grade(score=1.0, rationale=f"the answer is {_named(wanted)}", submission=submission)


def _named(wanted: OutputType) -> str:
    return {"json": "JSON", "number": "a number", "integer": "an integer",
            "schema": "JSON matching the schema"}[wanted]
