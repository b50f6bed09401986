"""Dataset reading: lazy JSONL streaming, precise file:line problems, tag/max selection, the tutorial format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals_cli.datasets.reader import check_dataset, iter_samples, select_samples
from evals_cli.errors import ConfigError
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from tests.helpers import SyncToolbox


def write_lines(tmp_path: Path, lines: list[str], name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def row(**fields: Any) -> str:
    return json.dumps(fields)


def only_problem(path: Path) -> str:
    """The single problem check_dataset reports for a one-bad-row file."""
    _, problems = check_dataset(path)
    assert len(problems) == 1, problems
    return problems[0]


# --- streaming ----------------------------------------------------------------------------------------------


def test_iter_samples_is_lazy_and_raises_only_at_the_bad_row(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(input="one"), row(input="two"), "{not json", row(input="four")])

    samples = iter_samples(path)
    first = next(samples)
    second = next(samples)

    assert (first.id, first.input) == ("line-1", "one")
    assert (second.id, second.input) == ("line-2", "two")
    with pytest.raises(ConfigError) as info:
        next(samples)
    assert info.value.problems[0].startswith(f"{path}:3: invalid JSON at column ")


def test_iter_samples_does_nothing_before_first_next(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    samples = iter_samples(missing)  # a generator: no I/O yet
    with pytest.raises(ConfigError, match="dataset not found"):
        next(samples)


def test_blank_lines_are_skipped_and_ids_follow_physical_lines(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(input="a"), "", "   ", row(input="b"), row(input="c", id="custom"),
                                  row(input="d", id=42)])

    samples = list(iter_samples(path))

    assert [s.id for s in samples] == ["line-1", "line-4", "custom", "42"]
    assert [s.input for s in samples] == ["a", "b", "c", "d"]


def test_null_id_is_a_problem_naming_the_line(tmp_path: Path) -> None:
    """An earlier version turned "id": null into 'None', a later one silently into 'line-1' (issue 12, item 11):
    an explicit null id is a mistake to report; a row without 'id' still gets the line's id."""
    path = write_lines(tmp_path, ['{"id": null, "input": "a"}', '{"id": 0, "input": "b"}', '{"input": "c"}'])
    count, problems = check_dataset(path)
    assert count == 2
    assert len(problems) == 1 and problems[0].startswith(f"{path}:1: id: is null")
    rows = write_lines(tmp_path, ['{"id": 0, "input": "b"}', '{"input": "c"}'], "ok.jsonl")
    assert [s.id for s in iter_samples(rows)] == ["0", "line-2"]


def test_null_id_in_a_json_array_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text('[{"id": null, "input": "a"}, {"id": 5, "input": "b"}, {"input": "c"}]', encoding="utf-8")
    count, problems = check_dataset(path)
    assert count == 2 and problems == [f"{path}: item 1: id: is null; give the sample a string id, or leave "
                                       "'id' out to get one from the line"]


def test_sample_fields_are_parsed(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(
        id="s1", input=["hello", "and then?"], ground_truth=["hi", "done"], tags=["smoke", "multi"],
        expected_tool_order=["list_files", "read_file"], forbidden_tools=["delete_*"], max_steps=3,
        rubric_vars={"task": "greet"}, metadata={"source": "unit"},
        tools={"read_file": {"returns": "x"}},
    )])

    (sample,) = iter_samples(path)

    assert sample.user_turns == ["hello", "and then?"]
    assert sample.per_turn
    assert sample.tags == ["smoke", "multi"]
    assert sample.expected_tool_order == ["list_files", "read_file"]
    assert sample.forbidden_tools == ["delete_*"]
    assert sample.max_steps == 3
    assert sample.rubric_vars == {"task": "greet"}
    assert sample.metadata == {"source": "unit"}
    assert sample.tools is not None and isinstance(sample.tools["read_file"], ToolSpec)


# --- problems with exact file:line prefixes ----------------------------------------------------------------


def test_invalid_json_problem(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(input="ok"), '{"input": "oops",}'])
    assert only_problem(path).startswith(f"{path}:2: invalid JSON at column ")


@pytest.mark.parametrize(("line", "type_name"), [("[1, 2]", "list"), ('"text"', "str"), ("7", "int"),
                                                 ("null", "NoneType")])
