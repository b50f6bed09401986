"""What a run keeps about its judges so that a person's labels can measure them later: the pass mark a judged item
is held to and a fingerprint of the judge (`JudgeRecord`, in run.json), and a judge's measured rates and corrected
pass rate (`JudgeCalibration`: `evals calibrate`, and summary.json of a run whose judge names `calibration:`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli.models.base import Record

MarkOp = Literal["gt", "gte", "lt", "lte", "eq"]
_EPS = 1e-9  # the gate's tolerance: averages of 0.7s land on 0.69999...


class JudgeRecord(Record):
    """One judge grader of a run, as run.json keeps it. Without the pass mark a label could not be compared with
    the judge's verdict (its score alone does not say pass or fail); without the fingerprint a labels file made
    against another rubric or judge model could not be told apart."""

    scope: Literal["conversation", "reply"] = "conversation"
    op: MarkOp = Field(default="gte", description="How a judged item's score meets `mark`.")
    mark: float = Field(allow_inf_nan=False,
                        description="A judged item (a sample, a turn or a reply) passes at score `op` mark.")
    rubric: str = Field(default="", description="Digest of the grader's rubric text.")
    model: str = Field(default="", description="The judge model (several, joined by ', ', for a panel).")
    scale: str = Field(default="", description="The verdict scale, as the suite names it.")

    def passes(self, score: float) -> bool:
        """The judge's verdict on an item, as the run decided it (the gate's tolerance for float sums included)."""
        mark = self.mark
        return {"gt": score > mark + _EPS, "gte": score >= mark - _EPS, "lt": score < mark - _EPS,
                "lte": score <= mark + _EPS, "eq": abs(score - mark) <= _EPS}[self.op]


class JudgeCalibration(Record):
    """A judge measured against a person's labels ("pass" is the positive class) and its pass rate corrected for
    what it gets wrong (the Rogan-Gladen estimator). None where a figure is undefined (no label of a class, a judge
    no better than chance): never a number that is not true."""

    labels: str | None = Field(default=None, description="The labels file (calibrated runs).")
    n: int = Field(default=0, description="Labelled items compared with the judge.")
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    tpr: float | None = Field(default=None, description="Of the items the person passed, the share the judge passed.")
    tnr: float | None = Field(default=None, description="Of the items the person failed, the share the judge failed.")
    kappa: float | None = Field(default=None, description="Cohen's kappa between the judge and the person.")
    judged: int = Field(default=0, description="The run's judged items of this grader with a verdict.")
    no_answer: int = Field(default=0, description="The grader's items with no answer to judge: failed without asking "
                           "the judge (so never labelled), and counted as fails in both pass rates.")
    observed_pass_rate: float | None = Field(
        default=None, description="The grader's pass rate over its `judged` items and its `no_answer` fails.")
    corrected_pass_rate: float | None = Field(
        default=None, description="The judged items' pass rate corrected ((p + tnr - 1) / (tpr + tnr - 1), clipped to "
        "[0, 1]), then the no-answer fails added as fails; None when refused.")
    raw_corrected_pass_rate: float | None = Field(
        default=None, description="The correction before clipping (the no-answer fails added the same way); outside "
        "[0, 1] when the calibration does not fit this run.")
    clipped: bool = Field(default=False, description="The raw correction lay outside [0, 1] and was clipped: the "
                          "judge's measured rates cannot produce this run's pass share, so the calibration does not "
                          "fit this run.")
    ci: list[float] | None = Field(default=None, description="95% interval of the corrected pass rate (Bayesian: Beta "
                                   "posteriors for tpr, tnr and the run's pass share; see docs/measuring-the-judge.md).")
    refused: str | None = Field(default=None, description="Why there is no corrected pass rate.")
    warnings: list[str] = Field(default_factory=list)
