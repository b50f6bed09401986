"""Per-turn and per-reply grades settled by the gate's pass marks: how many turns passed (letta-evals'
`turns_passed/turns_total`), the share of replies that passed, and the score and rationale that follow. The
graders hand over raw turn grades (`TurnScores`); what counts as a pass is the gate's to say."""

from __future__ import annotations

from collections.abc import Callable

from evals_cli.models.results import Grade, TurnScores
from evals_cli.thresholds import EPS


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _first_error(grades: list[Grade]) -> str:
    return next((g.error or g.rationale for g in grades if g.score is None), "") or "no score"


def settle_turns(raw: TurnScores, passes: Callable[[float], bool], na_pass: bool) -> Grade:
    """letta-evals' per-turn shape: the grade is the mean over the turns that had something to check (a turn with
    nothing to check is no 1.0, unless `na_pass`: the gate's `not_applicable: pass`), and n/a only when no turn
    had anything to check. A turn passes by `passes` (its grader's threshold, or letta-evals' 1.0)."""
    grades, turns = raw.grades, raw.turns
    scores = [t.score for t in turns if t.score is not None]
    errors = [t for t in turns if t.score is None]
    # a turn with nothing to check neither passed nor failed: "1/1 turns passed; 1 with nothing to check", not 2/2
    checked = [g.score for g in grades if g.score is not None and (g.applicable or na_pass)]
    passed = sum(1 for s in checked if passes(s))
    rationale = (f"{passed}/{len(checked) + len(errors)} turns passed" if checked or errors
                 else f"nothing to check in any of the {len(turns)} turns")
    if errors:
        rationale += f"; {len(errors)} turn(s) could not be graded"
    usage = raw.metadata.get("usage")
    metadata = {"usage": usage, "turns_passed": passed, "turns_total": len(turns),
                **{k: v for k, v in raw.metadata.items() if k != "usage"}}
    applicable = any(g.applicable for g in grades)
    if errors:
        # a turn without a grade leaves the sample's grade missing: the mean of the turns that were graded could
        # turn a failed turn (its judge timed out) into a pass (issue 11, item 12)
        return Grade(score=None, rationale=rationale, per_turn_grades=turns, applicable=applicable,
                     error=f"{len(errors)} of {len(turns)} turn(s) could not be graded (first: turn {errors[0].turn + 1} of "
                           f"{len(turns)}: {_first_error(grades)})", metadata=metadata)
    skipped = len(scores) - len(checked)
    if skipped and applicable:
        rationale += f"; {skipped} with nothing to check (left out of the score)"
    metadata["turns_checked"] = len(checked)
    return Grade(score=_mean(checked) if applicable else _mean(scores), rationale=rationale, per_turn_grades=turns,
                 applicable=applicable, metadata=metadata)


def reply_rule(threshold: float | None, passes: Callable[[float], bool]) -> Callable[[float], bool]:
    """A reply's pass mark: the grader's own `threshold` (or its kind's), else the gate's per-sample pass value
    (`passes`). The gate's own per-grader mark is `min_share` for these graders, so it is not asked here."""
    if threshold is None:
        return passes
    return lambda score: score >= threshold - EPS


def settle_replies(raw: TurnScores, passes: Callable[[float], bool]) -> Grade:
    """`scope: reply`: the score is the share of the replies checked that passed; the grade passes when that
    share reaches `min_share` (the gate reads it as this grader's pass mark). Replies the grader had nothing to
    check in are left out of the share; when no reply was checked the grade is not applicable. A reply that could
    not be graded (its judge failed) leaves the whole grade missing, never a zero and never the share of the
    others."""
    rule = reply_rule(raw.threshold, passes)
    grades, turns, metadata = raw.grades, raw.turns, dict(raw.metadata)
    needed = float(metadata["min_share"])
    errors = [t for t, g in zip(turns, grades, strict=True) if g.score is None]
    checked = [t for t, g in zip(turns, grades, strict=True) if g.score is not None and g.applicable]
    failed = [t.turn for t in checked if t.score is not None and not rule(t.score)]
    passed = len(checked) - len(failed)
    metadata.update(turns_passed=passed, turns_total=len(checked), replies_total=len(turns), replies_failed=failed)
    if errors:
        rationale = f"{len(errors)} of {len(turns)} repl{'y' if len(turns) == 1 else 'ies'} could not be graded"
        return Grade(score=None, rationale=rationale, per_turn_grades=turns, metadata=metadata,
                     error=f"{rationale} (first: reply {errors[0].turn + 1}: {_first_error(grades)}); the share of "
                           "the others is no verdict")
    if not checked:
        reason = "no agent reply to grade" if not turns else f"nothing to check in any of the {len(turns)} replies"
        return Grade.not_applicable(reason, per_turn_grades=turns or None, metadata=metadata)
    share = passed / len(checked)
    metadata["share"] = share
    verdict = "passed" if share >= needed - EPS else "failed"
    skipped = len(turns) - len(checked)
    rationale = (f"{passed}/{len(checked)} replies passed (share {share:.2f}, min_share {needed:g}: {verdict})"
                 + (f"; {skipped} with nothing to check" if skipped else ""))
    return Grade(score=share, rationale=rationale, per_turn_grades=turns, metadata=metadata)