def test_non_object_row(tmp_path: Path, line: str, type_name: str) -> None:
    path = write_lines(tmp_path, [row(input="ok"), line])
    assert only_problem(path) == f"{path}:2: expected a JSON object with 'input', got {type_name}"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"input": "x", "tags": "t1"}, "tags: input should be a valid list"),
        ({"input": 5}, "input: input should be a valid string or input should be a valid list"),
        ({"input": "x", "max_steps": 0}, "max_steps: input should be greater than or equal to 1"),
        ({"input": "x", "rubric_vars": [1]}, "rubric_vars: input should be a valid dictionary"),
        ({"messages": [{"content": "hi"}]}, "messages.0.role: required field is missing"),
        ({"input": "x", "tools": {"t": {"returns": 1, "error": "e"}}},
         "tools.t: give only one of returns, sequence, error (got returns, error)"),
    ],
)
def test_wrong_field_types_name_line_sample_and_field(tmp_path: Path, fields: dict[str, Any], expected: str) -> None:
    path = write_lines(tmp_path, [row(input="ok"), json.dumps(fields)])
    assert only_problem(path) == f"{path}:2: sample 'line-2': {expected}"


def test_unknown_field_with_suggestion(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(id="s1", input="x", grund_truth="y")])
    assert only_problem(path) == f"{path}:1: sample 's1': grund_truth: unknown key 'grund_truth'; " \
                                 "did you mean 'ground_truth'?"


def test_unknown_field_without_suggestion_lists_valid_keys(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(input="x", colour="red")])
    problem = only_problem(path)
    assert problem.startswith(f"{path}:1: sample 'line-1': colour: unknown key 'colour'; valid keys: ")
    assert "ground_truth" in problem and "expected_tool_order" in problem


def test_per_turn_length_mismatch_names_the_sample(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(id="pt-7", input=["a", "b"], ground_truth=["1", "2", "3"])])
    problem = only_problem(path)
    assert problem.startswith(f"{path}:1: sample 'pt-7': ")
    assert "'input' has 2 messages but 'ground_truth' has 3" in problem


def test_sample_without_input_or_user_message(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(tags=["x"]), row(messages=[{"role": "assistant", "content": "hi"}])])
    count, problems = check_dataset(path)
    assert count == 0
    assert problems[0].startswith(f"{path}:1: sample 'line-1': ")
    assert "needs 'input'" in problems[0]
    assert problems[1].startswith(f"{path}:2: sample 'line-2': ")
    assert "must end with a user message" in problems[1]


def test_non_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"input": "ok"}\n{"input": "caf\xe9"}\n')
    assert only_problem(path).startswith(f"{path}:2: not valid UTF-8")


def test_iter_samples_raises_every_problem_of_the_bad_row(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [row(input=5, tags="t", colour="red")])
    with pytest.raises(ConfigError) as info:
        list(iter_samples(path))
    problems = info.value.problems
    assert len(problems) == 3
    assert all(p.startswith(f"{path}:1: sample 'line-1': ") for p in problems)


# --- check_dataset --------------------------------------------------------------------------------------------


def test_check_dataset_collects_all_problems(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [
        row(input="good"),
        "not json",
        "[1]",
        "",
        row(input="good again"),
        row(input="x", colour="red"),
    ])

    count, problems = check_dataset(path)

    assert count == 2
    assert len(problems) == 3
    assert problems[0].startswith(f"{path}:2: invalid JSON")
    assert problems[1].startswith(f"{path}:3: expected a JSON object")
    assert problems[2].startswith(f"{path}:6: sample 'line-6': colour: unknown key")


def test_check_dataset_caps_listed_problems(tmp_path: Path) -> None:
    path = write_lines(tmp_path, ["bad"] * 5)
    count, problems = check_dataset(path, limit=2)
    assert count == 0
    assert len(problems) == 3
    assert problems[0].startswith(f"{path}:1:") and problems[1].startswith(f"{path}:2:")
    assert problems[2] == f"{path}: ... and 3 more problems"


@pytest.mark.parametrize("content", ["", "\n\n   \n"])
def test_check_dataset_reports_an_empty_dataset(tmp_path: Path, content: str) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(content, encoding="utf-8")
    count, problems = check_dataset(path)
    assert count == 0
    assert problems == [f"{path}: the dataset has no samples; add one JSON object per line"]


def test_check_dataset_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dataset not found"):
        check_dataset(tmp_path / "nope.jsonl")


