"""`kind: output_type` (issue 44, item 1): the final answer is JSON, JSON matching a JSON Schema (inline or a file
relative to the suite), a number or an integer, as promptfoo's `is-json` reads it: the whole answer (whitespace
aside), so a fenced block or prose around the JSON is not JSON. Per sample and per turn.

End to end through `evals run` / `evals validate` against the scripted loopback server (the real openai client);
unit tests pin the type checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.graders.kinds.output_type import type_problem
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
          "required": ["city"]}
ANSWERS = {"object": '{"city": "Paris", "days": 3, "note": "extra keys are allowed"}',
           "fenced": '```json\n{"city": "Paris"}\n```',
           "wrong-type": '{"city": "Paris", "days": "three"}',
           "integer": " 42\n", "decimal": "-2.5e3", "words": "forty-two", "nan": "NaN", "empty": ""}
GRADERS = {"json": {"kind": "output_type"}, "inline": {"kind": "output_type", "schema": SCHEMA},
           "file": {"kind": "output_type", "type": "schema", "schema": "schemas/trip.yaml"},
           "number": {"kind": "output_type", "type": "number"}, "integer": {"kind": "output_type", "type": "integer"}}
# what each grader says of each answer (1: of the type, 0: not)
EXPECTED = {"object": (1, 1, 1, 0, 0), "fenced": (0, 0, 0, 0, 0), "wrong-type": (1, 0, 0, 0, 0),
            "integer": (1, 0, 0, 1, 1), "decimal": (1, 0, 0, 1, 0), "words": (0, 0, 0, 0, 0), "nan": (0, 0, 0, 0, 0),
            "empty": (0, 0, 0, 0, 0)}


def _suite(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], graders: dict[str, Any]) -> Path:
    (tmp / "schemas").mkdir(exist_ok=True)
    (tmp / "schemas" / "trip.yaml").write_text("# the same schema, as YAML\n" + json.dumps(SCHEMA), encoding="utf-8")
    return write_suite(tmp, rows, base_url=server.url, graders=graders)


def test_each_type_reads_the_whole_answer(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({f"say {key}": [text(answer)] for key, answer in ANSWERS.items()})
    rows = [{"id": key, "input": f"say {key}"} for key in ANSWERS]
    result = run_cli("run", str(_suite(tmp_path, server, rows, GRADERS)), "-o", str(tmp_path / "out"))
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    by_id = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    for key, scores in EXPECTED.items():
        got = tuple(by_id[key]["grades"][name]["score"] for name in GRADERS)
        assert got == scores, (key, got, said)
        assert all(by_id[key]["grades"][name]["applicable"] for name in GRADERS)
    wrong = by_id["wrong-type"]["grades"]["inline"]["rationale"]
    assert "does not match the schema" in wrong and "days" in wrong, wrong
    assert "not JSON" in by_id["fenced"]["grades"]["json"]["rationale"]
    assert by_id["empty"]["grades"]["json"]["rationale"] == "the answer is empty: not JSON"


def test_output_type_grades_each_turn_of_a_per_turn_row(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"first": [text('{"city": "Rome"}')], "second": [text("Rome, I think")]})
    rows = [{"id": "turns", "input": ["first", "second"], "ground_truth": ["Rome", "Rome"]}]
    result = run_cli("run", str(_suite(tmp_path, server, rows, {"json": {"kind": "output_type"}})),
                     "-o", str(tmp_path / "out"))
    [row] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert [t["score"] for t in row["grades"]["json"]["per_turn_grades"]] == [1.0, 0.0], result.stdout


@pytest.mark.parametrize(("spec", "named"), [
    ({"type": "number", "schema": SCHEMA}, "schema is read only with type: schema"),
    ({"type": "schema"}, "type: schema needs schema"),
    ({"schema": "schemas/missing.json"}, "schema: file 'schemas/missing.json' not found"),
    ({"schema": {"type": "bogus"}}, "schema.type: not a valid JSON Schema"),
    ({"type": "xml"}, "graders.out.type"),
])
def test_a_bad_type_or_schema_is_refused_naming_the_field(tmp_path: Path, server: ScriptedServer,
                                                          spec: dict[str, Any], named: str) -> None:
    suite = _suite(tmp_path, server, [{"id": "r", "input": "hi"}], {"out": {"kind": "output_type", **spec}})
    result = run_cli("validate", str(suite))
    said = result.stdout + result.stderr
    assert result.returncode == 2 and named in said and "graders.out" in said, said
    assert "Traceback" not in said and not server.requests


def test_the_schema_is_listed_under_the_name_a_suite_writes() -> None:
    listed = run_cli("list", "graders").stdout
    block = listed.split("\noutput_type — ", 1)[1].split("\n\n", 1)[0]
    assert "    schema: " in block and "json_schema" not in block, block
    schema = json.loads(run_cli("schema").stdout)
    assert '"schema": {' in json.dumps(schema) and "output_type" in json.dumps(schema)


def test_the_type_checks() -> None:
    assert type_problem("3", "number", None) is None and type_problem("+.5", "number", None) is None
    assert type_problem("1e999", "number", None) == "not a number"  # not finite
    assert type_problem("1,000", "number", None) == "not a number"
    assert type_problem("3.0", "integer", None) == "not an integer"
    assert type_problem("[1, 2]", "json", None) is None and type_problem('"text"', "json", None) is None
    assert (type_problem("Infinity", "json", None) or "").startswith("not JSON")
    problem = type_problem('{"days": 0}', "schema", SCHEMA) or ""
    assert "city is required but missing" in problem and "days" in problem, problem
