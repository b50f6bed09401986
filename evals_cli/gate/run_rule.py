"""The run's verdict: what the gate's root decided over the run's aggregates, said in words as a `GateResult`.
Kept apart from the sample rule: a run is decided from finished grades' aggregates (and the count of samples
that passed), never from one sample's grades."""

from __future__ import annotations

from dataclasses import dataclass

from evals_cli.models.results import GateResult, Reliability
from evals_cli.models.specs import AnyGate, LogicalGate, SimpleGate, WeightedAverageGate
from evals_cli.thresholds import UNDECIDED

NOTHING_TO_CHECK = "no sample had anything to check (every grade n/a)"


@dataclass(frozen=True)
class Verdict:
    """One (sub-)gate's decision: `text` reads as a clause of the gate message."""

    passed: bool | None
    metric: float | None
    text: str


def run_verdict(spec: AnyGate, verdict: Verdict, weights: dict[str, float], not_applicable: str,
                subgates: int, reliability: Reliability | None = None,
                counts: tuple[int, int] | None = None, per_sample: str | None = None) -> GateResult:
    """The run's verdict from the root's decision; the message says in words what was compared with what.
    `subgates`: the sub-gates a logical gate kept (those whose graders run). `per_sample`: how each sample was
    made of its repeats (gate.reducer), when the gate read reduced samples rather than runs."""
    op: str
    if isinstance(spec, LogicalGate):
        # metric: the share of sub-gates that passed; `and` needs all of them, `or` one
        op, aggregation = spec.operator, "logical"
        value = 1.0 if spec.operator == "and" or subgates == 0 else 1 / subgates
    else:
        op, value, aggregation = spec.op, spec.value, spec.aggregation
    warning = None
    if verdict.passed is None:
        message = UNDECIDED + _why_undecided(spec, verdict, weights, subgates)
    elif verdict.passed:
        runs = reliability is not None and reliability.repeats > 1 and per_sample is None
        warning = _few_passed(counts, "sample runs" if runs else "samples")
        message = f"Gate PASSED{f' (but {warning})' if warning else ''}: {verdict.text}"
    else:
        message = f"Gate FAILED: {verdict.text}"
    if per_sample is not None:
        message += f" (each sample: {per_sample})"
    return GateResult(passed=verdict.passed, metric=verdict.metric if verdict.passed is not None else None,
                      op=op, value=value, aggregation=aggregation, weights=weights, message=message,
                      not_applicable=not_applicable, warning=warning)


def _why_undecided(spec: AnyGate, verdict: Verdict, weights: dict[str, float], subgates: int) -> str:
    if isinstance(spec, SimpleGate) and not weights:
        return f"grader '{spec.metric_key}' did not run"
    if isinstance(spec, LogicalGate) and not subgates:
        return "none of the graders it names ran"
    if isinstance(spec, WeightedAverageGate) and spec.weights and not weights:
        return f"none of the graders its weights name ran ({', '.join(spec.weights)})"
    if NOTHING_TO_CHECK in verdict.text:  # graded, but n/a throughout: not the same as nothing graded
        return verdict.text
    return "no sample was graded" if verdict.metric is None else verdict.text


def _few_passed(counts: tuple[int, int] | None, unit: str = "samples") -> str | None:
    """'only 0 of 1 samples passed' when a gate passes while fewer than half the samples with a verdict did:
    a gate on averages can pass a run most of whose samples failed, and the verdict line must not hide it."""
    if counts is None:
        return None
    passed, decided = counts
    if decided and 2 * passed < decided:
        return f"only {passed} of {decided} {unit} passed"
    return None
