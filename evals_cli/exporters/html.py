"""The HTML report: one self-contained file (inline CSS, JS and SVG) to read a run without a terminal.

It answers, in order: did the gate pass, how did each grader do, which samples failed, and — for any one
sample — what exactly the agent said and called, turn by turn, and why each grader scored it as it did.
Everything from the run is escaped by Jinja2's autoescape: model output is untrusted input here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment

from evals_cli.exporters.base import EXPORTERS, FinishedRun
from evals_cli.exporters.common import case_name, failed_labels, fmt_score, model_calls, prepare, unique
from evals_cli.exporters.html_charts import BarChart, Histogram, histogram, score_bars
from evals_cli.exporters.html_template import SCRIPT, STYLE, TEMPLATE
from evals_cli.models.results import Grade, RunSummary, SampleResult, TurnGrade

OPEN_PROBLEMS = 25  # failed/errored conversations start expanded when there are at most this many


def score_class(score: float | None) -> str:
    """The colour of a score, on the same cut-offs as the terminal table."""
    if score is None:
        return "err"
    return "good" if score >= 0.999 else ("bad" if score < 0.5 else "mid")


def pretty(value: Any) -> str:
    """JSON for people (indented, unicode kept); a plain string stays as it is."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


@dataclass
class GradeView:
    name: str
    grade: Grade
    score_text: str
    css: str
    judge: str | None


@dataclass
class SampleView:
    index: int
    anchor: str
    name: str
    result: SampleResult
    status: str
    status_text: str
    score_text: str
    score_css: str
    tools: list[str]
    steps: int
    tokens: int
    grades: list[GradeView]
    turn_grades: dict[int, list[tuple[str, TurnGrade]]] = field(default_factory=dict)


def _status(result: SampleResult) -> tuple[str, str]:
    if result.error is not None:
        word = "incomplete" if result.error.incomplete else "error"
        return "errored", f"{word}: {result.error.category}"
    if result.passed is None:
        return "ungraded", "not graded"
    if result.passed:
        return "passed", "passed"
    return "failed", "failed" + (f": {', '.join(failed_labels(result))}" if result.failed_by else "")


def _judge(grade: Grade) -> str | None:
    meta = grade.metadata
    if "judge" not in meta:
        return None
    raw = meta.get("raw_score")
    return f"judge {meta['judge']}" + (f", raw score {raw:g}" if isinstance(raw, int | float) else "")


def sample_view(index: int, result: SampleResult) -> SampleView:
    status, status_text = _status(result)
    grades = [GradeView(name, grade, fmt_score(grade.score), score_class(grade.score), _judge(grade))
              for name, grade in result.grades.items()]
    turn_grades: dict[int, list[tuple[str, TurnGrade]]] = {}
    for name, grade in result.grades.items():
        for turn in grade.per_turn_grades or []:  # 0-based in results; the page numbers turns from 1
            turn_grades.setdefault(turn.turn + 1, []).append((name, turn))
    usage = result.usage.total_tokens + result.judge_usage.total_tokens
    return SampleView(index=index, anchor=f"s-{index}", name=case_name(result), result=result, status=status,
                      status_text=status_text, score_text=fmt_score(result.score), score_css=score_class(result.score),
                      tools=unique(result.tools_called), steps=model_calls(result), tokens=usage, grades=grades,
                      turn_grades=turn_grades)


@dataclass
class ReportView:
    summary: RunSummary
    title: str
    graders: list[str]
    weights: dict[str, float]
    samples: list[SampleView]
    bars: BarChart
    histograms: list[Histogram]
    notes: list[str]
    pass_rate: str
    open_problems: bool


def report_view(results: Iterable[SampleResult], summary: RunSummary, title: str | None = None,
                notes: Iterable[str] = ()) -> ReportView:
    items = list(results)
    graders = unique([*summary.graders, *(name for r in items for name in r.grades)])
    aggregates = {name: summary.graders[name] for name in graders if name in summary.graders}
    gate = summary.gate
    threshold = gate.value if gate is not None and gate.aggregation in ("avg_score", "accuracy") else None
    histograms = [histogram(name, [r.grades[name].score for r in items if r.error is None and name in r.grades])
                  for name in graders]
    histograms.append(histogram("weighted score", [r.score for r in items if r.error is None]))
    graded = summary.passed + summary.failed
    return ReportView(
        summary=summary, title=title or f"{summary.suite} — evals report", graders=graders,
        weights=gate.weights if gate else {}, samples=[sample_view(i, r) for i, r in enumerate(items, 1)],
        bars=score_bars(aggregates, threshold), histograms=histograms, notes=list(notes),
        pass_rate=f"{summary.passed / graded:.0%}" if graded else "—",
        open_problems=sum(1 for r in items if r.error is not None or r.passed is False) <= OPEN_PROBLEMS,
    )


def _environment() -> Environment:
    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["score"] = fmt_score
    env.filters["pretty"] = pretty
    env.globals["score_class"] = score_class
    return env


def render_html(results: Iterable[SampleResult], summary: RunSummary, *, title: str | None = None,
                notes: Iterable[str] = ()) -> str:
    """The whole report as one HTML string.

    `summary` is the run's summary.json, or for a killed run the one `evals_cli.report.load_run` rebuilds;
    `notes` (e.g. load_run's warnings: torn line, rebuilt summary) are shown at the top of the report.
    """
    view = report_view(results, summary, title, notes)
    template = _environment().from_string(TEMPLATE)
    return template.render(v=view, s=view.summary, style=STYLE, script=SCRIPT)


def write_html(results: Iterable[SampleResult], summary: RunSummary, path: Path | str, *, title: str | None = None,
               notes: Iterable[str] = ()) -> Path:
    """Write the report (UTF-8) and return its path."""
    out = prepare(path)
    out.write_text(render_html(results, summary, title=title, notes=notes), encoding="utf-8")
    return out


@EXPORTERS.register("html")
def export_html(run: FinishedRun, path: Path) -> Path:
    """`--export html=PATH`: the report `evals report --html` writes, straight after the run."""
    return write_html(run.results(), run.summary, path)
