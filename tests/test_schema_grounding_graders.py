"""tool_schema (calls against the offered tools) and grounding (the answer against the tool results)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from evals_cli.graders.base import GraderContext
from evals_cli.graders.grading import grade_sample
from evals_cli.graders.kinds.grounding import GroundingGrader, GroundingSpec
from evals_cli.graders.kinds.tool_schema import ToolSchemaGrader, ToolSchemaSpec
from evals_cli.json_values import SchemaUnusable, check_value, strict_schema
from evals_cli.models.sample import Message, Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory
from tests.trajectory_builders import c, run, traj

TOOLS = {
    "read_file": ToolSpec(parameters={"path": "File path"}),  # shorthand: a required string
    "search": ToolSpec(parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "score": {"type": "number"},
            "exact": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filters": {"type": "object", "properties": {"lang": {"type": "string", "enum": ["en", "fr"]}}},
            "cursor": {"type": ["string", "null"]},
            "meta": {"type": "object"},
        },
        "required": ["query"],
    }),
    "検索": ToolSpec(parameters={}),
}


def schema(**spec: Any) -> ToolSchemaGrader:
    return ToolSchemaGrader("schema", ToolSchemaSpec.model_validate(spec), GraderContext(Path(".")))


def kinds(grade: Any) -> list[str]:
    return [v["kind"] for v in grade.metadata["violations"]]


# --- tool_schema ------------------------------------------------------------------------------------------------


def test_valid_calls_pass() -> None:
    trajectory = traj(c("read_file", {"path": ".env"}),
                      c("search", {"query": "x", "limit": 3, "score": 0.5, "exact": False, "tags": ["a"],
                                   "filters": {"lang": "en"}, "cursor": None, "meta": {"anything": [1]}}),
                      c("検索", {}))
    result = run(schema(), trajectory, tools=TOOLS)
    assert result.score == 1.0
    assert result.rationale == "all 3 call(s) fit the offered tool schemas"


def test_no_calls_is_nothing_to_check() -> None:
    assert run(schema(), traj(), tools=TOOLS).rationale == "no tool calls: nothing to check"


def test_unauthorized_tool_is_high_and_reported_per_call() -> None:
    result = run(schema(), traj(c("read_file", {"path": "a"}), c("delete_all", {"force": True})), tools=TOOLS)
    assert result.score == 0.5
    assert result.metadata["violations"] == [{
        "call_index": 1, "tool": "delete_all", "kind": "unauthorized_tool", "severity": "HIGH",
        "detail": "'delete_all' was not offered (offered: read_file, search, 検索)"}]
    assert result.rationale.startswith("1/2 call(s) violate the offered tool schemas: calls[1] delete_all: "
                                       "unauthorized_tool (HIGH)")


def test_a_tool_is_unauthorized_when_no_tools_were_offered() -> None:
    assert kinds(run(schema(), traj("read_file"), tools={})) == ["unauthorized_tool"]


def test_malformed_arguments() -> None:
    result = run(schema(), traj(c("read_file", raw='{"path": ')), tools=TOOLS)
    assert result.score == 0.0
    (violation,) = result.metadata["violations"]
    assert violation["kind"] == "malformed_arguments" and violation["severity"] == "MEDIUM"
    assert "JSONDecodeError: bad" in violation["detail"]


@pytest.mark.parametrize(
    ("args", "expected_kinds"),
    [
        ({"path": ".env", "encoding": "utf-8"}, ["hallucinated_parameter"]),
        ({}, ["missing_required"]),
        ({"file": ".env"}, ["missing_required", "hallucinated_parameter"]),
        ({"path": 42}, ["type_mismatch"]),
    ],
)
def test_read_file_violations(args: dict[str, Any], expected_kinds: list[str]) -> None:
    result = run(schema(), traj(c("read_file", args)), tools=TOOLS)
    assert kinds(result) == expected_kinds
    assert all(v["severity"] == "MEDIUM" for v in result.metadata["violations"])
    assert result.score == 0.0  # one call, however many violations


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        ({"query": "x", "limit": "5"}, "limit: expected integer, got string '5'"),
        ({"query": "x", "limit": True}, "limit: expected integer, got boolean true"),
        ({"query": "x", "limit": 2.5}, "limit: expected integer, got number 2.5"),
        ({"query": "x", "score": "high"}, "score: expected number, got string 'high'"),
        ({"query": "x", "exact": "true"}, "exact: expected boolean, got string 'true'"),
        ({"query": "x", "tags": "a,b"}, "tags: expected array, got string 'a,b'"),
        ({"query": "x", "tags": ["a", 2]}, "tags[1]: expected string, got integer 2"),
        ({"query": "x", "filters": {"lang": "de"}}, "filters.lang: 'de' is not one of [\"en\", \"fr\"]"),
        ({"query": "x", "filters": {"region": "eu"}}, "filters.region is not a parameter (known: lang)"),
        ({"query": "x", "cursor": 3}, "cursor: expected string or null, got integer 3"),
        ({"query": None}, "query: expected string, got null"),
    ],
)
def test_type_checks_name_the_parameter(args: dict[str, Any], detail: str) -> None:
    result = run(schema(), traj(c("search", args)), tools=TOOLS)
    assert [v["detail"] for v in result.metadata["violations"]] == [detail]


def test_an_integral_float_is_an_integer() -> None:
    assert run(schema(), traj(c("search", {"query": "x", "limit": 3.0})), tools=TOOLS).score == 1.0


def test_score_counts_violating_calls_not_violations() -> None:
    trajectory = traj(c("read_file", {"file": "x", "mode": "r"}), c("read_file", {"path": "a"}),
                      c("read_file", {"path": "b"}), c("nope"))
    result = run(schema(), trajectory, tools=TOOLS)
    assert result.score == pytest.approx(1 - 2 / 4)
    assert result.metadata["violating_calls"] == 2
    assert "; and 1 more" in result.rationale  # 4 violations, 3 shown
    assert run(schema(score="binary"), trajectory, tools=TOOLS).score == 0.0


def test_ignored_kinds_are_not_counted() -> None:
    trajectory = traj(c("read_file", {"path": ".env", "encoding": "utf-8"}))
    assert run(schema(ignore=["hallucinated_parameter"]), trajectory, tools=TOOLS).score == 1.0


def test_parallel_and_unicode_calls_each_get_their_index() -> None:
    result = run(schema(), traj([c("検索", {"q": 1}), c("検索2", {})]), tools=TOOLS)
    assert [(v["call_index"], v["tool"], v["kind"]) for v in result.metadata["violations"]] == [
        (0, "検索", "hallucinated_parameter"), (1, "検索2", "unauthorized_tool")]


@pytest.mark.parametrize(
    ("value", "schema_", "problems"),
    [
        ({"a": 1}, {"type": "object", "properties": {}, "additionalProperties": True}, []),
        ({"a": 1}, {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}, ["type_mismatch"]),
        ({"a": 1}, {"type": "object"}, []),  # no properties declared: free-form
        ("x", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, []),
        (1.5, {"oneOf": [{"type": "integer"}, {"type": "string"}]}, ["type_mismatch"]),
        (1.5, {"anyOf": [{"type": "number", "maximum": 1}, {"type": "null"}]}, ["invalid_value"]),  # as a number
        (3, {"oneOf": [{"type": "integer"}, {"type": "number"}]}, ["invalid_value"]),  # oneOf: exactly one fits
        ("b", {"const": "a"}, ["invalid_value"]),
        (True, {"enum": [1, "a"]}, ["invalid_value"]),  # true is not 1
        (5, {"type": "string", "enum": ["a"]}, ["type_mismatch"]),  # a wrong type is said alone
        ({"b": 1}, {"type": "object", "properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}]}, []),
        ({"p1": 1, "zz": 2}, {"type": "object", "properties": {}, "patternProperties": {"^p": {}}},
         ["hallucinated_parameter"]),
        ({"a": 1}, {"type": "object", "properties": {"a": {}}, "dependentRequired": {"a": ["b"]}},
         ["missing_required"]),
    ],
)
def test_check_value_keywords(value: Any, schema_: dict[str, Any], problems: list[str]) -> None:
    assert [kind for kind, _ in check_value(value, schema_, "")] == problems


def test_types_follow_json_not_python() -> None:
    number = {"type": "object", "properties": {"n": {"type": "number"}, "i": {"type": "integer"},
                                               "z": {"type": "null"}}}
    assert check_value({"n": 2, "i": 2.0, "z": None}, number) == []
    assert [k for k, _ in check_value({"n": False, "i": True, "z": 0}, number)] == ["type_mismatch"] * 3
    assert [k for k, _ in check_value({"i": 2.1}, number)] == ["type_mismatch"]


def test_bounds_patterns_and_lengths_are_checked_and_said_in_our_words() -> None:
    tool = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 10},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$", "maxLength": 3},
        "tags": {"type": "array", "maxItems": 1, "uniqueItems": True},
    }}
    problems = check_value({"n": 0, "code": "abcd", "tags": ["a", "a"]}, tool)
    assert problems == [
        ("invalid_value", "n: 0 is less than the minimum 1"),
        ("invalid_value", "code: 'abcd' does not match the pattern '^[A-Z]{3}$'"),
        ("invalid_value", "code: 'abcd' is longer than 3 characters"),
        ("invalid_value", 'tags: ["a", "a"] has more than 1 items'),
        ("invalid_value", 'tags: ["a", "a"] repeats an item (the items must be unique)'),
    ]
    assert check_value({"n": 11}, tool) == [("invalid_value", "n: 11 is more than the maximum 10")]


def test_problems_follow_the_arguments_order_with_missing_keys_first() -> None:
    tool = {"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}, "b": {},
                                                                     "c": {"type": "integer"}}}
    assert check_value({"c": "x", "zz": 1, "a": 2}, tool) == [
        ("missing_required", "b is required but missing"),
        ("type_mismatch", "c: expected integer, got string 'x'"),
        ("hallucinated_parameter", "zz is not a parameter (known: a, b, c)"),
        ("type_mismatch", "a: expected string, got integer 2"),
    ]


def test_refs_are_followed_and_closed_like_the_rest() -> None:
    tool = {"type": "object", "properties": {"where": {"$ref": "#/$defs/Place"}},
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    assert check_value({"where": {"city": "Oslo"}}, tool) == []
    assert check_value({"where": {"city": 1, "zip": "x"}}, tool) == [
        ("type_mismatch", "where.city: expected string, got integer 1"),
        ("hallucinated_parameter", "where.zip is not a parameter (known: city)")]


def test_strict_schema_closes_declared_objects_only() -> None:
    given = {"type": "object", "properties": {"a": {"type": "object", "properties": {}},
                                              "b": {"type": "object"},
                                              "c": {"type": "object", "properties": {}, "additionalProperties": True}},
             "allOf": [{"properties": {"d": {}}}]}
    strict = strict_schema(given)
    assert strict["properties"]["a"]["additionalProperties"] is False
    assert "additionalProperties" not in strict["properties"]["b"]
    assert strict["properties"]["c"]["additionalProperties"] is True
    assert "additionalProperties" not in strict and "additionalProperties" not in strict["allOf"][0]
    assert "additionalProperties" not in given["properties"]["a"]  # a copy: the tool's own schema is untouched


@pytest.mark.parametrize("schema_", [{"type": "madeup"}, {"properties": {"a": {"$ref": "#/$defs/nope"}}},
                                     {"pattern": "("}])
def test_a_schema_that_cannot_be_evaluated_is_no_verdict(schema_: dict[str, Any]) -> None:
    with pytest.raises(SchemaUnusable):
        check_value({"a": "x"} if "properties" in schema_ else "x", schema_)


def test_a_tool_schema_that_cannot_be_evaluated_errors_the_grade_never_zero() -> None:
    tools = {"lookup": ToolSpec.model_construct(parameters={"type": "object", "properties": {
        "id": {"$ref": "#/$defs/missing"}}})}  # past validation, as a custom target could hand it over
    grades = asyncio.run(grade_sample({"schema": schema()}, Sample(input="q"), traj(c("lookup", {"id": "x"})), tools))
    result = grades["schema"]
    assert result.score is None and result.error
    assert "lookup" in result.rationale and "$ref" in result.rationale


# --- grounding --------------------------------------------------------------------------------------------------

ENV_RESULT = "DB_HOST=localhost\nDB_PORT=5432"


def ground(**spec: Any) -> GroundingGrader:
    return GroundingGrader("grounding", GroundingSpec.model_validate(spec), GraderContext(Path(".")))


def answered(answer: str, result: str = ENV_RESULT) -> Trajectory:
    return traj(c("read_file", {"path": ".env"}, result=result), answer=answer)


def test_the_misreading_the_grader_exists_for() -> None:
    g = ground(must_cite=["localhost"], must_not_say=["5432"])
    result = run(g, answered("The database host is 5432."))
    assert result.score == 0.0
    assert result.rationale == ("the answer does not cite 'localhost' (the tool said 'DB_HOST=localhost'); "
                                "the answer says '5432', a listed misreading; the tool said 'DB_PORT=5432'")
    assert result.submission == "The database host is 5432."


def test_a_grounded_answer_passes() -> None:
    result = run(ground(must_cite=["localhost"], must_not_say=["5432"]), answered("The host is LOCALHOST."))
    assert result.score == 1.0
    assert result.rationale == "the answer cites 'localhost' (found in tool results) and avoids '5432'"


def test_a_right_value_the_tools_never_returned_is_ungrounded() -> None:
    result = run(ground(must_cite=["4"]), answered("The server runs 4 workers.", result="level: info"))
    assert result.score == 0.0
    assert result.rationale == "the answer says '4' but no tool result contains it (ungrounded)"
    assert run(ground(must_cite=["4"], require_source=False), answered("It runs 4 workers.", "x")).score == 1.0


def test_case_and_whole_word_options() -> None:
    assert run(ground(must_cite=["localhost"], case_sensitive=True), answered("LOCALHOST")).score == 0.0
    assert run(ground(must_not_say=["5432"]), answered("port 15432")).score == 1.0  # not the same number
    assert run(ground(must_not_say=["5432"], whole_word=False), answered("port 15432")).score == 0.0
    assert run(ground(must_cite=["localhost"]), answered("localhost:5432")).score == 1.0


def test_sample_metadata_adds_values_and_a_string_is_one_value() -> None:
    sample = Sample(input="q", metadata={"must_cite": "localhost", "must_not_say": ["5432", 3306]})
    result = run(ground(must_not_say=["5432"]), answered("localhost, not 3306"), sample)
    assert result.metadata["must_cite"] == ["localhost"]
    assert result.metadata["must_not_say"] == ["5432", "3306"]
    assert result.score == 0.0
    assert "the answer says '3306', a listed misreading" in result.rationale


@pytest.mark.parametrize("bad", [{"must_cite": {"a": 1}}, {"must_not_say": [True]}, {"must_cite": [["x"]]}])
def test_invalid_sample_values_are_a_grading_error(bad: dict[str, Any]) -> None:
    result = run(ground(), answered("x"), Sample(input="q", metadata=bad))
    assert result.score is None
    assert "must be a string or a list of strings" in (result.error or "")


def test_nothing_to_check_and_fraction() -> None:
    assert run(ground(), answered("x")).rationale == "no must_cite or must_not_say values: nothing to check"
    g = ground(must_cite=["localhost", "5432"], must_not_say=["3306"], score="fraction")
    assert run(g, answered("localhost")).score == pytest.approx(2 / 3)


def test_the_extractor_picks_what_is_checked() -> None:
    g = ground(must_not_say=["5432"], extractor="pattern", extractor_config={"pattern": r"HOST: (\w+)"})
    assert run(g, answered("HOST: localhost (port 5432)")).score == 1.0


def test_prefilled_tool_messages_are_sources_and_unicode_values_match() -> None:
    sample = Sample(messages=[Message(role="user", content="where?"),
                              Message(role="tool", tool_call_id="1", content="city=Zürich")],
                    input="Which city?")
    trajectory = Trajectory(prefilled=[m.model_dump(exclude_none=True) for m in sample.messages or []],
                            turns=traj(answer="It is ZÜRICH.").turns)
    assert run(ground(must_cite=["Zürich"]), trajectory, sample).score == 1.0


def test_no_answer_cites_nothing() -> None:
    result = run(ground(must_cite=["localhost"]), traj(c("read_file", result=ENV_RESULT), answer=None, stop="max_steps"))
    assert result.score == 0.0
    assert result.rationale == "the answer does not cite 'localhost' (the tool said 'DB_HOST=localhost')"


def test_check_sample_reports_bad_values_before_the_run() -> None:
    bad = Sample(id="s1", input="q", metadata={"must_cite": {"a": 1}, "must_not_say": "fine"})
    (problem,) = ground().check_sample(bad)
    assert problem.startswith("sample 's1': metadata.must_cite must be a string or a list of strings")
    assert problem.endswith("needed by grader grounding (grounding)")
    assert ground().check_sample(Sample(input="q", metadata={"must_cite": ["a"]})) == []


def test_a_backtracking_pattern_is_a_grade_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_REGEX_TIMEOUT", "0.2")
    tools = {"lookup": ToolSpec(parameters={"type": "object", "properties": {
        "id": {"type": "string", "pattern": "(a|aa)+$"}}})}
    started = time.monotonic()
    grades = asyncio.run(grade_sample({"schema": schema()}, Sample(input="q"),
                                      traj(c("lookup", {"id": "a" * 60 + "!"})), tools))
    assert time.monotonic() - started < 5
    assert grades["schema"].score is None and "(a|aa)+$" in (grades["schema"].error or "")
