"""`evals report` of a run over several models: the HTML page of the side-by-side view that `report.load_matrix`
reads back from each model's own folder (with the same honesty rules as a single run: an incomplete model shows no
verdict; the verdicts are recomputed from the folders, never read from matrix.json alone).

Each model's full report beside the page is written by the writer the command hands over
(`exporters.html.write_run_html`): this page links to a single run's report without depending on how it is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from evals_cli.display.matrix import MatrixView, ModelColumn, SampleMarks, gate_word, metric_rows, passed_by
from evals_cli.display.state import reasons_for
from evals_cli.errors import ConfigError
from evals_cli.exporters.common import fmt_score, tool_runs
from evals_cli.models.results import MatrixSummary, SampleResult
from evals_cli.output.files import RESULTS_NAME, read_results

MAX_RUNS_SHOWN = 3  # repeats of one sample shown per model on the page; the rest are counted


class RunReportWriter(Protocol):
    """Writes the full report of the run saved in `folder` to `path` (`exporters.html.write_run_html`)."""

    def __call__(self, folder: Path, path: Path, *, title: str) -> Path: ...


@dataclass
class ModelAnswer:
    """One run of one sample by one model, as the page puts it beside the other models' runs."""

    status: str  # passed, failed, errored, ungraded
    status_text: str
    score: str
    answer: str
    tools: list[str]
    reasons: list[str]
    repeat: int
    anchor: str  # the sample's anchor in the model's full report (`#s-N`)


@dataclass
class SampleRow:
    sample_id: str
    anchor: str
    question: str
    cells: list[list[ModelAnswer]]  # per model, in column order: its runs of this sample
    more: list[int]  # per model: runs past MAX_RUNS_SHOWN
    marks: list[tuple[str, str]]  # per model: (css, pass/fail/error mark)
    passed_by: str


@dataclass
class ModelSection:
    """One model: its verdict, where its full report is, and each failing sample with its failing graders."""

    column: ModelColumn
    anchor: str
    href: str | None
    verdict: str
    verdict_css: str
    failing: list[tuple[str, str, list[str]]]  # (sample name, anchor of the sample row, reasons)
    hidden: int = 0


@dataclass
class MatrixPage:
    view: MatrixView
    title: str
    models: list[ModelSection]
    numbers: list[tuple[str, list[str]]]
    samples: list[SampleRow]
    notes: list[str] = field(default_factory=list)


def _status(result: SampleResult) -> tuple[str, str]:
    if result.error is not None:
        return "errored", f"error: {result.error.category}"
    if result.passed is None:
        return "ungraded", "not graded"
    if result.passed:
        return "passed", "pass"
    labels = list(dict.fromkeys(f.label for f in result.failed_by))
    return "failed", "fail" + (f": {', '.join(labels)}" if labels else "")


def _answers(view: MatrixView) -> tuple[dict[str, list[list[ModelAnswer]]], dict[str, str]]:
    """sample id -> per model, its runs (read back from each model's folder, in the order its report lists them);
    and sample id -> what the user asked first."""
    found: dict[str, list[list[ModelAnswer]]] = {sid: [[] for _ in view.columns] for sid in view.sample_order}
    questions: dict[str, str] = {}
    if view.top is None:
        return found, questions
    for m, column in enumerate(view.columns):
        folder = view.top / column.folder
        if not (folder / RESULTS_NAME).is_file():
            continue
        for index, result in enumerate(read_results(folder, []), 1):
            status, text = _status(result)
            runs = found.setdefault(result.sample_id, [[] for _ in view.columns])[m]
            runs.append(ModelAnswer(status=status, status_text=text, score=fmt_score(result.score),
                                    answer=result.trajectory.final_answer or "", tools=tool_runs(result.tools_called),
                                    reasons=reasons_for(result), repeat=result.repeat, anchor=f"s-{index}"))
            if not questions.get(result.sample_id):
                questions[result.sample_id] = _question(result)
    return found, questions


