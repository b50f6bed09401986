"""pass^k means every one of the k runs passed. A sample whose graded runs all passed but one of whose runs
errored is not known to pass^k: it must not count as one (issue 11: a count that is not true)."""

from __future__ import annotations

from evals_cli.gate.gate import Gate
from evals_cli.models.specs import GateSpec
from evals_cli.output.summary import Accumulator
from tests.run_factory import make_result


def test_an_errored_repeat_does_not_make_pass_hat_k() -> None:
    acc = Accumulator(Gate(GateSpec(value=0.8), ["answer"]), "suite", ["answer"], repeats=2)
    acc.add(make_result("a", {"answer": 1.0}, passed=True, repeat=0))
    acc.add(make_result("a", {"answer": 1.0}, error=("timeout", "took too long"), repeat=1))
    acc.add(make_result("b", {"answer": 1.0}, passed=True, repeat=0))
    acc.add(make_result("b", {"answer": 1.0}, passed=True, repeat=1))
    acc.add(make_result("c", {"answer": 0.0}, passed=False, repeat=0))
    acc.add(make_result("c", {"answer": 1.0}, error=("timeout", "took too long"), repeat=1))
    rel = acc.reliability()
    assert rel is not None and rel.samples == 3
    assert rel.pass_at_k == 2 / 3  # a and b passed at least once
    assert rel.pass_hat_k == 1 / 2  # b passed both runs; c failed one; a is unknown (one run errored): left out


def test_every_repeat_errored_for_every_sample_leaves_pass_hat_k_unknown() -> None:
    acc = Accumulator(Gate(GateSpec(value=0.8), ["answer"]), "suite", ["answer"], repeats=2)
    acc.add(make_result("a", {"answer": 1.0}, passed=True, repeat=0))
    acc.add(make_result("a", {"answer": 1.0}, error=("timeout", "took too long"), repeat=1))
    rel = acc.reliability()
    assert rel is not None and rel.pass_at_k == 1.0 and rel.pass_hat_k is None