# --- select_samples -------------------------------------------------------------------------------------------


def make(sid: str, *tags: str) -> Sample:
    return Sample(id=sid, input="x", tags=list(tags))


POOL = [make("a", "smoke"), make("b"), make("c", "slow", "smoke"), make("d", "slow"), make("e", "smoke")]


def ids(samples: Iterator[Sample]) -> list[str | None]:
    return [s.id for s in samples]


def test_select_without_filters_keeps_everything() -> None:
    assert ids(select_samples(POOL, None, None)) == ["a", "b", "c", "d", "e"]
    assert ids(select_samples(POOL, [], None)) == ["a", "b", "c", "d", "e"]


def test_select_by_tags_keeps_samples_with_any_of_the_tags() -> None:
    assert ids(select_samples(POOL, ["smoke"], None)) == ["a", "c", "e"]
    assert ids(select_samples(POOL, ["slow", "smoke"], None)) == ["a", "c", "d", "e"]
    assert ids(select_samples(POOL, ["nothing"], None)) == []


def test_select_caps_at_max_samples_after_filtering() -> None:
    assert ids(select_samples(POOL, None, 2)) == ["a", "b"]
    assert ids(select_samples(POOL, ["slow"], 1)) == ["c"]
    assert ids(select_samples(POOL, ["smoke"], 10)) == ["a", "c", "e"]


def test_select_stops_on_an_endless_source() -> None:
    def endless() -> Iterator[Sample]:
        n = 0
        while True:
            n += 1
            yield make(f"s{n}", "even" if n % 2 == 0 else "odd")

    assert ids(select_samples(endless(), ["even"], 3)) == ["s2", "s4", "s6"]


# --- the tutorial JSON-array format ----------------------------------------------------------------------------

