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
    return f"{raw}, corrected {fmt(c.corrected_pass_rate)}, {spread}" + source


def rates_over(c: JudgeCalibration) -> str:
    """What the rates are over: the judged items, and the fails no judge was asked about."""
    judged = f"{c.judged} item{'s' if c.judged != 1 else ''}"
    return f"{judged} and {c.no_answer} with no answer to judge (failed)" if c.no_answer else judged