def _question(result: SampleResult) -> str:
    turns = result.trajectory.turns
    first = next((t.user for t in turns if t.user), None)
    return first or result.input


def matrix_page(view: MatrixView, links: dict[str, str] | None = None) -> MatrixPage:
    """What the page shows; `links`: model folder -> the href of that model's full report."""
    answers, questions = _answers(view)
    sections = []
    for m, column in enumerate(view.columns, 1):
        summary = column.summary
        failing: list[tuple[str, str, list[str]]] = []
        state = column.state
        rows = state.failing_rows if state is not None else []
        for row in rows:
            failing.append((row.sample_id, _anchor(view, row.sample_id), row.reasons or [f"error: {row.error}"]))
        word = gate_word(summary)
        css = {"PASSED": "pass", "FAILED": "fail"}.get(word, "unknown")
        verdict = summary.gate.message if summary.gate is not None else f"gate {word}"
        hidden = state.failing_count - len(rows) if state is not None else 0
        sections.append(ModelSection(column, f"m-{m}", (links or {}).get(column.folder), verdict, css, failing,
                                     hidden))
    samples = []
    for sample_id in view.sample_order:
        cells = answers.get(sample_id, [[] for _ in view.columns])
        marks = []
        for c in view.columns:
            marks_of = c.samples.get(sample_id, SampleMarks())
            marks.append((_css(marks_of), marks_of.mark().plain))
        samples.append(SampleRow(sample_id, _anchor(view, sample_id), questions.get(sample_id, ""),
                                 [runs[:MAX_RUNS_SHOWN] for runs in cells],
                                 [max(len(runs) - MAX_RUNS_SHOWN, 0) for runs in cells], marks,
                                 passed_by(view, sample_id)))
    return MatrixPage(view=view, title=f"{view.matrix.suite}: {len(view.columns)} models", models=sections,
                      numbers=metric_rows(view), samples=samples, notes=list(view.warnings))


def _anchor(view: MatrixView, sample_id: str) -> str:
    try:
        return f"sample-{view.sample_order.index(sample_id) + 1}"
    except ValueError:
        return ""


def matrix_html(view: MatrixView, links: dict[str, str] | None = None) -> str:
    """A self-contained page: the combined verdict; the table of numbers; per model its verdict, a link to its
    full report (`links`: model folder -> href) and each failing sample with its failing graders and their
    reasons; then per sample the models' answers side by side."""
    from evals_cli.exporters.html_pages import environment

    page = matrix_page(view, links)
    return environment().get_template("matrix.html.j2").render(p=page, v=page, m=view.matrix)


def _css(marks: SampleMarks) -> str:
    if marks.runs == 0:
        return "none"
    if marks.errored == marks.runs:
        return "error"
    return "pass" if marks.all_passed else "fail"


def model_report_path(path: Path, column: ModelColumn) -> Path:
    """Where `write_matrix_html` puts a model's full report: beside the page, named after it and the model."""
    return path.with_name(f"{path.stem}-{column.folder}{path.suffix or '.html'}")


def write_matrix_html(view: MatrixView, path: Path, write_report: RunReportWriter) -> list[Path]:
    """The side-by-side page at `path`, and beside it each model's full report (`write_report`: the one `evals
    report RUN/MODEL --html` writes), linked from the page; every file self-contained. Returns the files written."""
    written = []
    links: dict[str, str] = {}
    try:
        if path.parent != Path(""):
            path.parent.mkdir(parents=True, exist_ok=True)
        for column in view.columns:
            folder = (view.top or Path(".")) / column.folder
            if view.top is None or not (folder / RESULTS_NAME).is_file():
                continue
            target = model_report_path(path, column)
            write_report(folder, target, title=f"{view.matrix.suite} · {column.model}")
            links[column.folder] = target.name
            written.append(target)
        path.write_text(matrix_html(view, links), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--html {path}: cannot write ({exc.strerror or type(exc).__name__})") from None
    return [path, *written]


__all__ = ["MatrixSummary", "RunReportWriter", "matrix_html", "matrix_page", "model_report_path",
           "write_matrix_html"]
