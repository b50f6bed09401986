"""The tutorial JSON-array format (issue 11, item 3): `data.mock_tools.<name>.mock_return` is what the mocked
tool answers (it was ignored: every tool answered ""); `target.mock_tool_results` is what the judge is shown as
the tool results provided (`rubric_vars.mock_tool_results`). A mocked tool that answers nothing, in a row of our own
format or in the suite, is a validation problem naming the tool; a tutorial tool with no result answers "", as
those harnesses do (issue 24 item 7; tests/test_seeds.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.datasets.reader import check_dataset, iter_samples
from tests.helpers import SyncToolbox, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

WEATHER = "Paris: sunny, 24°C"

CHAPTER_ITEM: dict[str, Any] = {  # the shape of the chapter's agent_multiturn.json, copied literally
    "data": {
        "prompt": "What's the weather in Paris?",
        "mock_tools": [
            {"name": "get_weather", "description": "Weather for a city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
             "mock_return": WEATHER},
            {"type": "function", "function": {"name": "get_time", "description": "Local time",
                                              "parameters": {"type": "object", "properties": {}}},
             "mock_return": {"time": "14:00"}},
        ],
    },
    "target": {"original_task": "Report the weather in Paris", "expected_tool_order": ["get_weather"],
               "mock_tool_results": "get_weather returned: sunny, 24°C"},
}


def _write(tmp_path: Path, items: list[Any]) -> Path:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def test_mock_return_is_what_the_tool_answers(tmp_path: Path) -> None:
    (sample,) = iter_samples(_write(tmp_path, [CHAPTER_ITEM]))
    assert sample.tools is not None
    box = SyncToolbox(sample.tools)
    assert box.call("c1", "get_weather", '{"city": "Paris"}').result == WEATHER
    assert json.loads(box.call("c2", "get_time", "{}").result) == {"time": "14:00"}
    assert sample.rubric_vars["mock_tool_results"] == "get_weather returned: sunny, 24°C"


@pytest.mark.parametrize("mock_tools", [
    {"get_weather": {"description": "Weather", "mock_return": WEATHER}},
    {"get_weather": {"description": "Weather", "mockReturn": WEATHER}},
    [{"type": "function", "function": {"name": "get_weather", "mock_return": WEATHER}}],
])
def test_mock_return_in_every_tool_shape(tmp_path: Path, mock_tools: Any) -> None:
    item = {"data": {"prompt": "p", "mockTools": mock_tools}}
    (sample,) = iter_samples(_write(tmp_path, [item]))
    assert sample.tools is not None and sample.tools["get_weather"].returns == WEATHER


def test_mock_return_wins_over_mock_tool_results(tmp_path: Path) -> None:
    item = {"data": {"prompt": "p", "mock_tools": [{"name": "t", "mock_return": "real"}]},
            "target": {"mock_tool_results": {"t": "what the judge reads"}}}
    (sample,) = iter_samples(_write(tmp_path, [item]))
    assert sample.tools is not None and sample.tools["t"].returns == "real"
    assert sample.rubric_vars["mock_tool_results"] == {"t": "what the judge reads"}


def test_tutorial_tool_without_any_return_answers_empty(tmp_path: Path) -> None:
    item = {"data": {"prompt": "p", "mock_tools": [{"name": "get_weather", "description": "Weather"}]}}
    path = _write(tmp_path, [item])
    count, problems = check_dataset(path)
    assert (count, problems) == (1, [])
    (sample,) = iter_samples(path)
    assert sample.tools is not None and SyncToolbox(sample.tools).call("c1", "get_weather", "{}").result == ""
    assert len(sample.format_notes) == 1 and "'get_weather'" in sample.format_notes[0]


def test_a_row_tool_without_return_is_a_problem_but_empty_string_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "x", "tools": {"t": {"description": "d"}}}) + "\n"
                    + json.dumps({"id": "b", "input": "x", "tools": {"t": {"returns": ""}}}) + "\n", encoding="utf-8")
    count, problems = check_dataset(path)
    assert count == 1 and len(problems) == 1
    assert problems[0].startswith(f"{path}:1: sample 'a'") and "'t' has no return configured" in problems[0]


def test_suite_tool_without_return_fails_validate_and_run(tmp_path: Path) -> None:
    tools = {"lookup": {"description": "Look up"}, "quiet": {"description": "Says nothing", "returns": ""}}
    suite = write_suite(tmp_path, [{"id": "a", "input": "x"}, {"id": "b", "input": "y",
                                                                "tools": {"lookup": {"returns": "row's own"}}}],
                        tools=tools)
    for command in ("validate", "run"):
        result = run_cli(command, str(suite))
        assert result.returncode == 2, result.stdout + result.stderr
        assert "tools.lookup" in result.stderr and "no return configured" in result.stderr
        assert "samples a)" in result.stderr and "quiet" not in result.stderr


def test_suite_tool_answered_by_every_row_is_fine(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "x", "tools": {"lookup": {"returns": "found"}}}],
                        tools={"lookup": {"description": "Look up"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 0, result.stderr


def test_chapter_file_runs_with_the_mock_return(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"Paris": [call("get_weather", {"city": "Paris"}), text("It is sunny, 24°C.")]})
    suite = write_suite(tmp_path, [], base_url=server.url, dataset="data.json", tools={},
                        graders={"order": {"kind": "tool_order"}})
    _write(tmp_path, [CHAPTER_ITEM])
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    second = server.agent_requests()[1]["body"]["messages"]
    assert [m["content"] for m in second if m["role"] == "tool"] == [WEATHER]
    (line,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]["result"] == WEATHER
