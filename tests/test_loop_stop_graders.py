"""no_loops (repeats, runs, cycles) and stop_behavior (premature_stop, no_stop, max_steps)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evals_cli.graders.base import GraderContext
from evals_cli.graders.kinds.no_loops import NoLoopsGrader, NoLoopsSpec
from evals_cli.graders.kinds.stop_behavior import StopBehaviorGrader, StopBehaviorSpec, completion
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory
from tests.trajectory_builders import c, run, traj

ENV = {"path": ".env"}


def loops(**spec: Any) -> NoLoopsGrader:
    return NoLoopsGrader("loops", NoLoopsSpec.model_validate(spec), GraderContext(Path(".")))


def stop(**spec: Any) -> StopBehaviorGrader:
    return StopBehaviorGrader("stop", StopBehaviorSpec.model_validate(spec), GraderContext(Path(".")))


def needs(*tools: str) -> Sample:
    return Sample(input="q", expected_tool_order=list(tools))


# --- no_loops ---------------------------------------------------------------------------------------------------


def test_no_calls_and_distinct_calls_pass() -> None:
    assert run(loops(), traj()).rationale == "no tool calls: nothing to check"
    result = run(loops(), traj(c("read_file", ENV), c("read_file", {"path": "b"}), c("list_files", {})))
    assert result.score == 1.0
    assert result.rationale == ("3 call(s): none made more than 2 times in total or 1 in a row, "
                                "no cycle repeated 2 times")
    assert result.metadata == {"loops": []}


def test_the_same_call_twice_in_a_row_is_a_loop_even_with_keys_reordered() -> None:
    result = run(loops(), traj(c("t", {"a": 1, "b": 2}), c("t", {"b": 2, "a": 1})))
    assert result.score == 0.0
    assert result.rationale == 'loop: t(a=1, b=2) called 2 times in a row (max 1)'
    assert result.metadata["loops"] == [{"kind": "consecutive", "call": "t(a=1, b=2)", "count": 2, "limit": 1,
                                         "first_index": 0}]


def test_total_repeats_count_calls_that_are_not_adjacent() -> None:
    trajectory = traj(c("read_file", ENV), "x", c("read_file", ENV), "y", c("read_file", ENV))
    result = run(loops(), trajectory)
    assert result.score == 0.0
    assert result.rationale == 'loop: read_file(path=".env") called 3 times (max 2)'
    assert run(loops(max_repeats=3), trajectory).score == 1.0


def test_a_long_run_reports_both_limits_with_counts() -> None:
    result = run(loops(), traj(*[c("read_file", ENV)] * 4))
    assert result.rationale == ('loop: read_file(path=".env") called 4 times (max 2); '
                                'read_file(path=".env") called 4 times in a row (max 1)')
    assert run(loops(max_repeats=4, max_consecutive=4), traj(*[c("read_file", ENV)] * 4)).score == 1.0


def test_same_tool_with_other_arguments_is_not_a_loop() -> None:
    assert run(loops(), traj(*[c("read_file", {"path": f"f{i}"}) for i in range(6)])).score == 1.0


def test_a_b_a_b_cycle() -> None:
    a, b = c("list_files", {"directory": "."}), c("read_file", ENV)
    result = run(loops(), traj(a, b, a, b))
    assert result.score == 0.0
    assert result.rationale == ('loop: cycle list_files(directory=".") → read_file(path=".env") repeated 2 times in a '
                                "row (from calls[0])")
    assert run(loops(max_cycle_length=0), traj(a, b, a, b)).score == 1.0  # cycles off
    assert run(loops(min_cycle_repeats=3), traj(a, b, a, b)).score == 1.0
    assert run(loops(min_cycle_repeats=3, max_repeats=9), traj(a, b, a, b, a, b)).score == 0.0


def test_cycle_of_three_starting_late_is_reported_once() -> None:
    a, b, x = c("a"), c("b"), c("c")
    result = run(loops(max_repeats=9), traj(c("start"), a, b, x, a, b, x, a, b, x))
    assert [loop["kind"] for loop in result.metadata["loops"]] == ["cycle"]
    assert "cycle a() → b() → c() repeated 3 times in a row (from calls[1])" in result.rationale


def test_parallel_duplicates_in_one_step_count() -> None:
    assert run(loops(), traj([c("read_file", ENV), c("read_file", ENV)])).score == 0.0


def test_malformed_arguments_compare_by_raw_text() -> None:
    assert run(loops(), traj(c("t", raw="{bad"), c("t", raw="{bad"))).score == 0.0
    assert run(loops(), traj(c("t", raw="{bad"), c("t", raw="{worse"))).score == 1.0


def test_ignored_tools_are_never_counted() -> None:
    poll = c("poll_status", {"job": "1"})
    assert run(loops(ignore=["poll_*"]), traj(*[poll] * 5)).score == 1.0
    left_out = run(loops(ignore=["poll_*"]), traj(*[poll] * 5))
    assert not left_out.applicable  # what it left out is named with its rule, never "no tool calls"
    assert left_out.rationale == "5 calls excluded (ignore 'poll_*' matched poll_status): nothing left to check"
    assert run(loops(), traj(*[poll] * 5)).score == 0.0


def test_unicode_tool_names_in_loops() -> None:
    result = run(loops(), traj(c("検索", {"q": "é"}), c("検索", {"q": "é"})))
    assert result.rationale == 'loop: 検索(q="é") called 2 times in a row (max 1)'


def replies(*answers: str | None) -> Trajectory:
    from tests.trajectory_builders import turn

    return Trajectory(turns=[turn(answer=a, user=f"m{i}") for i, a in enumerate(answers)])


def test_replies_are_held_to_the_same_limits_over_turns() -> None:
    assert run(loops(), replies("ok", "ok", "ok")).applicable is False  # off by default: replies are not counted
    assert run(loops(replies=True), replies("a", "b", "c")).score == 1.0
    twice = run(loops(replies=True), replies("Checking.", "Checking.  "))
    assert twice.score == 0.0 and twice.rationale == 'loop: reply "Checking." sent 2 turns in a row (max 1)'
    spaced = run(loops(replies=True, max_repeats=3), replies("a b", "x", "a\n b", "y", "a  b"))
    assert spaced.score == 1.0  # three times, not in a row: within max_repeats 3
    thrice = run(loops(replies=True), replies("a b", "x", "a\n b", "y", "a  b"))
    assert thrice.rationale == 'loop: reply "a b" sent in 3 turns (max 2)'
    assert thrice.metadata["reply_loops"][0]["first_index"] == 0  # the turn, from 0
    cycle = run(loops(replies=True, max_repeats=9), replies("which order?", "not found", "which order?", "not found"))
    assert cycle.rationale == ('loop: cycle of replies "which order?" → "not found" repeated 2 times in a row '
                               "(from turn 1)")
    skipped = run(loops(replies=True), replies("same", None, "same"))  # a turn without a reply is skipped
    assert skipped.metadata["reply_loops"][0]["kind"] == "consecutive"
    assert run(loops(replies=True), replies(None, "")).rationale == "no tool calls and no replies: nothing to check"


def test_replies_and_calls_are_counted_apart() -> None:
    from tests.trajectory_builders import turn

    trajectory = Trajectory(turns=[turn(c("get", {"id": 1}), answer="one", user="a"),
                                   turn(c("get", {"id": 2}), answer="two", user="b")])
    result = run(loops(replies=True), trajectory)
    assert result.score == 1.0 and result.metadata == {"loops": [], "reply_loops": []}
    assert result.rationale == ("2 call(s): none made more than 2 times in total or 1 in a row, no cycle repeated 2 "
                                "times; 2 replies: none sent more than 2 times in total or 1 in a row, no cycle "
                                "repeated 2 times")


@pytest.mark.parametrize("bad", [{"max_repeats": 0}, {"min_cycle_repeats": 1}, {"max_consecutive": 0},
                                 {"replies": "yes"}, {"replies": 1}, {"replies": True, "scope": "reply"}])
def test_no_loops_limits_are_validated(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        NoLoopsSpec.model_validate(bad)


# --- stop_behavior ----------------------------------------------------------------------------------------------


def checks(grade: Any) -> dict[str, float]:
    return {name: check["score"] for name, check in grade.metadata["checks"].items()}


def test_a_good_stop_passes_every_check() -> None:
    result = run(stop(), traj("list_files", "read_file"), needs("list_files", "read_file"))
    assert result.score == 1.0
    assert checks(result) == {"premature_stop": 1.0, "no_stop": 1.0, "max_steps": 1.0}
    assert result.rationale == ("passed premature_stop: stopped after the required calls (list_files, read_file); "
                                "no_stop: no tool calls after the required calls were complete; "
                                "max_steps: stopped by itself (stop_reason completed)")
    assert result.metadata["failed"] == []


def test_premature_stop() -> None:
    result = run(stop(), traj("read_file"), needs("read_file", "http_get"))
    assert result.score == 0.0
    assert checks(result) == {"premature_stop": 0.0, "no_stop": 1.0, "max_steps": 1.0}
    assert result.rationale == ("failed premature_stop — premature_stop: stopped before calling required tool(s) "
                                "'http_get'")
    assert result.metadata["checks"]["no_stop"]["rationale"] == "the required calls never completed: nothing to stop after"


def test_no_stop_extra_calls_and_the_allowance() -> None:
    trajectory = traj(c("read_file", ENV), c("list_files", {"directory": "."}))
    result = run(stop(), trajectory, needs("read_file"))
    assert checks(result)["no_stop"] == 0.0
    assert result.rationale == ("failed no_stop — no_stop: 1 tool call(s) after the required calls were complete "
                                '(max 0): list_files(directory=".")')
    allowed = run(stop(max_extra_calls=1), trajectory, needs("read_file"))
    assert allowed.score == 1.0
    assert allowed.metadata["checks"]["no_stop"]["rationale"] == (
        "1 tool call(s) after the required calls were complete, within the 1 allowed")


def test_mutating_after_completion_fails_even_within_the_allowance() -> None:
    trajectory = traj(c("read_file", ENV), c("write_file", {"path": "a", "content": "b"}))
    result = run(stop(mutating=["write_*", "delete_*"], max_extra_calls=5), trajectory, needs("read_file"))
    assert result.score == 0.0
    assert result.metadata["checks"]["no_stop"]["rationale"] == (
        'mutating call(s) after the required calls were complete: write_file(path="a", content="b")')
    both = run(stop(mutating=["write_*"]), trajectory, needs("read_file"))
    assert both.metadata["checks"]["no_stop"]["rationale"] == (
        '1 tool call(s) after the required calls were complete (max 0): write_file(path="a", content="b"); '
        "mutating: write_file")


def test_mutating_before_completion_is_not_no_stop() -> None:
    trajectory = traj(c("write_file", {"path": "a"}), c("read_file", ENV))
    assert run(stop(mutating=["write_*"]), trajectory, needs("read_file")).score == 1.0


def test_max_steps() -> None:
    trajectory = traj(*[c("read_file", {"path": str(i)}) for i in range(3)], answer=None, stop="max_steps")
    result = run(stop(), trajectory, needs("read_file", "http_get"))
    assert checks(result) == {"premature_stop": 1.0, "no_stop": 1.0, "max_steps": 0.0}
    assert result.metadata["checks"]["premature_stop"]["rationale"].startswith("not applicable")
    assert result.rationale == ("failed max_steps — max_steps: cut off at the step limit (stop_reason max_steps): "
                                "no final answer of its own")


def test_nothing_required_means_any_call_is_too_many() -> None:
    result = run(stop(), traj("list_files"), needs())
    assert checks(result)["no_stop"] == 0.0
    assert result.rationale == "failed no_stop — no_stop: 1 tool call(s) though none were needed (max 0): list_files()"
    clean = run(stop(), traj(), needs())
    assert clean.score == 1.0
    assert clean.rationale == ("passed premature_stop: nothing was required; it stopped by itself; "
                               "no_stop: no tool calls, and none were needed; max_steps: stopped by itself "
                               "(stop_reason completed)")


def test_no_requirement_at_all_is_nothing_to_check() -> None:
    result = run(stop(), traj("anything"), Sample(input="q"))
    assert result.score == 1.0
    assert result.metadata["checks"]["premature_stop"]["rationale"] == "no required tools: nothing to check"


def test_selected_checks_and_mean() -> None:
    trajectory = traj(c("read_file", ENV), c("list_files", {}), answer=None, stop="max_steps")
    only = run(stop(checks=["max_steps"]), trajectory, needs("read_file"))
    assert list(only.metadata["checks"]) == ["max_steps"]
    mean = run(stop(combine="mean"), trajectory, needs("read_file"))
    assert mean.score == 0.0  # premature n/a (left out, not a 1.0), no_stop 0, max_steps 0
    assert mean.metadata["failed"] == ["no_stop", "max_steps"]
    assert mean.rationale.startswith("failed no_stop, max_steps — no_stop: ")
    done = traj(c("read_file", ENV), answer="localhost")  # premature 1, no_stop n/a, max_steps 1
    half = traj(c("list_files", {}), answer="guess")  # premature 0, no_stop n/a, max_steps 1
    assert run(stop(combine="mean"), done, needs("read_file")).score == 1.0
    assert run(stop(combine="mean"), half, needs("read_file")).score == pytest.approx(1 / 2)


def test_parallel_completion_step_and_calls_in_the_same_step() -> None:
    # the call made alongside the completing call is not "after" it
    trajectory = traj([c("read_file", ENV), c("list_files", {}), c("grep", {})])
    assert run(stop(), trajectory, needs("list_files", "read_file")).score == 1.0


def test_malformed_and_unknown_calls_do_not_complete_the_requirement() -> None:
    retry = traj(c("read_file", raw="{bad"), c("read_file", ENV))
    assert run(stop(), retry, needs("read_file")).score == 1.0
    unknown = traj(c("read_secret", {}, unknown=True))
    result = run(stop(), unknown, needs("read_*"))
    assert checks(result)["premature_stop"] == 0.0


def test_required_from_spec_globs_and_multiset() -> None:
    sample = needs("ignored")
    assert run(stop(required=["read_*", "read_*"]), traj("read_a", "read_b"), sample).score == 1.0
    twice = run(stop(required=["read_*", "read_*"]), traj("read_a"), sample)
    assert "stopped before calling required tool(s) 'read_*'" in twice.rationale


def test_completion_helper() -> None:
    trajectory = traj("a", ["b", "c"], "d")
    calls = trajectory.tool_calls
    assert completion([], calls, [[0], [1, 2], [3]]) == (-1, [])
    assert completion(["c", "a"], calls, [[0], [1, 2], [3]]) == (1, [])
    assert completion(["z", "a"], calls, [[0], [1, 2], [3]]) == (None, ["z"])


def test_stop_behavior_spec_validation() -> None:
    with pytest.raises(ValidationError):
        StopBehaviorSpec.model_validate({"checks": []})
    with pytest.raises(ValidationError):
        StopBehaviorSpec.model_validate({"checks": ["premature"]})
    assert StopBehaviorSpec.model_validate({"checks": ["no_stop", "no_stop"]}).checks == ["no_stop"]


def test_stop_reads_the_whole_conversation() -> None:
    from tests.trajectory_builders import turn

    two = Trajectory(turns=[turn("read_file", user="1"), turn("http_get", user="2")])
    assert run(stop(), two, Sample(input=["1", "2"], expected_tool_order=["read_file", "http_get"])).score == 1.0
