"""How a calibrated judge's figures are written, in the footer of a run's table (`corrected_line`) and in the
views of `evals calibrate`: it reads only the recorded calibration, so the run's table does not stand on the
calibration engine that computed it."""

from __future__ import annotations

from pathlib import Path

from evals_cli.models.calibration import JudgeCalibration


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def interval(ci: list[float] | tuple[float, float] | None) -> str:
    return "—" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def corrected_line(name: str, c: JudgeCalibration) -> str:
    """One line for a run's footer: the judge's raw pass rate beside the corrected one and its interval."""
    raw = f"judge {name}: pass rate {fmt(c.observed_pass_rate)} as judged ({rates_over(c)})"
    source = f" (calibrated on {c.n} labels of {Path(c.labels).name if c.labels else 'a labels file'}: tpr " \
             f"{fmt(c.tpr)}, tnr {fmt(c.tnr)})"
    if c.corrected_pass_rate is None:
        return f"{raw}; no corrected rate: {c.refused}" + source
    spread = f"95% CI {interval(c.ci)}" if c.ci else "no interval"
    return f"{raw}, corrected {corrected(c)}, {spread}" + source


def corrected(c: JudgeCalibration) -> str:
    """The corrected rate, with the clipping said where it was clipped."""
    if not c.clipped:
        return fmt(c.corrected_pass_rate)
    return (f"{fmt(c.corrected_pass_rate)} (clipped from {fmt(c.raw_corrected_pass_rate)}: the calibration does not "
            "fit this run)")


def misfit(c: JudgeCalibration) -> str:
    """What a clipped correction means: the judge's measured rates cannot produce this run's pass share."""
    raw = c.raw_corrected_pass_rate
    shown = "—" if raw is None else f"{raw:.2f}"
    share = "—"
    if c.observed_pass_rate is not None and c.judged:
        share = f"{c.observed_pass_rate * (c.judged + c.no_answer) / c.judged:.2f}"
    span = f"[{1 - c.tnr:.2f}, {c.tpr:.2f}]" if c.tpr is not None and c.tnr is not None else "—"
    return (f"the calibration does not fit this run: the raw correction {shown} lies outside [0, 1] and is clipped to "
            f"{fmt(c.corrected_pass_rate)}; a judge with tpr {fmt(c.tpr)} and tnr {fmt(c.tnr)} passes a share in "
            f"{span} of the items it judges, this run's judge passed {share} (with few judged items this can be "
            "chance; else its labels measured another judge or other items: label items of this run)")


def rates_over(c: JudgeCalibration) -> str:
    """What the rates are over: the judged items, and the fails no judge was asked about."""
    judged = f"{c.judged} item{'s' if c.judged != 1 else ''}"
    return f"{judged} and {c.no_answer} with no answer to judge (failed)" if c.no_answer else judged
