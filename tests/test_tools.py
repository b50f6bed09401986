"""Mocked tools: schemas shown to the agent, canned answers, and robustness to bad calls from the model."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from evals_cli.models.tools import ToolSpec
from evals_cli.tools.mock import merge_tools, openai_tools
from tests.helpers import SyncToolbox


def spec(**fields: object) -> ToolSpec:
    return ToolSpec.model_validate(fields)


# --- schemas --------------------------------------------------------------------------------------------------


def test_shorthand_parameters_become_required_string_properties() -> None:
    tool = spec(description="Read a file", parameters={"path": "File path", "encoding": "Text encoding"})
    assert tool.json_schema() == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path"},
            "encoding": {"type": "string", "description": "Text encoding"},
        },
        "required": ["path", "encoding"],
    }


def test_shorthand_with_a_parameter_called_type() -> None:
    schema = spec(parameters={"type": "Kind of record", "q": "Query"}).json_schema()
    assert schema["type"] == "object"
    assert schema["properties"]["type"] == {"type": "string", "description": "Kind of record"}
    assert schema["required"] == ["type", "q"]


def test_full_json_schema_passes_through() -> None:
    full = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"],
            "additionalProperties": False}
    assert spec(parameters=full).json_schema() == full


def test_schema_with_properties_but_no_type_gets_object_type() -> None:
    schema = spec(parameters={"properties": {"n": {"type": "integer"}}}).json_schema()
    assert schema == {"type": "object", "properties": {"n": {"type": "integer"}}}


def test_no_parameters_is_an_empty_object_schema() -> None:
    assert spec().json_schema() == {"type": "object", "properties": {}}


def test_openai_tools_shape() -> None:
    tools = {"read_file": spec(description="Read", parameters={"path": "File path"})}
    assert openai_tools(tools) == [{
        "type": "function",
        "function": {"name": "read_file", "description": "Read", "parameters": {
            "type": "object", "properties": {"path": {"type": "string", "description": "File path"}},
            "required": ["path"]}},
    }]
    assert SyncToolbox(tools).schemas() == openai_tools(tools)


# --- spec validation ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fields", [{"returns": "x", "error": "boom"}, {"returns": "x", "sequence": ["a"]},
                                    {"sequence": ["a"], "error": "boom"}])
def test_only_one_default_answer(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="give only one of returns, sequence, error"):
        spec(**fields)


def test_empty_sequence_is_rejected() -> None:
    with pytest.raises(ValidationError, match="'sequence' is empty"):
        spec(sequence=[])


def test_unknown_spec_key_is_rejected() -> None:
    with pytest.raises(ValidationError, match="extra"):
        spec(retuns="x")


# --- answers --------------------------------------------------------------------------------------------------


def test_fixed_returns_text() -> None:
    call = SyncToolbox({"t": spec(returns="hello")}).call("c1", "t", "{}")
    assert (call.id, call.name, call.result, call.is_error) == ("c1", "t", "hello", False)
    assert call.arguments == {}


def test_dict_returns_are_serialised_as_json() -> None:
    payload = {"files": [".env", "src/"], "count": 2, "name": "café"}
    call = SyncToolbox({"t": spec(returns=payload)}).call("c1", "t", "{}")
    assert json.loads(call.result) == payload
    assert "café" in call.result  # not escaped to \\u00e9
    assert not call.is_error


def test_list_and_number_returns_are_serialised_as_json() -> None:
    box = SyncToolbox({"l": spec(returns=[1, 2]), "n": spec(returns=3)})
    assert box.call("a", "l", "").result == "[1, 2]"
    assert box.call("b", "n", "").result == "3"


def test_no_answer_configured_is_an_error_never_empty_text() -> None:
    """Issue 11 item 3: an answer nobody configured is never a silent "" (validation rejects such a suite; a tool
    whose cases do not match the call answers an error naming it)."""
    call = SyncToolbox({"t": spec()}).call("c", "t", "{}")
    assert call.is_error and "no mocked result for t" in call.result
    assert SyncToolbox({"t": spec(returns="")}).call("c", "t", "{}").result == ""  # returns: "" is written


def test_error_spec() -> None:
    call = SyncToolbox({"t": spec(error="permission denied")}).call("c", "t", '{"x": 1}')
    assert call.result == "Error: permission denied"
    assert call.is_error
    assert call.arguments == {"x": 1}


CASES = spec(
    parameters={"path": "File path", "mode": "Mode"},
    cases=[
        {"when": {"path": ".env", "mode": "raw"}, "returns": "RAW"},
        {"when": {"path": ".env"}, "returns": "DB_HOST=localhost"},
        {"when": {"path": "secret"}, "error": "forbidden"},
        {"when": {"path": ".env"}, "returns": "never reached"},
    ],
    returns="default answer",
)


@pytest.mark.parametrize(
    ("arguments", "result", "is_error"),
    [
        ({"path": ".env", "mode": "raw"}, "RAW", False),
        ({"path": ".env", "mode": "other"}, "DB_HOST=localhost", False),  # first full match wins
        ({"path": ".env"}, "DB_HOST=localhost", False),
        ({"path": "secret"}, "Error: forbidden", True),
        ({"path": "README.md"}, "default answer", False),
        ({}, "default answer", False),
    ],
)
def test_cases_chosen_by_argument_values(arguments: dict[str, str], result: str, is_error: bool) -> None:
    call = SyncToolbox({"read_file": CASES}).call("c", "read_file", json.dumps(arguments))
    assert (call.result, call.is_error) == (result, is_error)


def test_cases_fall_back_to_error_spec() -> None:
    tool = spec(cases=[{"when": {"path": ".env"}, "returns": "ok"}], error="file not found")
    box = SyncToolbox({"read_file": tool})
    assert box.call("a", "read_file", '{"path": ".env"}').result == "ok"
    missing = box.call("b", "read_file", '{"path": "nope"}')
    assert (missing.result, missing.is_error) == ("Error: file not found", True)


def test_case_values_compare_json_values() -> None:
    tool = spec(cases=[{"when": {"limit": 10, "filters": {"a": [1, 2]}}, "returns": "matched"}], returns="no")
    box = SyncToolbox({"t": tool})
    assert box.call("a", "t", '{"limit": 10, "filters": {"a": [1, 2]}}').result == "matched"
    assert box.call("b", "t", '{"limit": "10", "filters": {"a": [1, 2]}}').result == "no"


@pytest.mark.parametrize(
    ("when", "arguments", "matches"),
    [
        ({"confirm": True}, {"confirm": True}, True),
        ({"confirm": True}, {"confirm": 1}, False),  # an earlier version matched: Python's True == 1
        ({"confirm": False}, {"confirm": 0}, False),
        ({"n": 1}, {"n": True}, False),
        ({"n": 1}, {"n": 1.0}, True),  # the same JSON number
        ({"flags": [True]}, {"flags": [1]}, False),
        ({"opts": {"dry": False}}, {"opts": {"dry": 0}}, False),
        ({"opts": {"dry": False}}, {"opts": {"dry": False}}, True),
        ({"x": None}, {"x": None}, True),
        ({"x": None}, {}, False),  # an absent argument is not null
    ],
)
def test_case_matching_uses_json_equality(when: dict[str, object], arguments: dict[str, object],
                                          matches: bool) -> None:
    tool = spec(cases=[{"when": when, "returns": "matched"}], returns="default")
    call = SyncToolbox({"t": tool}).call("a", "t", json.dumps(arguments))
    assert call.result == ("matched" if matches else "default")


def test_sequence_answers_successive_calls_and_repeats_the_last() -> None:
    box = SyncToolbox({"poll": spec(sequence=["pending", {"status": "running"}, "done"])})
    results = [box.call(f"c{i}", "poll", "{}").result for i in range(5)]
    assert results == ["pending", '{"status": "running"}', "done", "done", "done"]


def test_sequence_counts_are_per_tool_and_per_toolbox() -> None:
    tools = {"a": spec(sequence=["a1", "a2"]), "b": spec(sequence=["b1", "b2"])}
    box = SyncToolbox(tools)
    assert [box.call("1", "a", "").result, box.call("2", "b", "").result, box.call("3", "a", "").result] == \
        ["a1", "b1", "a2"]
    assert SyncToolbox(tools).call("4", "a", "").result == "a1"  # a fresh toolbox starts over


def test_cases_take_precedence_over_sequence_and_do_not_advance_it() -> None:
    tool = spec(cases=[{"when": {"q": "x"}, "returns": "case"}], sequence=["s1", "s2"])
    box = SyncToolbox({"t": tool})
    assert box.call("1", "t", '{"q": "x"}').result == "case"
    assert box.call("2", "t", '{"q": "y"}').result == "s1"
    assert box.call("3", "t", '{"q": "x"}').result == "case"
    assert box.call("4", "t", '{"q": "y"}').result == "s2"


# --- bad calls from the model ---------------------------------------------------------------------------------


def test_unknown_tool_names_the_available_tools() -> None:
    box = SyncToolbox({"read_file": spec(returns="x"), "list_files": spec(returns="y")})
    call = box.call("c9", "delete_file", '{"path": "/"}')
    assert call.unknown_tool and call.is_error
    assert call.result == "Error: unknown tool 'delete_file'. Available tools: read_file, list_files."
    assert call.name == "delete_file"
    assert call.arguments == {"path": "/"}  # still parsed and recorded
    assert box.calls == {}


def test_unknown_tool_with_no_tools_at_all() -> None:
    call = SyncToolbox({}).call("c", "anything", "")
    assert call.result == "Error: unknown tool 'anything'. Available tools: none."
    assert call.unknown_tool


def test_malformed_arguments_do_not_consult_the_mock() -> None:
    box = SyncToolbox({"poll": spec(sequence=["first", "second"]), "broken": spec(error="mock error")})

    bad = box.call("c1", "poll", '{"path": ')

    assert bad.arguments is None
    assert bad.raw_arguments == '{"path": '
    assert bad.arguments_error is not None and bad.arguments_error.startswith("JSONDecodeError")
    assert bad.is_error and not bad.unknown_tool
    assert bad.result.startswith("Error: the arguments are not valid JSON")
    assert "first" not in bad.result
    # the sequence did not advance: the next good call gets the first answer
    assert box.call("c2", "poll", "{}").result == "first"
    # a mock that always errors is not consulted either: the error is about the arguments
    assert "mock error" not in box.call("c3", "broken", "{oops").result


@pytest.mark.parametrize(("raw", "type_name"), [("[1, 2]", "list"), ('"path"', "str"), ("42", "int"),
                                                ("null", "NoneType")])
def test_non_object_json_arguments(raw: str, type_name: str) -> None:
    call = SyncToolbox({"t": spec(returns="ok")}).call("c", "t", raw)
    assert call.arguments is None
    assert call.arguments_error == f"expected a JSON object, got {type_name}"
    assert call.is_error
    assert call.result != "ok"


@pytest.mark.parametrize("raw", ["", "   ", None])
def test_empty_arguments_mean_no_arguments(raw: str | None) -> None:
    call = SyncToolbox({"t": spec(returns="ok")}).call("c", "t", raw)  # type: ignore[arg-type]
    assert call.arguments == {}
    assert call.arguments_error is None
    assert (call.result, call.is_error) == ("ok", False)


def test_nothing_is_executed() -> None:
    box = SyncToolbox({"run_command": spec(description="Run a shell command", parameters={"cmd": "Command"},
                                           returns="command finished")})
    call = box.call("c", "run_command", json.dumps({"cmd": "rm -rf /"}))
    assert call.result == "command finished"
    assert call.arguments == {"cmd": "rm -rf /"}
    assert not call.is_error


# --- merge ------------------------------------------------------------------------------------------------------


def test_merge_tools_sample_overrides_by_name_and_adds() -> None:
    suite_tools = {"read_file": spec(returns="suite"), "list_files": spec(returns="ls")}
    sample_tools = {"read_file": spec(returns="sample"), "search": spec(returns="found")}

    merged = merge_tools(suite_tools, sample_tools)

    assert list(merged) == ["read_file", "list_files", "search"]
    assert merged["read_file"].returns == "sample"
    assert merged["list_files"].returns == "ls"
    assert merged["search"].returns == "found"
    assert suite_tools["read_file"].returns == "suite"  # the suite's own mapping is not changed


@pytest.mark.parametrize("sample_tools", [None, {}])
def test_merge_tools_without_sample_tools(sample_tools: dict[str, ToolSpec] | None) -> None:
    suite_tools = {"read_file": spec(returns="suite")}
    assert merge_tools(suite_tools, sample_tools) == suite_tools
