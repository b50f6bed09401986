"""`kind: f1` and `kind: exact_match`: the answer against the row's reference answers, normalised as inspect_ai's
`f1()` and `exact()` scorers normalise them (evals_cli/graders/answer_text.py).

The references are the row's `ground_truth`: one string, or a list of them, the best one counting, on a row whose
`input` is one message. On a per-turn row (a list `input` and a `ground_truth` list of the same length) each turn
has its own one reference, and each turn is graded against it: a list never means both, and a `ground_truth` list
whose length differs from a list `input`'s is refused when the dataset is read (exit 2). `{kind: match, function:
exact_match}` stays the strict comparison (whitespace stripped, nothing else); `exact_match` here is inspect's."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evals_cli.graders.answer_text import best_f1, exact, usable
from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import RECORDED_CUT_OFF, Grade, ending_without_answer


class F1Spec(GraderBase):
    """Word-overlap F1 of the answer against the row's ground truth (the best of its references), as inspect's f1()."""

    kind: Literal["f1"] = "f1"
    stop_words: list[str] = Field(default_factory=list, description="Words left out of both texts before they "
                                  "are compared (normalised the same way), as inspect's f1(stop_words=...).")


class ExactMatchSpec(GraderBase):
    """The answer equals one of the row's references once both are normalised (case, punctuation, articles,
    spacing, numbers), as inspect's exact(); binary."""

    kind: Literal["exact_match"] = "exact_match"


def references(ground_truth: Any) -> list[str]:
    """The reference answers a grade is against: one string, or each string of a list, empty ones left out."""
    if ground_truth is None:
        return []
    given = ground_truth if isinstance(ground_truth, list) else [ground_truth]
    return [str(ref) for ref in given if str(ref).strip()]


def _quoted(refs: list[str]) -> str:
    return " / ".join(repr(ref[:80]) for ref in refs[:5]) + (f" (+{len(refs) - 5} more)" if len(refs) > 5 else "")


class _ReferenceGrader(Grader[Any]):
    """What both kinds share: the submission, the references, and when there is nothing to compare."""

    per_turn = True

    def _stop_words(self) -> list[str]:
        return list(getattr(self.spec, "stop_words", []))

    async def _answer_and_refs(self, ctx: GradeContext) -> tuple[str, list[str], Grade | None]:
        """(submission, references, None), or a grade already settled: n/a, or no answer."""
        submission = await ctx.asubmission(self.spec.extractor, self.spec.extractor_config)
        given = references(ctx.ground_truth)
        if not given:
            return submission, [], Grade.not_applicable("no ground truth: nothing to compare the answer with")
        refs = usable(given, self._stop_words())
        if not refs:
            return submission, [], Grade.not_applicable(f"ground truth {_quoted(given)} is empty once normalised "
                                                        "(only articles, punctuation or stop words): nothing to "
                                                        "compare the answer with")
        cut = ending_without_answer(self.spec.extractor, ctx.view.stop_reason, RECORDED_CUT_OFF)
        if cut is not None:
            return submission, refs, Grade(score=0.0, rationale=f"no answer: {cut}", submission=submission)
        return submission, refs, None


@GRADERS.register("f1", spec=F1Spec)
class F1Grader(_ReferenceGrader):
    """The best F1 over the references (a fraction, rounded to two places); n/a without a reference."""

    async def grade(self, ctx: GradeContext) -> Grade:
        submission, refs, settled = await self._answer_and_refs(ctx)
        if settled is not None:
            return settled
        score, ref = best_f1(submission, refs, self._stop_words())
        of = f" (best of {len(refs)})" if len(refs) > 1 else ""
        return Grade(score=score, rationale=f"F1 {score:.2f} against {ref[:80]!r}{of}", submission=submission,
                     metadata={"reference": ref})


@GRADERS.register("exact_match", spec=ExactMatchSpec)
class ExactMatchGrader(_ReferenceGrader):
    """1 when the normalised answer equals a normalised reference, 0 otherwise; n/a without a reference."""

    async def grade(self, ctx: GradeContext) -> Grade:
        submission, refs, settled = await self._answer_and_refs(ctx)
        if settled is not None:
            return settled
        matched = exact(submission, refs)
        if matched is not None:
            return Grade(score=1.0, rationale=f"equals {matched[:80]!r} once normalised", submission=submission)
        return Grade(score=0.0, submission=submission,
                     rationale=f"{submission.strip()[:80]!r} equals none of {_quoted(refs)} once normalised")
