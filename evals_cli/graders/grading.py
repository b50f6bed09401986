"""Grade one trajectory with every grader; per-turn samples are graded turn by turn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from evals_cli.graders.base import GradeContext, Grader
from evals_cli.models.results import Grade, TurnGrade
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Trajectory


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


async def _safe(grader: Grader, ctx: GradeContext) -> Grade:
    """A grader that raises never takes the run down: its grade is an error (score None)."""
    try:
        return await grader.grade(ctx)
    except Exception as exc:
        return Grade.failed(f"grader raised {type(exc).__name__}: {exc}")


async def _grade_per_turn(grader: Grader, sample: Sample, trajectory: Trajectory,
                          passes: Callable[[float], bool], tools: dict[str, ToolSpec]) -> Grade:
    """letta-evals' per-turn shape: `per_turn_grades` (0-based turns) and `metadata.turns_passed/turns_total`;
    the grade is the mean over the turns graded, and n/a only when no turn had anything to check."""
    turns: list[TurnGrade] = []
    grades: list[Grade] = []
    for index in range(len(sample.user_turns)):
        ground_truth = sample.ground_truth_for(index)
        if index >= len(trajectory.turns):
            grades.append(Grade(score=0.0, rationale=f"turn {index} was never reached "
                                                     f"({trajectory.stop_reason})"))
        else:
            view = Trajectory(prefilled=trajectory.prefilled, turns=[trajectory.turns[index]],
                              stop_reason=trajectory.stop_reason)
            ctx = GradeContext(sample, trajectory.scoped(index), view, index, ground_truth, tools)
            grades.append(await _safe(grader, ctx))
        g = grades[-1]
        turns.append(TurnGrade(turn=index, score=g.score, rationale=g.rationale,
                               submission=g.submission or "", ground_truth=ground_truth))
    scores = [t.score for t in turns if t.score is not None]
    errors = [t for t in turns if t.score is None]
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    for g in grades:
        for key in usage:
            usage[key] += g.metadata.get("usage", {}).get(key, 0)
    passed = sum(1 for s in scores if passes(s))
    rationale = f"{passed}/{len(turns)} turns passed"
    if errors:
        rationale += f"; {len(errors)} turn(s) could not be graded"
    metadata: dict[str, Any] = {"usage": usage, "turns_passed": passed, "turns_total": len(turns)}
    judge = next((g.metadata["judge"] for g in grades if "judge" in g.metadata), None)
    if judge is not None:
        metadata["judge"] = judge
        # each turn's judge call (rendered prompt, verdicts with the reply) for the report
        metadata["turn_calls"] = [{"turn": i, "messages": g.metadata["messages"], "verdicts": g.metadata.get("verdicts", [])}
                                  for i, g in enumerate(grades) if "messages" in g.metadata]
    units = [u for g in grades for u in g.metadata.get("panel_units", [])]
    if units:
        metadata["panel_units"] = units
    if any(g.metadata.get("unreliable") for g in grades):
        metadata["unreliable"] = True
    applicable = any(g.applicable for g in grades)
    if errors:
        # a turn without a grade leaves the sample's grade missing: the mean of the turns that were graded could
        # turn a failed turn (its judge timed out) into a pass (issue 11, item 12)
        first = next((g.error or g.rationale for g in grades if g.score is None), "") or "no score"
        return Grade(score=None, rationale=rationale, per_turn_grades=turns, applicable=applicable,
                     error=f"{len(errors)} of {len(turns)} turn(s) could not be graded (first: turn {errors[0].turn + 1} of "
                           f"{len(turns)}: {first})", metadata=metadata)
    return Grade(score=_mean(scores), rationale=rationale, per_turn_grades=turns, applicable=applicable,
                 metadata=metadata)


async def grade_sample(graders: dict[str, Grader], sample: Sample, trajectory: Trajectory,
                       passes: Callable[[float], bool], tools: dict[str, ToolSpec] | None = None, *,
                       grader_passes: Callable[[str, float], bool] | None = None) -> dict[str, Grade]:
    """Every grader's verdict on one sample, run concurrently (judge calls overlap).

    A turn of a per-turn sample counts as passed when it reaches its grader's threshold (`grader_passes`,
    the gate's `Gate.grader_passes`); `passes` is the fallback for callers that have one rule for all.
    """
    tools = tools or {}

    async def one(grader: Grader) -> Grade:
        if grader.per_turn and sample.per_turn:
            rule = passes if grader_passes is None else (lambda s, n=grader.name: grader_passes(n, s))
            return await _grade_per_turn(grader, sample, trajectory, rule, tools)
        ctx = GradeContext(sample, trajectory, trajectory, None, sample.ground_truth_for(None), tools)
        return await _safe(grader, ctx)

    # deterministic graders run inline; only judges (network calls) are worth a task each
    out = {name: await one(g) for name, g in graders.items() if not g.uses_judge}
    judges = [name for name, g in graders.items() if g.uses_judge]
    if judges:
        out.update(zip(judges, await asyncio.gather(*(one(graders[n]) for n in judges)), strict=True))
    return {name: out[name] for name in graders}
