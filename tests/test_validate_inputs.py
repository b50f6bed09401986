"""What `evals validate` once let through (issue 12, item 11): tool names endpoints reject, a broken JSON Schema
under `parameters`, message roles no endpoint knows, an unterminated `${VAR`, and long values printed whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals_cli.datasets.reader import check_dataset
from evals_cli.errors import ConfigError
from evals_cli.models.tools import ToolSpec, schema_problem, tool_name_problem
from evals_cli.suite.envvars import expand
from evals_cli.suite.loader import load_suite
from tests.bad_inputs import OK, SUITE
from tests.helpers import run_cli


@pytest.mark.parametrize("name,fragment", [
    ("read file", "characters endpoints reject (' ')"),
    ("x" * 65, "65 characters; endpoints accept at most 64"),
    ("café", "('é')"),
    ("a.b", "('.')"),
    ("", "cannot be empty"),
])
def test_tool_names_endpoints_reject(name: str, fragment: str) -> None:
    problem = tool_name_problem(name)
    assert problem is not None and fragment in problem


@pytest.mark.parametrize("name", ["read_file", "get-forecast", "A1", "x" * 64])
def test_tool_names_endpoints_accept(name: str) -> None:
    assert tool_name_problem(name) is None


def _suite(tmp_path: Path, text: str, rows: str = OK) -> Path:
    (tmp_path / "data.jsonl").write_text(rows, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_suite_tool_name_is_reported_at_its_line(tmp_path: Path) -> None:
    path = _suite(tmp_path, SUITE.replace("  read_file:", "  read file:"))
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    assert any(p.startswith(f"{path}:9: tools.read file: tool name 'read file'") for p in caught.value.problems)


@pytest.mark.parametrize("parameters,fragment", [
    ({"type": "strin"}, "'strin' is not a JSON Schema type; did you mean 'string'?"),
    ({"type": "string"}, "are an object schema"),
    ({"type": "object", "properties": {"n": {"type": "integr"}}}, "parameters.properties.n.type: not a valid"),
    ({"type": "object", "required": "n"}, "parameters.required: not a valid JSON Schema"),
    ({"city": {"type": "strin"}}, "parameters.properties.city.type: not a valid JSON Schema"),
    ({"type": "object", "properties": {"code": {"type": "string", "pattern": "(["}}},
     "parameters.properties.code.pattern: not a valid JSON Schema"),
    ({"type": "object", "properties": {"at": {"$ref": "#/$defs/Place"}}},
     "parameters.properties.at.$ref: '#/$defs/Place' names no part of the schema"),
    ({"type": "object", "properties": {"at": {"$ref": "https://example.com/place.json"}}},
     "schemas elsewhere are never fetched"),
])
def test_invalid_json_schema_under_parameters(parameters: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match="parameters") as caught:
        ToolSpec(parameters=parameters, returns="x")
    assert fragment in str(caught.value)


@pytest.mark.parametrize("parameters", [
    {"type": "Kind of record", "q": "Query"},
    {"path": "File path"},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]},
    {"type": "object", "properties": {"at": {"$ref": "#/$defs/Place"}}, "$defs": {"Place": {"type": "string"}}},
])
def test_valid_parameters_pass(parameters: dict) -> None:
    ToolSpec(parameters=parameters, returns="x")
    assert schema_problem({"type": "object"}) is None


def test_invalid_schema_through_the_cli(tmp_path: Path) -> None:
    path = _suite(tmp_path, SUITE.replace('parameters: {path: "File path"}', "parameters: {type: strin}"))
    for command in ("validate", "run"):
        result = run_cli(command, str(path))
        assert result.returncode == 2
        assert "suite.yaml:9: tools.read_file" in result.stderr and "'strin'" in result.stderr


def test_message_roles(tmp_path: Path) -> None:
    rows = "".join(json.dumps(r) + "\n" for r in [
        {"id": "a", "input": "x", "messages": [{"role": "bot", "content": "hi"}]},
        {"id": "b", "input": "x", "messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"},
                                               {"role": "user", "content": "u"}]},
    ])
    path = tmp_path / "data.jsonl"
    path.write_text(rows, encoding="utf-8")
    count, problems = check_dataset(path)
    assert count == 1 and len(problems) == 1
    assert "data.jsonl:1: sample 'a': messages.0.role" in problems[0] and "'assistant' or 'tool'" in problems[0]


def test_a_row_tool_name_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "x", "tools": {"bad name": {"returns": "x"}}}) + "\n")
    _, problems = check_dataset(path)
    assert len(problems) == 1 and "tool name 'bad name'" in problems[0]


@pytest.mark.parametrize("value", ["${MODEL", "a ${1X} b", "${MODEL:-m", "x ${A:-b} ${"])
def test_unterminated_variable_is_a_problem(value: str) -> None:
    problems: list = []
    assert expand({"model": value}, (), problems, env={"A": "a"}) == {"model": value}
    assert len(problems) == 1 and problems[0][0] == ("model",) and "is not a variable reference" in problems[0][1]


@pytest.mark.parametrize("value,expanded", [("$${MODEL", "${MODEL"), ("${A}", "a"), ("${B:-x}", "x"), ("$ {x", "$ {x")])
def test_well_formed_values_still_expand(value: str, expanded: str) -> None:
    problems: list = []
    assert expand(value, (), problems, env={"A": "a"}) == expanded and problems == []


def test_unterminated_variable_through_the_cli(tmp_path: Path) -> None:
    path = _suite(tmp_path, SUITE.replace("  model: m", "  model: ${MODEL"))
    result = run_cli("validate", str(path))
    assert result.returncode == 2 and "suite.yaml:7: target.model: '${MODEL' is not a variable reference" in result.stderr


def test_a_2mb_key_is_cut_in_messages(tmp_path: Path) -> None:
    path = _suite(tmp_path, SUITE + "k" * 2_000_000 + ": 1\n")
    result = run_cli("validate", str(path))
    assert result.returncode == 2
    assert len(result.stderr) < 2000, len(result.stderr)
