"""`kind: final_state`: the world as the agent left it, against the state the task should produce.

Tool calls say what the agent tried; the final state says what it did. Reading a config and writing the wrong
value, or clobbering the keys it did not mean to touch, passes every call-level check and fails here.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from evals_cli.environment.unread import is_unread
from evals_cli.environment.world import World
from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.graders.expectations import Outcome, evaluate
from evals_cli.graders.state_assertions import NoVerdict, StateAssertion, load_assertions, run_assertion
from evals_cli.models.expected_state import ExpectedState
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.grader_specs.fields import ScoreMode
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.world_values import normal_target
from evals_cli.tools.gold import GoldActionError, gold_world


class FinalStateSpec(GraderBase):
    """The final files and records against an expected state; binary, or the fraction of expectations met."""

    kind: Literal["final_state"] = "final_state"
    expected_state: ExpectedState | None = Field(
        default=None, description="Expected state for every sample; default the row's expected_state.")
    score: ScoreMode = Field(default="binary", description="binary: every expectation met; fraction: met/total.")
    assertions: list[StateAssertion] = Field(
        default_factory=list, description="Functions over the world (tau2-bench's env_assertions), each an "
        "expectation beside the expected state's: {python: checks.py:fn, arguments, message}, fn(final, initial, "
        "sample, **arguments) -> bool | (bool, reason). One that raises or returns anything else leaves the grade "
        "without a score (an error, never a fail).")


def expected_for(sample: Sample, own: ExpectedState | None) -> ExpectedState | None:
    return own if own is not None else sample.expected_state


@GRADERS.register("final_state", spec=FinalStateSpec)
class FinalStateGrader(Grader[FinalStateSpec]):
    """One outcome per expectation; the rationale names each unmet one."""

    def __init__(self, name: str, spec: FinalStateSpec, ctx: GraderContext) -> None:
        super().__init__(name, spec, ctx)
        self.assertions = load_assertions(spec.assertions, ctx.base_dir)  # under the suite's custom-code policy

    async def grade(self, ctx: GradeContext) -> Grade:
        changes = ctx.trajectory.state_changes
        if changes is None and ctx.sample.environment is None:
            return Grade.not_applicable("the sample has no environment: no state to grade")
        expected = expected_for(ctx.sample, self.spec.expected_state)
        gold = ctx.sample.expected_actions
        if expected is None and gold is None and not self.assertions:
            return Grade.not_applicable("no expected_state (the row's or the grader's), no expected_actions and no "
                                        "assertions: nothing to check")
        if changes is None:
            return Grade.failed("the trajectory records no final state (state_changes is missing), so the "
                                "environment cannot be graded")
        initial = World(ctx.sample.environment).apply(ctx.trajectory.starting_changes())  # after setup
        final = initial.apply(changes)
        # an assertion reads what it likes: like the gold calls, the whole world must be known
        unknown = unread_targets(expected, gold is not None or bool(self.assertions), initial, final)
        if unknown:  # a live workspace's file over the read-back bound: its final text was never read
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            return Grade.not_applicable(f"{shown}: over the workspace read-back bound (1 MiB), so its final text "
                                        "is unknown and the expectations about it cannot be checked; keep the "
                                        "files the task checks under 1 MiB")
        outcomes = evaluate(expected, initial, final) if expected is not None else []
        if gold is not None:  # [] too: the gold is no change at all
            try:
                outcomes += gold_outcomes(await gold_world(ctx.sample, ctx.tools, initial, ctx.user_tools), final)
            except GoldActionError as exc:  # the row is wrong, not the agent: no score
                return Grade.failed(str(exc))
        for item in self.assertions:  # an exit or running out of time raises: the grade's custom_code error
            try:
                outcomes.append(await run_assertion(item, final, initial, ctx.sample))
            except NoVerdict as exc:  # the suite's function gave no verdict: no score, never a fail
                return Grade.failed(str(exc))
        if not outcomes:  # nothing was checked: a pass here would be a verdict about nothing
            return Grade.not_applicable("the expected state names nothing to check")
        met = sum(o.met for o in outcomes)
        n = len(outcomes)
        score = met / n if self.spec.score == "fraction" else float(met == n)
        metadata = {"expectations": [{"expectation": o.expectation, "met": o.met, "problem": o.problem or None}
                                     for o in outcomes],
                    "changes": len(changes)}
        unmet = [o.problem for o in outcomes if not o.met]
        if not unmet:
            return Grade(score=score, rationale=f"all {n} expectation(s) met "
                                                f"({len(changes)} change(s) to the environment)", metadata=metadata)
        return Grade(score=score, rationale=f"{met}/{n} expectations met; " + "; ".join(unmet), metadata=metadata)


def unread_targets(expected: ExpectedState | None, gold: bool, initial: World, final: World) -> list[str]:
    """The files an expectation reads whose final text was not read back (environment/unread.py): by name in
    files, unchanged (a folder: what is in it); every such file under no_other_changes or gold actions, which
    compare the whole world. Whether a file exists is known either way (deleted, exists)."""
    unread = sorted(p for p, text in final.files.items() if is_unread(text))
    if not unread:
        return []
    if gold or (expected is not None and expected.no_other_changes):
        return unread
    if expected is None:
        return []
    named = {normal_target(p) for p in expected.files} | {normal_target(t) for t in expected.unchanged}
    return [p for p in unread if p in named or any(p.startswith(n.rstrip("/") + "/") for n in named)]


def gold_outcomes(expected: World, final: World) -> list[Outcome]:
    """One outcome per file and record that the gold calls and the agent's calls left different (field by
    field), or one met outcome when the worlds are the same: nothing else may differ."""
    differences = final.diff(expected)
    if not differences:
        return [Outcome("expected_actions", True)]
    out = []
    for change in differences:
        if change.kind == "record" and isinstance(change.before, dict) and isinstance(change.after, dict):
            fields = sorted(k for k in {*change.before, *change.after}
                            if json.dumps(change.before.get(k), sort_keys=True) != json.dumps(change.after.get(k),
                                                                                             sort_keys=True))
            detail = ", ".join(f"{k} is {json.dumps(change.after.get(k))}, expected {json.dumps(change.before.get(k))}"
                               for k in fields[:5])
        elif change.after is None:
            detail = "missing, expected to exist"
        elif change.before is None:
            detail = "exists, expected not to (no other changes allowed)"
        else:
            detail = "differs from the expected content"
        out.append(Outcome(f"expected_actions: {change.target}", False, f"{change.target}: {detail}"))
    return out
