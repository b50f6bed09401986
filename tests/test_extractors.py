"""Extractors: which part of a trajectory a grader judges."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from evals_cli.models.grader_specs.extractors import EXTRACTORS, check_extractor, extract
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn


def call(name: str, arguments: dict[str, Any] | None, result: str, raw: str | None = None) -> ToolCall:
    return ToolCall(id=f"id-{name}", name=name, arguments=arguments,
                    raw_arguments=raw if raw is not None else json.dumps(arguments), result=result)


@pytest.fixture
def trajectory() -> Trajectory:
    """Two user turns with text, tool calls, silent steps and an unparseable call."""
    return Trajectory(turns=[
        Turn(user="What is in .env?", steps=[
            Step(content="Let me look.", tool_calls=[call("list_files", {"directory": "."}, ".env\nsrc/")]),
            Step(content=None, tool_calls=[call("read_file", {"path": ".env"}, "DB_HOST=localhost")]),
            Step(content="It holds DB_HOST."),
        ]),
        Turn(user="And the port?", steps=[
            Step(content="", tool_calls=[call("read_file", None, "Error: bad JSON", raw='{"path": ')]),
            Step(content="", tool_calls=[call("read_file", {"path": "config.ini"}, "PORT=5432")]),
            Step(content="ANSWER: 5432 (draft)\nFinal ANSWER:  5432  "),
        ]),
    ])


def run(name: str, trajectory: Trajectory, **config: Any) -> str:
    return extract(name, trajectory, config)


def test_registry_holds_the_documented_extractors() -> None:
    assert set(EXTRACTORS) == {"last_assistant", "first_assistant", "all_assistant", "last_turn",
                               "tool_arguments", "tool_output", "pattern", "after_marker"}
    for entry in EXTRACTORS.entries():
        assert entry.impl.name == entry.kind and entry.impl.description


def test_last_assistant(trajectory: Trajectory) -> None:
    assert run("last_assistant", trajectory) == "ANSWER: 5432 (draft)\nFinal ANSWER:  5432  "


def test_last_assistant_skips_steps_without_text() -> None:
    traj = Trajectory(turns=[Turn(steps=[Step(content="answer"), Step(content=None, tool_calls=[
        call("t", {}, "r")]), Step(content="")])])
    assert run("last_assistant", traj) == "answer"


def test_first_assistant(trajectory: Trajectory) -> None:
    assert run("first_assistant", trajectory) == "Let me look."


def test_all_assistant_joins_with_newlines(trajectory: Trajectory) -> None:
    assert run("all_assistant", trajectory) == \
        "Let me look.\nIt holds DB_HOST.\nANSWER: 5432 (draft)\nFinal ANSWER:  5432  "


def test_all_assistant_custom_separator(trajectory: Trajectory) -> None:
    assert run("all_assistant", trajectory, separator=" | ").startswith("Let me look. | It holds DB_HOST. | ANSWER")


def test_last_turn_only_has_the_last_turns_text(trajectory: Trajectory) -> None:
    assert run("last_turn", trajectory) == "ANSWER: 5432 (draft)\nFinal ANSWER:  5432  "
    first_turn_only = trajectory.scoped(0)
    assert run("last_turn", first_turn_only) == "Let me look.\nIt holds DB_HOST."


def test_tool_arguments_last_call_of_any_tool(trajectory: Trajectory) -> None:
    assert json.loads(run("tool_arguments", trajectory)) == {"path": "config.ini"}


def test_tool_arguments_for_one_tool(trajectory: Trajectory) -> None:
    assert json.loads(run("tool_arguments", trajectory, tool="list_files")) == {"directory": "."}
    assert run("tool_arguments", trajectory, tool="never_called") == ""


def test_tool_arguments_all_calls_one_json_per_line(trajectory: Trajectory) -> None:
    lines = run("tool_arguments", trajectory, tool="read_file", all=True).split("\n")
    assert len(lines) == 3
    assert json.loads(lines[0]) == {"path": ".env"}
    # unparseable arguments are given as the raw string, JSON-quoted
    assert json.loads(lines[1]) == '{"path": '
    assert json.loads(lines[2]) == {"path": "config.ini"}


def test_tool_arguments_are_key_sorted() -> None:
    traj = Trajectory(turns=[Turn(steps=[Step(tool_calls=[call("t", {"b": 1, "a": 2}, "")])])])
    assert run("tool_arguments", traj) == '{"a": 2, "b": 1}'


def test_tool_output(trajectory: Trajectory) -> None:
    assert run("tool_output", trajectory) == "PORT=5432"
    assert run("tool_output", trajectory, tool="list_files") == ".env\nsrc/"
    assert run("tool_output", trajectory, tool="read_file", all=True) == \
        "DB_HOST=localhost\nError: bad JSON\nPORT=5432"
    assert run("tool_output", trajectory, tool="missing") == ""


def test_pattern_uses_group_one_when_the_pattern_has_groups(trajectory: Trajectory) -> None:
    assert run("pattern", trajectory, pattern=r"ANSWER:\s*(\d+)") == "5432"


def test_pattern_without_groups_gives_the_whole_match(trajectory: Trajectory) -> None:
    assert run("pattern", trajectory, pattern=r"\(\w+\)") == "(draft)"


def test_pattern_explicit_and_named_groups(trajectory: Trajectory) -> None:
    assert run("pattern", trajectory, pattern=r"(ANSWER): (\d+)", group=2) == "5432"
    assert run("pattern", trajectory, pattern=r"(ANSWER): (\d+)", group=0) == "ANSWER: 5432"
    assert run("pattern", trajectory, pattern=r"(?P<port>\d{4})", group="port") == "5432"


def test_pattern_non_participating_group_is_empty(trajectory: Trajectory) -> None:
    assert run("pattern", trajectory, pattern=r"(nothing)?ANSWER") == ""


def test_pattern_only_searches_the_last_message_by_default(trajectory: Trajectory) -> None:
    assert run("pattern", trajectory, pattern=r"DB_(\w+)") == ""
    assert run("pattern", trajectory, pattern=r"DB_(\w+)", scope="all_assistant") == "HOST"


def test_pattern_no_match_is_empty(trajectory: Trajectory) -> None:
    assert run("pattern", trajectory, pattern=r"zzz(\d)") == ""


def test_after_marker_uses_the_last_marker_and_strips(trajectory: Trajectory) -> None:
    assert run("after_marker", trajectory, marker="ANSWER:") == "5432"
    assert run("after_marker", trajectory, marker="(draft)") == "Final ANSWER:  5432"
    assert run("after_marker", trajectory, marker="NOT THERE") == ""


REQUIRED = {"pattern": {"pattern": "(x)"}, "after_marker": {"marker": "M:"}}


@pytest.mark.parametrize("name", sorted(EXTRACTORS))
@pytest.mark.parametrize("traj", [Trajectory(), Trajectory(turns=[Turn(user="hi")]),
                                  Trajectory(turns=[Turn(user="hi", steps=[Step(content=None)])])],
                         ids=["no-turns", "no-steps", "no-content"])
def test_every_extractor_gives_empty_text_on_empty_trajectories(name: str, traj: Trajectory) -> None:
    config = REQUIRED.get(name, {})
    check_extractor(name, config)
    assert run(name, traj, **config) == ""


# --- check_extractor ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "config"), [
    ("last_assistant", {}), ("all_assistant", {"separator": "; "}), ("tool_arguments", {"tool": "t", "all": True}),
    ("tool_output", {"tool": "t"}), ("pattern", {"pattern": r"(\d+)", "group": 1, "scope": "all_assistant"}),
    ("after_marker", {"marker": "ANSWER:"}),
])
def test_check_extractor_accepts_valid_configs(name: str, config: dict[str, Any]) -> None:
    check_extractor(name, config)


def test_unknown_extractor_with_hint() -> None:
    with pytest.raises(ValueError) as info:
        check_extractor("last_asistant", {})
    message = str(info.value)
    assert message.startswith("unknown extractor 'last_asistant'; did you mean 'last_assistant'? extractors: ")
    assert "after_marker" in message


def test_unknown_extractor_without_close_match_lists_all() -> None:
    with pytest.raises(ValueError) as info:
        check_extractor("zzzz", {})
    message = str(info.value)
    assert "did you mean" not in message
    assert all(name in message for name in EXTRACTORS)


def test_unknown_option() -> None:
    with pytest.raises(ValueError, match=r"extractor 'last_assistant' has no option colour; options: none"):
        check_extractor("last_assistant", {"colour": "red"})
    with pytest.raises(ValueError, match=r"extractor 'tool_output' has no option pattern; options: tool, all"):
        check_extractor("tool_output", {"pattern": "x"})


@pytest.mark.parametrize(("name", "option"), [("pattern", "pattern"), ("after_marker", "marker")])
def test_missing_required_option(name: str, option: str) -> None:
    with pytest.raises(ValueError, match=f"extractor '{name}' needs extractor_config.{option}"):
        check_extractor(name, {})


def test_invalid_regex() -> None:
    with pytest.raises(ValueError, match="extractor_config.pattern is not a valid regex"):
        check_extractor("pattern", {"pattern": "(unclosed"})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"pattern": r"ANSWER: (\d+)", "group": 2}, "group 2 is not a group of the pattern (it has 1 groups)"),
        ({"pattern": "no groups", "group": 1}, "group 1 is not a group of the pattern (it has 0 groups)"),
        ({"pattern": r"(?P<port>\d+)", "group": "host"}, "group 'host' is not a group of the pattern"),
    ],
)
def test_group_the_pattern_does_not_have_is_rejected_up_front(config: dict[str, Any], message: str) -> None:
    """An earlier version accepted these and raised IndexError ('no such group') at grading time."""
    with pytest.raises(ValueError, match=re.escape(f"extractor_config.{message}")):
        check_extractor("pattern", config)


@pytest.mark.parametrize("group", [0, 1, "port"])
def test_groups_the_pattern_has_are_accepted(group: int | str) -> None:
    check_extractor("pattern", {"pattern": r"(?P<port>\d+)", "group": group})


@pytest.mark.parametrize("group", [[1], {"n": 1}])
def test_unhashable_group_is_a_value_error(group: Any) -> None:
    with pytest.raises(ValueError, match="extractor_config.group"):
        check_extractor("pattern", {"pattern": "(a)", "group": group})


# --- letta-evals' options: pattern.search_all, after_marker.include_marker, and where they look ---------------


def test_pattern_search_all_joins_every_match_with_a_space(trajectory: Trajectory) -> None:
    assert run("pattern", trajectory, pattern=r"\d+", search_all=True) == "5432 5432"
    assert run("pattern", trajectory, pattern=r"ANSWER:\s*(\d+)", search_all=True) == "5432 5432"
    assert run("pattern", trajectory, pattern=r"(\w+):\s*(\d+)", search_all=True, group=2,
               separator=",") == "5432,5432"
    assert run("pattern", trajectory, pattern=r"zzz", search_all=True) == ""


def test_pattern_search_all_is_bounded_like_one_search(monkeypatch: pytest.MonkeyPatch) -> None:
    from evals_cli import safe_regex

    monkeypatch.setenv(safe_regex.TIMEOUT_ENV, "0.1")
    hostile = Trajectory(turns=[Turn(user="u", steps=[Step(content="a" * 60 + "!")])])
    with pytest.raises(safe_regex.RegexTimeout, match="EVALS_REGEX_TIMEOUT"):
        run("pattern", hostile, pattern="(a|aa)+$", search_all=True)


def test_any_assistant_scope_takes_the_most_recent_message_with_a_match(trajectory: Trajectory) -> None:
    # the last message has no DB_: letta-evals looks back through the earlier ones
    assert run("pattern", trajectory, pattern=r"DB_(\w+)", scope="any_assistant") == "HOST"
    assert run("pattern", trajectory, pattern=r"\d+", scope="any_assistant") == "5432"
    assert run("after_marker", trajectory, marker="holds", scope="any_assistant") == "DB_HOST."
    assert run("after_marker", trajectory, marker="holds") == ""  # the default: the last message only


def test_after_marker_include_marker_and_first_occurrence(trajectory: Trajectory) -> None:
    assert run("after_marker", trajectory, marker="ANSWER:", include_marker=True) == "ANSWER:  5432"
    assert run("after_marker", trajectory, marker="ANSWER:", occurrence="first") == \
        "5432 (draft)\nFinal ANSWER:  5432"
    assert run("after_marker", trajectory, marker="ANSWER:", occurrence="first", include_marker=True) == \
        "ANSWER: 5432 (draft)\nFinal ANSWER:  5432"


@pytest.mark.parametrize(("name", "config", "expected"), [
    ("pattern", {"pattern": "x", "scope": "everywhere"}, "extractor_config.scope is 'everywhere'; expected one of"),
    ("after_marker", {"marker": "M", "occurrence": "middle"}, "extractor_config.occurrence is 'middle'"),
    ("path/custom.txt:fn", {}, "neither a built-in nor 'path/to/file.py:function'"),
    ("custom.py:not-a-name", {}, "neither a built-in nor"),
])
def test_bad_options_and_refs_are_field_errors(name: str, config: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError, match=re.escape(expected)):
        check_extractor(name, config)


def test_a_custom_extractor_ref_takes_any_options_at_spec_time() -> None:
    """Its file and signature are checked when the grader is built (the suite's folder is known there)."""
    check_extractor("extractors/mine.py:pick", {"anything": 1, "marker": None})
    check_extractor("mine.py:pick", {})
