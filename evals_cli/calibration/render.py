"""The terminal views of `evals calibrate`: the figures per judge, its confusion matrix, its leniency in words and
every disagreement with the judge's reason; for two runs, the judges side by side."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evals_cli.calibration.calibrate import CalibrationReport, GraderReport, leniency
from evals_cli.calibration.compare import JudgesComparison, pass_mark
from evals_cli.calibration.figures import corrected, fmt, interval, rates_over
from evals_cli.thresholds import SYMBOLS


def _figures(report: CalibrationReport) -> Table:
    table = Table(box=box.SIMPLE, title="judges against your labels", title_justify="left")
    for col in ("judge", "n", "tp", "fp", "fn", "tn", "tpr", "tnr", "kappa", "observed", "corrected", "95% CI"):
        table.add_column(col, justify="left" if col == "judge" else "right", no_wrap=True)
    for name, g in report.graders.items():
        c = g.calibration
        table.add_row(name, str(c.n), str(c.tp), str(c.fp), str(c.fn), str(c.tn), fmt(c.tpr), fmt(c.tnr),
                      fmt(c.kappa), fmt(c.observed_pass_rate),
                      fmt(c.corrected_pass_rate) + (" clipped" if c.clipped else ""), interval(c.ci))
    return table


def _matrix(g: GraderReport) -> Table:
    c = g.calibration
    table = Table(box=box.SIMPLE)
    for col in ("", "judge pass", "judge fail"):
        table.add_column(col, justify="left" if not col else "right", no_wrap=True)
    table.add_row("you: pass", str(c.tp), str(c.fn))
    table.add_row("you: fail", str(c.fp), str(c.tn))
    return table


def _grader_lines(g: GraderReport) -> list[RenderableType]:
    c = g.calibration
    out: list[RenderableType] = [Text(f"{g.name}: your labels (rows) against the judge (columns)"), _matrix(g)]
    words = leniency(c)
    if words:
        out.append(Text(f"{g.name}: the judge " + "; it ".join(words)))
    mark = f" (passes at {SYMBOLS.get(g.record.op, g.record.op)} {g.record.mark:g})" if g.record else ""
    if c.corrected_pass_rate is not None:
        out.append(Text(f"{g.name}: pass rate {fmt(c.observed_pass_rate)} as judged over {rates_over(c)}{mark}; "
                        f"corrected for the judge's errors: {corrected(c)}, "
                        + (f"95% CI {interval(c.ci)}" if c.ci else "no interval (see the warning)")))
    else:
        out.append(Text(f"{g.name}: pass rate {fmt(c.observed_pass_rate)} as judged over {rates_over(c)}{mark}; "
                        f"no corrected rate: {c.refused}", style="bold yellow"))
    if g.disagreements:
        count = len(g.disagreements)
        out.append(Text(f"{g.name}: {count} disagreement{'s' if count != 1 else ''}:"))
        for d in g.disagreements:
            turn = "" if d.item.key.turn is None else f" {d.item.scope} {d.item.key.turn}"
            repeat = f" repeat {d.item.key.repeat}" if d.item.key.repeat else ""
            line = (f"  {d.item.key.sample_id}{repeat}{turn}: you {d.label.label}, the judge {d.item.verdict()} "
                    f"(score {d.item.score:.2f}): {d.item.reason or 'no reason given'}")
            if d.label.note:
                line += f" · your note: {d.label.note}"
            out.append(Text(line))
    for warning in c.warnings:
        out.append(Text(f"warning: {warning}", style="yellow"))
    return out


def render_calibration(report: CalibrationReport) -> RenderableType:
    parts: list[RenderableType] = [Text(f"{report.run}: judges measured against {report.labels}"), _figures(report)]
    for g in report.graders.values():
        parts += _grader_lines(g)
        parts.append(Text(""))
    for note in report.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    return Group(*parts)


def render_judges(comparison: JudgesComparison) -> RenderableType:
    parts: list[RenderableType] = [Text(f"two judges measured against {comparison.labels}")]
    for name, c in comparison.graders.items():
        table = Table(box=box.SIMPLE, title=f"{name}: on the {c.a.confusion.n} labelled items both judged (of "
                      f"{c.samples} sample{'s' if c.samples != 1 else ''})", title_justify="left")
        for col in ("", "A", "B"):
            table.add_column(col, justify="left" if not col else "right", no_wrap=not col)
        rows = [("run", str(c.a.run), str(c.b.run)),
                ("judge model", c.a.record.model if c.a.record else "—", c.b.record.model if c.b.record else "—"),
                ("rubric", c.a.record.rubric if c.a.record else "—", c.b.record.rubric if c.b.record else "—"),
                ("scale", c.a.record.scale if c.a.record else "—", c.b.record.scale if c.b.record else "—"),
                ("pass mark", pass_mark(c.a.record) if c.a.record else "—",
                 pass_mark(c.b.record) if c.b.record else "—"),
                ("agreement", fmt(c.a.confusion.agreement), fmt(c.b.confusion.agreement)),
                ("kappa", fmt(c.a.confusion.kappa), fmt(c.b.confusion.kappa)),
                ("tpr", fmt(c.a.confusion.tpr), fmt(c.b.confusion.tpr)),
                ("tnr", fmt(c.a.confusion.tnr), fmt(c.b.confusion.tnr))]
        for row in rows:
            table.add_row(*row)
        parts.append(table)
        differs = c.differs
        parts.append(Text(f"{name}: the judges differ in " + "; ".join(differs) if differs else
                          f"{name}: the two judges' recorded settings are the same (rubric, model, scale, pass mark)",
                          style="bold" if differs else "dim"))
        parts.append(Text(f"{name}: agreement B − A = {c.difference:+.2f}, 95% paired bootstrap CI (resampling "
                          "samples) "
                          f"[{c.ci[0]:+.2f}, {c.ci[1]:+.2f}]: {c.verdict}"))
    for note in comparison.notes:
        parts.append(Text(f"note: {note}", style="dim"))
    return Group(*parts)
