"""The side-by-side view of a run over several models: a column per model (pass rate, each grader's average,
tokens, cost, latency p50/p95, gate verdict), then a row per sample saying which models passed it, then the
combined verdict. Built from each model's own run folder (`MatrixView`), so `evals run` and `evals report`
show the same thing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evals_cli.display.reasons import Reasons, reason_kind
from evals_cli.display.state import RunState
from evals_cli.errors import EXIT_GATE_FAILED, EXIT_PASSED
from evals_cli.models.results import MatrixSummary, RunSummary


@dataclass
class SampleMarks:
    """One sample of one model over its repeats."""

    runs: int = 0
    passed: int = 0
    errored: int = 0

    @property
    def all_passed(self) -> bool:
        return self.runs > 0 and self.passed == self.runs

    def mark(self) -> Text:
        if self.runs == 0:
            return Text("—", style="dim")
        if self.errored == self.runs:
            return Text("error", style="yellow")
        if self.runs == 1:
            return Text("pass", style="green") if self.passed else Text("fail", style="red")
        style = "green" if self.passed == self.runs else ("red" if self.passed == 0 else "")
        extra = f", {self.errored} err" if self.errored else ""
        return Text(f"{self.passed}/{self.runs}{extra}", style=style)


@dataclass
class ModelColumn:
    """One model: its folder, its (honest) summary and each sample's marks."""

    model: str
    folder: str
    summary: RunSummary
    samples: dict[str, SampleMarks] = field(default_factory=dict)
    endpoint: str | None = None  # the base URL it ran on, credentials masked (matrix.json)
    state: RunState | None = None  # its results folded as `evals report` folds a run: why each sample failed


@dataclass
class MatrixView:
    matrix: MatrixSummary
    columns: list[ModelColumn]
    sample_order: list[str]
    warnings: list[str] = field(default_factory=list)
    top: Path | None = None  # the run's folder (matrix.json), each model's folder under it


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _secs(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}s"


def pass_rate(summary: RunSummary) -> float | None:
    """Passed of the samples graded (errored samples are counted apart, never as failures)."""
    graded = summary.passed + summary.failed
    return summary.passed / graded if graded else None


def gate_word(summary: RunSummary) -> str:
    if summary.exit_code == EXIT_PASSED:
        return "PASSED"
    if summary.exit_code == EXIT_GATE_FAILED:
        return "FAILED"
    return "not evaluated"


def metric_rows(view: MatrixView) -> list[tuple[str, list[str]]]:
    """(label, a cell per model) for the table of numbers; the HTML report uses the same rows."""
    columns = view.columns
    graders: list[str] = []
    for column in columns:
        graders += [g for g in column.summary.graders if g not in graders]
    rows: list[tuple[str, list[str]]] = [
        *([("endpoint", [c.endpoint or "—" for c in columns])] if any(c.endpoint for c in columns) else []),
        ("pass rate", [_pct(pass_rate(c.summary)) for c in columns]),
        ("passed / graded", [f"{c.summary.passed}/{c.summary.passed + c.summary.failed}" for c in columns]),
        ("errored", [str(c.summary.errored) for c in columns]),
    ]
    for grader in graders:
        rows.append((f"{grader} (avg)", [_num(c.summary.graders[grader].avg_score) if grader in c.summary.graders
                                         else "—" for c in columns]))
    rows += [
        ("agent tokens", [str(c.summary.usage.total_tokens) for c in columns]),
        ("judge tokens", [str(c.summary.judge_usage.total_tokens) for c in columns]),
        *([("user simulator tokens", [str(c.summary.user_usage.total_tokens) for c in columns])]
          if any(c.summary.user_usage.total_tokens for c in columns) else []),
        ("cost", [_num(c.summary.cost, 4) for c in columns]),
        *([("cache hits / misses", [f"{c.summary.cache.hits} / {c.summary.cache.misses}" if c.summary.cache else "—"
                                    for c in columns])] if any(c.summary.cache for c in columns) else []),
        ("latency p50", [_secs(c.summary.latency_p50_s) for c in columns]),
        ("latency p95", [_secs(c.summary.latency_p95_s) for c in columns]),
        ("gate", [gate_word(c.summary) for c in columns]),
        ("exit code", [str(c.summary.exit_code) for c in columns]),
    ]
    return rows


def passed_by(view: MatrixView, sample_id: str) -> str:
    """'2/3': how many models passed every run of this sample."""
    count = sum(1 for c in view.columns if (m := c.samples.get(sample_id)) is not None and m.all_passed)
    return f"{count}/{len(view.columns)}"


def render_matrix(view: MatrixView, run_dir: str | None = None, reasons: bool = True) -> RenderableType:
    """The two tables and the combined verdict; `reasons` adds why each incomplete model has no verdict."""
    names = [c.model for c in view.columns]
    numbers = Table(box=box.SIMPLE_HEAD, title=f"{view.matrix.suite}: {len(names)} models side by side",
                    title_justify="left")
    numbers.add_column("")
    for name in names:
        numbers.add_column(name, justify="right", overflow="fold")
    for label, cells in metric_rows(view):
        styled = [Text(cell, style=_gate_style(cell)) if label == "gate" else Text(cell) for cell in cells]
        numbers.add_row(label, *styled)
    samples = Table(box=box.SIMPLE_HEAD, title="per sample: which models passed", title_justify="left")
    samples.add_column("sample", overflow="fold")
    for name in names:
        samples.add_column(name, justify="center", overflow="fold")
    samples.add_column("passed by", justify="right")
    for sample_id in view.sample_order:
        marks = [c.samples.get(sample_id, SampleMarks()).mark() for c in view.columns]
        samples.add_row(sample_id, *marks, passed_by(view, sample_id))
    parts: list[RenderableType] = [numbers, samples]
    gate = view.matrix.gate
    if gate is not None:
        parts.append(Text(gate.message, style=_gate_style("PASSED" if gate.passed else
                                                            "FAILED" if gate.passed is False else "")))
    said: dict[str, list[str]] = {}
    for column in view.columns:  # why each model's samples did not pass, its causes grouped, said once
        if column.state is not None and column.state.failing_count:
            folder: Path | str = (Path(run_dir) if run_dir is not None else Path("RUN")) / column.folder
            why = Reasons(column.state, folder, who=column.model)
            said[column.model] = why.said()
            parts.append(why)
    for column in view.columns if reasons else []:
        cause = column.summary.abort_reason
        if cause and column.summary.exit_code not in (EXIT_PASSED, EXIT_GATE_FAILED):
            above = next((r for r in said.get(column.model, []) if cause in r), None)
            told = f"no verdict: the {reason_kind(above)} above" if above is not None else cause
            parts.append(Text(f"{column.model}: {told}", style="yellow"))
    if run_dir is not None:
        parts.append(Text(f"model folders: {run_dir}/{{{','.join(c.folder for c in view.columns)}}}"))
    return Group(*parts)


def _gate_style(word: str) -> str:
    return {"PASSED": "bold green", "FAILED": "bold red"}.get(word, "yellow")