TUTORIAL = [
    {
        "data": {
            "prompt": "Check the env",
            "messages": [{"role": "system", "content": "be careful"}],
            "mock_tools": [
                {"type": "function", "function": {
                    "name": "read_file", "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}}},
                {"name": "list_files", "description": "List files",
                 "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}},
            ],
            "config": {"max_steps": 4},
        },
        "target": {
            "original_task": "read the env file",
            "expected_tool_order": ["list_files", "read_file"],
            "forbidden_tools": ["delete_file"],
            "mock_tool_results": {"read_file": "A=1", "list_files": {"files": [".env"]}, "undeclared": "boo"},
            "category": "security",
        },
    },
    {
        "data": {"prompt": "hi", "mockTools": [{"name": "search"}], "config": {"maxSteps": 3}},
        "target": {"originalTask": "greet", "expectedToolOrder": ["search"], "forbiddenTools": ["rm"],
                   "mockToolResults": {"search": "ok"}},
    },
    {"id": "custom", "data": {"prompt": "x"}},
    {"input": "a plain sample in the array"},
]


def write_json(tmp_path: Path, value: Any) -> Path:
    path = tmp_path / "tutorial.json"
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return path


def test_tutorial_item_maps_onto_sample(tmp_path: Path) -> None:
    first, *_ = iter_samples(write_json(tmp_path, TUTORIAL))

    assert first.id == "item-1"
    assert first.input == "Check the env"
    assert first.messages is not None
    assert [(m.role, m.content) for m in first.messages] == [("system", "be careful")]
    assert first.expected_tool_order == ["list_files", "read_file"]
    assert first.forbidden_tools == ["delete_file"]
    assert first.category == "security"
    assert first.tags == ["security"]
    assert first.rubric_vars["original_task"] == "read the env file"
    # what the judge is shown as the tool results provided (issue 11, item 3)
    assert first.rubric_vars["mock_tool_results"] == {"read_file": "A=1", "list_files": {"files": [".env"]},
                                                      "undeclared": "boo"}
    assert first.max_steps == 4

    tools = first.tools
    assert tools is not None and set(tools) == {"read_file", "list_files", "undeclared"}
    # OpenAI {"type": "function", "function": {...}} definition
    assert tools["read_file"].description == "Read a file"
    assert tools["read_file"].json_schema() == {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert tools["read_file"].returns == "A=1"
    # bare {name, description, parameters} definition
    assert tools["list_files"].description == "List files"
    assert tools["list_files"].json_schema()["properties"] == {"dir": {"type": "string"}}
    assert tools["list_files"].returns == {"files": [".env"]}
    # a result with no declared tool still becomes a tool
    assert tools["undeclared"].returns == "boo"


def test_tutorial_tools_answer_with_mock_results(tmp_path: Path) -> None:
    first, *_ = iter_samples(write_json(tmp_path, TUTORIAL))
    assert first.tools is not None
    box = SyncToolbox(first.tools)
    assert box.call("c1", "read_file", '{"path": ".env"}').result == "A=1"
    assert json.loads(box.call("c2", "list_files", "{}").result) == {"files": [".env"]}


def test_tutorial_camel_case_keys(tmp_path: Path) -> None:
    _, second, *_ = iter_samples(write_json(tmp_path, TUTORIAL))

    assert second.id == "item-2"
    assert second.input == "hi"
    assert second.expected_tool_order == ["search"]
    assert second.forbidden_tools == ["rm"]
    assert second.rubric_vars["original_task"] == "greet"
    assert second.rubric_vars["mock_tool_results"] == {"search": "ok"}
    assert second.max_steps == 3
    assert second.tools is not None and second.tools["search"].returns == "ok"
    assert second.category is None and second.tags == []


def test_tutorial_explicit_id_and_plain_items(tmp_path: Path) -> None:
    samples = list(iter_samples(write_json(tmp_path, TUTORIAL)))
    assert [s.id for s in samples] == ["item-1", "item-2", "custom", "item-4"]
    assert samples[2].tools is None and samples[2].max_steps is None
    assert samples[3].input == "a plain sample in the array"


def test_tutorial_mock_tools_as_mapping(tmp_path: Path) -> None:
    item = {"data": {"prompt": "p", "mock_tools": {"search": "Search the web", "fetch": {"description": "Fetch"}}},
            "target": {"mock_tool_results": {"fetch": "<html>", "search": ""}}}
    (sample,) = iter_samples(write_json(tmp_path, [item]))
    assert sample.tools is not None
    assert sample.tools["search"].description == "Search the web"
    assert sample.tools["search"].returns == ""
    assert sample.tools["fetch"].description == "Fetch"
    assert sample.tools["fetch"].returns == "<html>"


def test_tutorial_zero_id_is_kept(tmp_path: Path) -> None:
    path = write_json(tmp_path, [{"id": 0, "data": {"prompt": "a"}}, {"data": {"id": 0, "prompt": "b"}}])
    assert [s.id for s in iter_samples(path)] == ["0", "0"]


def test_tutorial_problems_name_the_item(tmp_path: Path) -> None:
    path = write_json(tmp_path, [
        {"data": {"prompt": "ok"}},
        {"data": {"prompt": "bad", "mock_tools": [{"description": "nameless"}]}},
        {"data": "oops"},
        {"data": {"prompt": "x", "config": {"max_steps": -1}}},
        "not an object",
    ])

    count, problems = check_dataset(path)

    assert count == 1
    assert problems[0] == f"{path}: item 2: data.mock_tools: every tool needs a 'name'"
    assert problems[1] == f"{path}: item 3: 'data' and 'target' must be objects"
    assert problems[2] == f"{path}: item 4: sample 'item-4': max_steps: input should be greater than or equal to 1"
    assert problems[3] == f"{path}: item 5: expected a JSON object with 'input', got str"


def test_tutorial_zero_max_steps_is_reported(tmp_path: Path) -> None:
    """An earlier version read max_steps with `or`, silently dropping 0."""
    path = write_json(tmp_path, [{"data": {"prompt": "x", "config": {"max_steps": 0, "maxTurns": 5}}}])
    count, problems = check_dataset(path)
    assert count == 0
    assert problems == [f"{path}: item 1: sample 'item-1': max_steps: input should be greater than or equal to 1"]


def test_invalid_json_array(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"data": {"prompt": "x"}},', encoding="utf-8")
    with pytest.raises(ConfigError, match="invalid JSON array"):
        list(iter_samples(path))


# --- Sample.per_turn / ground_truth_for -----------------------------------------------------------------------


def test_per_turn_sample_gives_each_turn_its_ground_truth() -> None:
    sample = Sample(input=["q1", "q2", "q3"], ground_truth=["a1", "a2", "a3"])
    assert sample.per_turn
    assert [sample.ground_truth_for(i) for i in range(3)] == ["a1", "a2", "a3"]
    assert sample.ground_truth_for(None) == "a3"  # the whole sample: the last turn's
    assert sample.user_turns == ["q1", "q2", "q3"]
    assert sample.input_text() == "q1\nq2\nq3"


def test_list_input_with_single_ground_truth_grades_only_the_end() -> None:
    sample = Sample(input=["q1", "q2"], ground_truth="final")
    assert not sample.per_turn
    assert sample.ground_truth_for(0) == "final"
    assert sample.ground_truth_for(None) == "final"


def test_string_input_with_list_ground_truth_means_alternatives() -> None:
    sample = Sample(input="q", ground_truth=["Paris", "paris, france"])
    assert not sample.per_turn
    assert sample.ground_truth_for(None) == ["Paris", "paris, france"]
    assert sample.ground_truth_for(0) == ["Paris", "paris, france"]


def test_no_ground_truth() -> None:
    sample = Sample(input="q")
    assert not sample.per_turn
    assert sample.ground_truth_for(None) is None


def test_prefilled_messages_ending_with_user() -> None:
    sample = Sample(messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "last question"}])
    assert sample.user_turns == []
    assert sample.input_text() == "last question"


def test_empty_input_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty list"):
        Sample(input=[])


def test_duplicate_ids_are_reported_with_their_rows(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}, {"id": "a", "input": "z"}, {"input": "w"}]
    path = write_lines(tmp_path, [json.dumps(r) for r in rows])
    count, problems = check_dataset(path)
    assert count == 4
    assert problems == [f"{path}: duplicate sample id 'a' (rows 1, 3); give every sample a unique id"]


def test_on_sample_adds_per_sample_problems(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [json.dumps({"id": "a", "input": "x"}), json.dumps({"id": "b", "input": "y"})])
    _, problems = check_dataset(path, on_sample=lambda s, where: [f"{where} checked {s.id}"] if s.id == "b" else [])
    assert problems == [f"{path}:2 checked b"]


# --- letta-evals' row spellings: sample_id, rubric_path, extra_vars ----------------------------------------------


def test_letta_row_fields_map_onto_ours(tmp_path: Path) -> None:
    path = write_lines(tmp_path, [
        row(sample_id=7, input="a", rubric_path="rubrics/dog.txt", extra_vars={"env": {"A": "1"}}),
        row(sample_id="s-2", input="b", rubric_path="dog.rubric", metadata={"k": 1}),  # a bare name: still a path
        row(input="c", rubric_path=None, extra_vars=None),
    ])
    first, second, third = iter_samples(path)
    assert (first.id, first.rubric, first.metadata) == ("7", "rubrics/dog.txt", {"extra_vars": {"env": {"A": "1"}}})
    assert (second.id, second.rubric, second.metadata) == ("s-2", "./dog.rubric", {"k": 1})
    assert (third.id, third.rubric, third.metadata) == ("line-3", None, {})


def test_letta_row_fields_in_a_json_array_too(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps([{"sample_id": "x", "input": "a", "rubric_path": "r.txt"}]), encoding="utf-8")
    (sample,) = iter_samples(path)
    assert (sample.id, sample.rubric) == ("x", "r.txt")


@pytest.mark.parametrize(("fields", "expected"), [
    ({"id": "a", "sample_id": "b"}, ":1: give the id as id or sample_id (letta-evals), not both"),
    ({"id": "a", "rubric": "inline {{ submission }}", "rubric_path": "r.txt"},
     ":1: sample 'a': rubric_path: give rubric (text or a file) or rubric_path (letta-evals), not both"),
    ({"id": "a", "rubric_path": "my rubric"}, ":1: sample 'a': rubric_path: 'my rubric' cannot be told from rubric "
                                              "text (a path with spaces); name the file .txt, .md, .j2 or .jinja"),
    ({"id": "a", "rubric_path": 3}, ":1: sample 'a': rubric_path: expected the path of a rubric file"),
    ({"id": "a", "extra_vars": {"x": 1}, "metadata": {"extra_vars": {}}},
     ":1: sample 'a': give extra_vars or metadata.extra_vars, not both"),
])
def test_letta_row_field_problems_name_the_row(tmp_path: Path, fields: dict[str, Any], expected: str) -> None:
    path = write_lines(tmp_path, [row(input="x", **fields)])
    _, problems = check_dataset(path)
    assert len(problems) == 1 and problems[0].startswith(f"{path}{expected}"), problems
