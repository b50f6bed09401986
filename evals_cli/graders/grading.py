"""Grade one trajectory with every grader; per-turn samples are graded turn by turn, and graders with
`scope: reply` grade each agent reply on its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evals_cli.concurrency import each_or_raise
from evals_cli.custom_code import CustomCodeError
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
    except CustomCodeError as exc:  # the suite's own code exited, was interrupted or ran out of time: marked so
        return Grade.failed(str(exc), custom_code=True)  # the sample's error says custom_code (Gate.judge_sample)
    except Exception as exc:
        return Grade.failed(f"grader raised {type(exc).__name__}: {exc}")


async def _grade_per_turn(grader: Grader, sample: Sample, trajectory: Trajectory,
                          passes: Callable[[float], bool], tools: dict[str, ToolSpec], na_pass: bool = False) -> Grade:
    """letta-evals' per-turn shape: `per_turn_grades` (0-based turns) and `metadata.turns_passed/turns_total`;
    the grade is the mean over the turns that had something to check (a turn with nothing to check is no 1.0,
    unless `na_pass`: the gate's `not_applicable: pass`), and n/a only when no turn had anything to check."""
    turns: list[TurnGrade] = []
    grades: list[Grade] = []
    for index in range(len(sample.user_turns)):
        ground_truth = sample.ground_truth_for(index)
        if index >= len(trajectory.turns):
            grades.append(Grade(score=0.0, rationale=f"turn {index} was never reached "
                                                     f"({trajectory.stop_reason})"))
        else:
            # the loop's stop reason belongs to the turn it stopped in (the last one run), not to earlier turns
            last = index == len(trajectory.turns) - 1
            view = Trajectory(prefilled=trajectory.prefilled, turns=[trajectory.turns[index]],
                              stop_reason=trajectory.stop_reason if last else "completed")
            ctx = GradeContext(sample, trajectory.scoped(index), view, index, ground_truth, tools)
            grades.append(await _safe(grader, ctx))
        g = grades[-1]
        turns.append(TurnGrade(turn=index, score=g.score, rationale=g.rationale,
                               submission=g.submission or "", ground_truth=ground_truth))
    scores = [t.score for t in turns if t.score is not None]
    errors = [t for t in turns if t.score is None]
    # a turn with nothing to check neither passed nor failed: "1/1 turns passed; 1 with nothing to check", not 2/2
    checked = [g.score for g in grades if g.score is not None and (g.applicable or na_pass)]
    passed = sum(1 for s in checked if passes(s))
    rationale = (f"{passed}/{len(checked) + len(errors)} turns passed" if checked or errors
                 else f"nothing to check in any of the {len(turns)} turns")
    if errors:
        rationale += f"; {len(errors)} turn(s) could not be graded"
    metadata: dict[str, Any] = {"usage": _usage(grades), "turns_passed": passed, "turns_total": len(turns)}
    _judge_metadata(grades, metadata)
    _custom_code_mark(grades, metadata)
    applicable = any(g.applicable for g in grades)
    if errors:
        # a turn without a grade leaves the sample's grade missing: the mean of the turns that were graded could
        # turn a failed turn (its judge timed out) into a pass (issue 11, item 12)
        first = next((g.error or g.rationale for g in grades if g.score is None), "") or "no score"
        return Grade(score=None, rationale=rationale, per_turn_grades=turns, applicable=applicable,
                     error=f"{len(errors)} of {len(turns)} turn(s) could not be graded (first: turn {errors[0].turn + 1} of "
                           f"{len(turns)}: {first})", metadata=metadata)
    skipped = len(scores) - len(checked)
    if skipped and applicable:
        rationale += f"; {skipped} with nothing to check (left out of the score)"
    metadata["turns_checked"] = len(checked)
    return Grade(score=_mean(checked) if applicable else _mean(scores), rationale=rationale, per_turn_grades=turns,
                 applicable=applicable, metadata=metadata)


DIVERGED = ("not graded: the conversation left the recorded user's path at turn {turn} and was stopped there "
            "(--replay-user with --on-divergence stop); a conversation cut short has no whole-conversation verdict, "
            "and leaving the path is not the agent's failure by itself (graders with scope: reply still grade the "
            "replies it gave)")

_EPS = 1e-9  # as the gate compares: averages of 0.7s land on 0.69999...


def _reply_rule(grader: Grader, passes: Callable[[float], bool]) -> Callable[[float], bool]:
    """A reply's pass mark: the grader's `threshold`, else its kind's, else the gate's per-sample pass value
    (`passes`). The gate's own per-grader mark is `min_share` for these graders, so it is not asked here."""
    spec = grader.spec
    own = spec.threshold if spec.threshold is not None else type(spec).threshold_by_default
    if own is None:
        return passes
    return lambda score: score >= own - _EPS


def _reply_context(sample: Sample, trajectory: Trajectory, index: int, tools: dict[str, ToolSpec],
                   judge: bool) -> GradeContext:
    """What grading reply `index` sees. Its own turn is the view (the extractor's submission: that reply);
    a judge also sees the conversation up to it (its rubric's `trajectory`, `input`: context for the reply),
    every other grader sees only that reply's tool calls: `tools_avoided`, `no_loops` or `tool_schema` per reply
    must not fail reply 3 for what reply 1 did."""
    view = Trajectory(prefilled=trajectory.prefilled, turns=[trajectory.turns[index]],
                      stop_reason=trajectory.stop_reason if index == len(trajectory.turns) - 1 else "completed",
                      state_changes=trajectory.state_changes, setup_changes=trajectory.setup_changes)
    ground_truth = sample.ground_truth_for(index if sample.per_turn else None)
    return GradeContext(sample, trajectory.scoped(index) if judge else view, view, index, ground_truth, tools)


async def _grade_per_reply(grader: Grader, sample: Sample, trajectory: Trajectory,
                           passes: Callable[[float], bool], tools: dict[str, ToolSpec]) -> Grade:
    """`scope: reply`: each agent reply (each turn of the trajectory as run, however many the conversation had)
    graded on its own, kept in `per_turn_grades` like per-turn grades (0-based turns).

    The score is the share of the replies checked that passed (a reply passes at the grader's `threshold`);
    the grade passes when that share reaches `min_share` (the gate reads it as this grader's pass mark).
    Replies the grader had nothing to check in (not applicable) are left out of the share; when no reply was
    checked the grade is not applicable. A reply that could not be graded (its judge failed) leaves the whole
    grade missing, never a zero and never the share of the others."""
    rule = _reply_rule(grader, passes)
    needed = grader.spec.share_needed
    turns: list[TurnGrade] = []
    grades: list[Grade] = []
    for index in range(len(trajectory.turns)):
        ctx = _reply_context(sample, trajectory, index, tools, grader.uses_judge)
        grade = await _safe(grader, ctx)
        grades.append(grade)
        turns.append(TurnGrade(turn=index, score=grade.score, rationale=grade.rationale,
                               submission=grade.submission or "", ground_truth=ctx.ground_truth))
    metadata: dict[str, Any] = {"scope": "reply", "min_share": needed, "usage": _usage(grades)}
    _judge_metadata(grades, metadata)
    _custom_code_mark(grades, metadata)
    errors = [t for t, g in zip(turns, grades, strict=True) if g.score is None]
    checked = [t for t, g in zip(turns, grades, strict=True) if g.score is not None and g.applicable]
    failed = [t.turn for t in checked if t.score is not None and not rule(t.score)]
    passed = len(checked) - len(failed)
    metadata.update(turns_passed=passed, turns_total=len(checked), replies_total=len(turns), replies_failed=failed)
    if errors:
        first = next((g.error or g.rationale for g in grades if g.score is None), "") or "no score"
        rationale = f"{len(errors)} of {len(turns)} repl{'y' if len(turns) == 1 else 'ies'} could not be graded"
        return Grade(score=None, rationale=rationale, per_turn_grades=turns, metadata=metadata,
                     error=f"{rationale} (first: reply {errors[0].turn + 1}: {first}); the share of the others is "
                           "no verdict")
    if not checked:
        reason = "no agent reply to grade" if not turns else f"nothing to check in any of the {len(turns)} replies"
        return Grade.not_applicable(reason, per_turn_grades=turns or None, metadata=metadata)
    share = passed / len(checked)
    metadata["share"] = share
    verdict = "passed" if share >= needed - _EPS else "failed"
    skipped = len(turns) - len(checked)
    rationale = (f"{passed}/{len(checked)} replies passed (share {share:.2f}, min_share {needed:g}: {verdict})"
                 + (f"; {skipped} with nothing to check" if skipped else ""))
    return Grade(score=share, rationale=rationale, per_turn_grades=turns, metadata=metadata)


def _usage(grades: list[Grade]) -> dict[str, int]:
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    for g in grades:
        for key in usage:
            usage[key] += g.metadata.get("usage", {}).get(key, 0)
    return usage


def _custom_code_mark(grades: list[Grade], metadata: dict[str, Any]) -> None:
    """A turn or reply whose custom code failed (see `_safe`) marks the whole grade, as that turn's error does."""
    if any(g.metadata.get("custom_code") for g in grades if g.score is None):
        metadata["custom_code"] = True


def _judge_metadata(grades: list[Grade], metadata: dict[str, Any]) -> None:
    """What a judge's per-turn or per-reply grades keep for the report: the judge, each call, panels."""
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


async def grade_sample(graders: dict[str, Grader], sample: Sample, trajectory: Trajectory,
                       passes: Callable[[float], bool], tools: dict[str, ToolSpec] | None = None, *,
                       grader_passes: Callable[[str, float], bool] | None = None,
                       turn_pass: float | None = None, na_pass: bool = False) -> dict[str, Grade]:
    """Every grader's verdict on one sample, run concurrently (judge calls overlap).

    A turn of a per-turn sample counts as passed when it reaches its grader's threshold (`grader_passes`,
    the gate's `Gate.grader_passes`); `passes` is the fallback for callers that have one rule for all.
    `turn_pass` replaces both for per-turn samples: a letta-evals suite counts a turn as passed at a score of
    1.0 whatever the threshold, as letta-evals reports `turns_passed` (the sample's verdict is not affected).
    `na_pass`: the gate counts n/a as 1.0 (`not_applicable: pass`), in a per-turn grade's mean too.
    """
    tools = tools or {}

    async def one(grader: Grader) -> Grade:
        if grader.reads_steps and trajectory.not_observed:
            return Grade.not_applicable(trajectory.not_observed)
        if getattr(grader.spec, "scope", "conversation") == "reply":
            return await _grade_per_reply(grader, sample, trajectory, passes, tools)
        if trajectory.end_reason == "diverged":
            return Grade.failed(DIVERGED.format(turn=len(trajectory.turns)), not_graded="diverged")
        if grader.per_turn and sample.per_turn:
            rule = passes if grader_passes is None else (lambda s, n=grader.name: grader_passes(n, s))
            if turn_pass is not None:
                rule = lambda s: s >= turn_pass - _EPS  # noqa: E731
            return await _grade_per_turn(grader, sample, trajectory, rule, tools, na_pass)
        ctx = GradeContext(sample, trajectory, trajectory, None, sample.ground_truth_for(None), tools)
        return await _safe(grader, ctx)

    # deterministic graders run inline; only judges (network calls) are worth a task each
    out = {name: await one(g) for name, g in graders.items() if not g.uses_judge}
    judges = [name for name, g in graders.items() if g.uses_judge]
    if judges:

        async def judge(name: str) -> None:
            out[name] = await one(graders[name])

        await each_or_raise(judges, judge, len(judges))
    return {name: out[name] for name in graders}
