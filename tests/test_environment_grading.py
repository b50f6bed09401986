"""final_state (each matcher, unchanged, deleted, exists, no_other_changes, scores and rationale wording) and
stop_behavior's state-based no_stop. Trajectories are made by running calls through the real toolbox, so the
effects and state_changes graded are the ones a run records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evals_cli.graders.base import GraderContext
from evals_cli.graders.kinds.final_state import FinalStateGrader, FinalStateSpec
from evals_cli.graders.kinds.stop_behavior import StopBehaviorGrader, StopBehaviorSpec
from evals_cli.models.expected_state import ExpectedState
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, Trajectory, Turn
from tests.helpers import SyncToolbox
from tests.trajectory_builders import run

ENV = {
    "files": {"config.json": json.dumps({"host": "localhost", "port": 8080, "db": {"port": 5432}}),
              "README.md": "# demo", "tmp/cache.txt": "x", "notes.txt": "Meeting at 10"},
    "records": {"orders": [{"id": "1", "status": "delivered", "amount": 40},
                           {"id": "2", "status": "shipped", "amount": 9.5}]},
}
TOOLS = {
    "write": ToolSpec.model_validate({"parameters": {"path": "p", "content": "c"}, "effect": "files.write"}),
    "rm": ToolSpec.model_validate({"parameters": {"path": "p"}, "effect": "files.delete"}),
    "read": ToolSpec.model_validate({"parameters": {"path": "p"}, "effect": "files.read"}),
    "refund": ToolSpec.model_validate({"parameters": {"id": "i", "amount": "a"}, "effect": {
        "records.update": "orders", "set": {"status": "refunded"}, "fields": {"amount": "refunded"}}}),
}


def acted(*calls: tuple[str, dict[str, Any]], expected: dict[str, Any] | None = None,
          env: dict[str, Any] | None = None) -> tuple[Sample, Trajectory]:
    """A sample with the environment, and the trajectory of making these calls (one step each) against it."""
    sample = Sample.model_validate({"id": "s", "input": "go", "environment": ENV if env is None else env,
                                    **({"expected_state": expected} if expected else {})})
    box = SyncToolbox(TOOLS, sample.environment)
    steps = [Step(tool_calls=[box.call(f"c{i}", name, json.dumps(args))]) for i, (name, args) in enumerate(calls)]
    trajectory = Trajectory(turns=[Turn(user="go", steps=[*steps, Step(content="done")])])
    trajectory.state_changes = box.state_changes()
    return sample, trajectory


def final(**spec: Any) -> FinalStateGrader:
    return FinalStateGrader("final", FinalStateSpec.model_validate(spec), GraderContext(Path(".")))


def grade(expected: dict[str, Any], *calls: tuple[str, dict[str, Any]], **spec: Any) -> Grade:
    sample, trajectory = acted(*calls, expected=expected)
    return run(final(**spec), trajectory, sample)


CONFIG_3000 = json.dumps({"host": "localhost", "port": 3000, "db": {"port": 5432}})


def test_json_subset_passes_and_names_the_wrong_value() -> None:
    want = {"files": {"config.json": {"json_subset": {"port": 3000, "db": {"port": 5432}}}}}
    assert grade(want, ("write", {"path": "config.json", "content": CONFIG_3000})).score == 1.0
    wrong = grade(want, ("write", {"path": "config.json", "content": json.dumps({"port": 3000, "db": {"port": 1}})}))
    assert wrong.score == 0.0 and wrong.rationale == "0/1 expectations met; config.json: db.port is 1, expected 5432"
    untouched = grade(want)
    assert "config.json: port is 8080, expected 3000" in untouched.rationale
    broken = grade(want, ("write", {"path": "config.json", "content": "{port: 3000"}))
    assert "config.json: not valid JSON" in broken.rationale


@pytest.mark.parametrize(("matcher", "content", "met"), [
    ("Meeting at 11", "Meeting at 11", True),
    ("Meeting at 11", "meeting at 11", False),
    ({"exact": "Meeting at 11", "case_insensitive": True}, "MEETING AT 11", True),
    ({"regex": "^Meeting at 1[01]$"}, "Meeting at 11", True),
    ({"regex": "^Meeting at 1[01]$"}, "Meeting at 12", False),
    ({"contains": "at 11"}, "Meeting at 11 sharp", True),
    ({"one_of": ["Meeting at 11", "Meeting at 11."]}, "Meeting at 11.", True),
    ({"one_of": ["Meeting at 11", "Meeting at 11."]}, "Meeting at 12", False),
])
def test_file_text_matchers(matcher: Any, content: str, met: bool) -> None:
    result = grade({"files": {"notes.txt": matcher}}, ("write", {"path": "notes.txt", "content": content}))
    assert result.score == (1.0 if met else 0.0), result.rationale
    if not met:
        assert result.rationale.startswith(f"0/1 expectations met; notes.txt: text is {content!r}, expected")


def test_a_file_expected_but_missing() -> None:
    result = grade({"files": {"out.txt": "hello"}})
    assert result.rationale == "0/1 expectations met; out.txt: does not exist, expected 'hello'"


@pytest.mark.parametrize(("fields", "amount", "met", "words"), [
    ({"status": "refunded", "refunded": 40}, 40, True, ""),
    ({"status": "refunded", "refunded": 40}, 30, False, "orders/1: refunded is 30, expected 40"),
    ({"refunded": {"exact": 40, "tolerance": 0.5}}, 40.25, True, ""),
    ({"status": {"one_of": ["refunded", "cancelled"]}}, 40, True, ""),
    ({"status": {"regex": "^REF", "case_insensitive": True}}, 40, True, ""),
    ({"status": {"contains": "fund"}}, 40, True, ""),
    ({"note": {"exact": "x"}}, 40, False, "orders/1: note is missing, expected 'x'"),
])
def test_record_field_matchers(fields: dict[str, Any], amount: float, met: bool, words: str) -> None:
    result = grade({"records": {"orders": {"1": fields}}}, ("refund", {"id": "1", "amount": amount}))
    assert result.score == (1.0 if met else 0.0), result.rationale
    assert words in result.rationale


def test_a_record_field_holding_an_object_compares_exactly_or_as_subset() -> None:
    env = {"records": {"users": [{"id": "u", "prefs": {"theme": "dark", "lang": "en"}}]}}
    sample, trajectory = acted(env=env, expected={"records": {"users": {"u": {
        "prefs": {"exact": {"theme": "dark"}, "subset": True}}}}})
    assert run(final(), trajectory, sample).score == 1.0
    sample, trajectory = acted(env=env, expected={"records": {"users": {"u": {"prefs": {"theme": "dark"}}}}})
    assert run(final(), trajectory, sample).score == 0.0  # a plain object: equal, not contained


def test_unchanged_deleted_exists() -> None:
    want = {"unchanged": ["README.md", "orders"], "deleted": ["tmp/cache.txt"], "exists": ["notes.txt", "orders/2"]}
    assert grade(want, ("rm", {"path": "tmp/cache.txt"})).score == 1.0
    bad = grade(want, ("write", {"path": "README.md", "content": "# changed"}), ("refund", {"id": "2", "amount": 1}),
                ("rm", {"path": "notes.txt"}))
    assert bad.score == 0.0
    assert "README.md: changed from '# demo' to '# changed', expected unchanged" in bad.rationale
    assert "orders/2: status changed from 'shipped' to 'refunded'; refunded added (1), expected unchanged" in bad.rationale
    assert "tmp/cache.txt: still exists, expected deleted" in bad.rationale
    assert "notes.txt: does not exist" in bad.rationale
    assert bad.rationale.startswith("1/5 expectations met; ")  # exists orders/2 holds


def test_no_other_changes_names_each_stray_change() -> None:
    want = {"files": {"config.json": {"json_subset": {"port": 3000}}}, "no_other_changes": True}
    ok = grade(want, ("write", {"path": "config.json", "content": CONFIG_3000}))
    assert ok.score == 1.0 and ok.rationale == "all 2 expectation(s) met (1 change(s) to the environment)"
    stray = grade(want, ("write", {"path": "config.json", "content": CONFIG_3000}),
                  ("write", {"path": "backup.json", "content": "{}"}), ("rm", {"path": "README.md"}))
    assert stray.rationale == ("1/2 expectations met; README.md: deleted, but no other changes were expected; "
                               "backup.json: created ('{}'), but no other changes were expected")


def test_fraction_scores_the_share_of_expectations_met() -> None:
    want = {"files": {"config.json": {"json_subset": {"port": 3000}}}, "unchanged": ["README.md"],
            "deleted": ["tmp/cache.txt"], "no_other_changes": True}
    result = grade(want, ("write", {"path": "config.json", "content": CONFIG_3000}), score="fraction")
    assert result.score == 0.75
    assert grade(want, ("write", {"path": "config.json", "content": CONFIG_3000})).score == 0.0  # binary default
    assert [e["met"] for e in result.metadata["expectations"]] == [True, True, False, True]


def test_the_graders_own_expected_state_wins_over_the_rows() -> None:
    sample, trajectory = acted(("rm", {"path": "README.md"}), expected={"exists": ["README.md"]})
    assert run(final(), trajectory, sample).score == 0.0
    assert run(final(expected_state={"deleted": ["README.md"]}), trajectory, sample).score == 1.0


def test_without_an_environment_or_an_expectation_it_is_not_applicable_never_a_silent_pass() -> None:
    plain = run(final(), Trajectory(), Sample(input="q", expected_state={"exists": ["a"]}))
    assert plain.applicable is False and "no environment" in plain.rationale
    sample, trajectory = acted()
    nothing = run(final(), trajectory, sample)
    assert nothing.applicable is False and "no expected_state" in nothing.rationale


def test_a_lost_final_state_is_an_error_not_a_score() -> None:
    sample, trajectory = acted(expected={"exists": ["README.md"]})
    trajectory.state_changes = None
    result = run(final(), trajectory, sample)
    assert result.score is None and result.error


def test_an_empty_or_malformed_expected_state_is_refused() -> None:
    with pytest.raises(ValidationError, match="an empty expected_state checks nothing"):
        ExpectedState.model_validate({})
    with pytest.raises(ValidationError, match="give json_subset or exact, not both"):
        ExpectedState.model_validate({"files": {"a": {"json_subset": {}, "exact": "x"}}})
    with pytest.raises(ValidationError, match="orders.1.status"):
        ExpectedState.model_validate({"records": {"orders": {"1": {"status": {"regex": "(", "exact": "x"}}}}})


# --- stop_behavior with state -------------------------------------------------------------------------------------

def stop(**spec: Any) -> StopBehaviorGrader:
    return StopBehaviorGrader("stop", StopBehaviorSpec.model_validate({"checks": ["no_stop"], **spec}),
                              GraderContext(Path(".")))


PORT = {"files": {"config.json": {"json_subset": {"port": 3000}}}}


def test_a_mutating_effect_after_the_expected_state_is_not_stopping() -> None:
    sample, trajectory = acted(("read", {"path": "config.json"}),
                               ("write", {"path": "config.json", "content": CONFIG_3000}),
                               ("read", {"path": "config.json"}),
                               ("write", {"path": "README.md", "content": "# updated"}), expected=PORT)
    result = run(stop(), trajectory, sample)
    assert result.score == 0.0
    words = result.metadata["checks"]["no_stop"]["rationale"]
    assert words.startswith("mutating effect(s) after the expected state was reached (after calls[1] "
                            "write(path=\"config.json\"")
    assert words.endswith(": write(path=\"README.md\", content=\"# updated\")")


def test_reads_after_the_expected_state_are_fine_and_an_unreached_state_is_not_applicable() -> None:
    sample, trajectory = acted(("write", {"path": "config.json", "content": CONFIG_3000}),
                               ("read", {"path": "config.json"}), expected=PORT)
    assert run(stop(), trajectory, sample).score == 1.0
    sample, trajectory = acted(("write", {"path": "README.md", "content": "x"}), expected=PORT)
    result = run(stop(), trajectory, sample)
    assert result.applicable is False and "never reached" in result.rationale


def test_state_and_required_tools_both_count_and_the_graders_expected_state_wins() -> None:
    sample, trajectory = acted(("write", {"path": "config.json", "content": CONFIG_3000}),
                               ("rm", {"path": "tmp/cache.txt"}), expected=PORT)
    assert run(stop(), trajectory, sample).score == 0.0
    # the grader's own expected state includes the delete, so nothing mutating follows it
    own = {"files": PORT["files"], "deleted": ["tmp/cache.txt"]}
    assert run(stop(expected_state=own), trajectory, sample).score == 1.0
    required = Sample.model_validate({**sample.model_dump(exclude_none=True), "expected_tool_order": ["write"]})
    result = run(stop(expected_state=own), trajectory, required)
    assert result.score == 0.0 and "1 tool call(s) after the required calls were complete" in result.rationale
