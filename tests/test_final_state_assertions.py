"""final_state's assertions over the world, graded directly: what the function is given, what it may return, and
that a function without a verdict leaves the grade without a score. The trajectories are made by running calls
through the real toolbox, so the world graded is the one a run records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.graders.base import GraderContext
from evals_cli.graders.kinds.final_state import FinalStateGrader, FinalStateSpec
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, Trajectory, Turn
from tests.helpers import SyncToolbox
from tests.trajectory_builders import run

ENV = {"records": {"orders": [{"id": "1", "status": "delivered", "amount": 40}]}, "files": {"a.txt": "x"}}
TOOLS = {"refund": ToolSpec.model_validate({"parameters": {"id": "i"}, "effect": {
    "records.update": "orders", "key": "id", "set": {"status": "refunded"}}})}
CHECKS = '''
def saw(final, initial, sample, status="refunded"):
    was, now = initial.records["orders"]["1"]["status"], final.records["orders"]["1"]["status"]
    return now == status, f"{sample.id}: {was} -> {now}"


def plain(final, initial, sample):
    return final.files["a.txt"] == "x"


def pair_of_wrong_types(final, initial, sample):
    return (True, 5)


def nothing(final, initial, sample):
    return None
'''


def _grade(tmp: Path, assertions: list[dict[str, Any]], refund: bool = True, env: Any = ENV, **spec: Any) -> Grade:
    (tmp / "checks.py").write_text(CHECKS)
    grader = FinalStateGrader("final", FinalStateSpec.model_validate({"assertions": assertions, **spec}),
                              GraderContext(tmp))
    sample = Sample.model_validate({"id": "s", "input": "go", **({"environment": env} if env else {})})
    box = SyncToolbox(TOOLS, sample.environment)
    steps = [Step(tool_calls=[box.call("c0", "refund", json.dumps({"id": "1"}))])] if refund else []
    trajectory = Trajectory(turns=[Turn(user="go", steps=[*steps, Step(content="done")])])
    trajectory.state_changes = box.state_changes() if env else None
    return run(grader, trajectory, sample)


def test_the_function_sees_the_final_and_initial_worlds_the_row_and_its_arguments(tmp_path: Path) -> None:
    met = _grade(tmp_path, [{"python": "checks.py:saw"}])
    assert met.score == 1.0 and met.metadata["expectations"] == [
        {"expectation": "assertion checks.py:saw", "met": True, "problem": None}]
    unmet = _grade(tmp_path, [{"python": "checks.py:saw", "arguments": {"status": "cancelled"},
                               "message": "the order must be cancelled"}])
    assert unmet.score == 0.0
    assert unmet.rationale == ("0/1 expectations met; checks.py:saw: the order must be cancelled; "
                               "s: delivered -> refunded")


def test_a_bare_bool_and_fraction_scoring(tmp_path: Path) -> None:
    grade = _grade(tmp_path, [{"python": "checks.py:plain"}, {"python": "checks.py:saw"}], refund=False,
                   score="fraction")
    assert grade.score == 0.5 and "checks.py:saw: s: delivered -> delivered" in grade.rationale


@pytest.mark.parametrize(("name", "said"), [
    ("pair_of_wrong_types", "returned a tuple (bool, int); return a bool or (bool, reason) with a str reason"),
    ("nothing", "returned NoneType"),
])
def test_a_wrong_return_type_is_no_score(tmp_path: Path, name: str, said: str) -> None:
    grade = _grade(tmp_path, [{"python": "checks.py:plain"}, {"python": f"checks.py:{name}"}])
    assert grade.score is None and grade.error is not None and said in grade.error
    assert f"assertions[1] checks.py:{name}" in grade.error


def test_without_an_environment_there_is_no_world_to_assert_on(tmp_path: Path) -> None:
    grade = _grade(tmp_path, [{"python": "checks.py:plain"}], refund=False, env=None)
    assert grade.score == 1.0 and not grade.applicable


def test_the_reference_must_name_a_file_and_a_function() -> None:
    with pytest.raises(ValueError, match="is not 'path/to/checks.py:function'"):
        FinalStateSpec.model_validate({"assertions": [{"python": "checks.py"}]})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        FinalStateSpec.model_validate({"assertions": [{"python": "checks.py:saw", "assert_value": False}]})
