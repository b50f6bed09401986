"""A session's `parameters_schema` in the multi-agent plan's form (a map of parameter names) is checked by its
keys, a JSON Schema as before, anything else is an error naming the agent and tool; the plan's `analyses[]`
field loads and is kept, not scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.analyze import analyze_command
from evals_cli.errors import ConfigError
from evals_cli.sessions.models import AgentSession, parameters_json_schema
from evals_cli.sessions.reader import check_sessions, iter_sessions
from evals_cli.sessions.tool_validation import validate_session

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"

NAME_MAP = {"order_id": {"type": "string", "required": True}, "amount": {"type": "number", "required": True},
            "reason": {"type": "string", "required": False}}


def clean() -> dict[str, Any]:
    return json.loads(DATASET.read_text().splitlines()[0])


def with_refund_schema(schema: Any) -> dict[str, Any]:
    session = clean()
    executor = session["agents"][1]
    [refund] = [t for t in executor["tools_available"] if t["name"] == "issue_refund"]
    refund["parameters_schema"] = schema
    return session


def refund_call(session: dict[str, Any]) -> dict[str, Any]:
    steps = session["turns"][0]["agent_interactions"][1]["agent_steps"]
    return next(s["tool_call"] for s in steps if s.get("tool_call", {}).get("tool_name") == "issue_refund")


def kinds(session: dict[str, Any]) -> list[str]:
    return [v.kind for v in validate_session(AgentSession.model_validate(session)).violations]


def test_a_name_map_with_a_clean_call_has_no_violation() -> None:
    assert kinds(with_refund_schema(NAME_MAP)) == []


def test_an_invented_parameter_is_hallucinated_under_a_name_map() -> None:
    session = with_refund_schema(NAME_MAP)
    refund_call(session)["parameters"]["priority"] = "high"
    [violation] = validate_session(AgentSession.model_validate(session)).violations
    assert (violation.kind, violation.severity, violation.tool) == ("HALLUCINATED_PARAMETER", "MEDIUM", "issue_refund")
    assert "priority" in violation.detail


def test_a_missing_expected_parameter_is_reported_and_an_optional_one_is_not() -> None:
    session = with_refund_schema(NAME_MAP)
    parameters = refund_call(session)["parameters"]
    parameters.pop("amount")
    parameters.pop("reason", None)
    assert kinds(session) == ["MISSING_REQUIRED"]


def test_a_name_map_checks_types_too() -> None:
    session = with_refund_schema(NAME_MAP)
    refund_call(session)["parameters"]["amount"] = "lots"
    assert kinds(session) == ["TYPE_MISMATCH"]


def test_names_with_descriptions_are_required_strings_like_a_suites_parameters() -> None:
    assert parameters_json_schema({"order_id": "The order"}) == {
        "type": "object", "properties": {"order_id": {"type": "string", "description": "The order"}},
        "required": ["order_id"]}


def test_a_parameter_named_type_or_properties_is_still_a_name_map() -> None:
    schema = parameters_json_schema({"type": {"type": "string"}, "properties": {"type": "object"}})
    assert schema["required"] == ["type", "properties"] and set(schema["properties"]) == {"type", "properties"}


def test_a_json_schema_is_kept_as_it_is() -> None:
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    assert parameters_json_schema(schema) is schema
    session = with_refund_schema(schema)
    assert kinds(session) == ["HALLUCINATED_PARAMETER", "HALLUCINATED_PARAMETER"]  # amount, reason


@pytest.mark.parametrize(("schema", "said"), [
    ({"order_id": 5}, "parameters_schema.order_id is int"),
    ({"order_id": {"type": "string", "required": "yes"}}, "parameters_schema.order_id.required is 'yes'"),
    ({"required": ["order_id"]}, "parameters_schema.required is list"),
    ({"type": "string"}, "parameters of a tool are an object"),
    # the calls are checked against the schema by the engine: one it cannot read is refused when loaded
    ({"type": "object", "properties": {"order_id": {"type": "strin"}}},
     "parameters_schema.properties.order_id.type: not a valid JSON Schema"),
    ({"order_id": {"type": "str"}}, "parameters_schema.order_id.type: not a valid JSON Schema"),
    ({"type": "object", "properties": {"order_id": {"$ref": "#/$defs/Id"}}},
     "parameters_schema.properties.order_id.$ref: '#/$defs/Id' names no part of the schema"),
])
def test_any_other_form_is_an_error_naming_agent_and_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         schema: Any, said: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(with_refund_schema(schema)) + "\n", encoding="utf-8")
    _, problems = check_sessions(path)
    message = "\n".join(problems)
    assert "agent 'executor', tool 'issue_refund'" in message and said in message
    assert analyze_command(path, tmp_path / "out") == 2
    assert "agent 'executor', tool 'issue_refund'" in capsys.readouterr().err


def test_the_plans_analyses_field_loads_and_is_kept(tmp_path: Path) -> None:
    analyses = [{"analysis_type": "tool_validation", "result": {"hallucinated_parameters": ["priority"]}}]
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(dict(clean(), analyses=analyses)) + "\n", encoding="utf-8")
    [session] = list(iter_sessions(path))
    assert session.analyses == analyses
    assert analyze_command(path, tmp_path / "out") == 0


def test_a_misspelt_top_level_key_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(dict(clean(), analysis=[])) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        list(iter_sessions(path))
