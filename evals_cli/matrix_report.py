"""`evals report` of a run over several models: the side-by-side view read back from each model's own folder
(with the same honesty rules as a single run: an incomplete model shows no verdict), and its HTML page.

The verdicts are recomputed from the folders, never read from matrix.json alone: a run killed before its end
left matrix.json saying so, and a model resumed on its own since then has a newer summary than matrix.json."""

from __future__ import annotations

import html
from pathlib import Path

from evals_cli.display.matrix import MatrixView, ModelColumn, SampleMarks, metric_rows, passed_by
from evals_cli.errors import EXIT_INTERRUPTED, ConfigError
from evals_cli.models.results import MatrixSummary
from evals_cli.output.files import RESULTS_NAME, read_results
from evals_cli.output.manifest import MATRIX_NAME, read_matrix
from evals_cli.output.summary import combined_exit, combined_verdict


def load_matrix(top: Path) -> MatrixView:
    """The view of the run over several models in `top` (its matrix.json and every model's folder)."""
    matrix = read_matrix(top)
    if matrix is None:
        raise ConfigError(f"{top}: no {MATRIX_NAME}, so not the folder of a run over several models")
    from evals_cli.report import load_run

    columns: list[ModelColumn] = []
    order: dict[str, None] = {}
    warnings: list[str] = []
    for run in matrix.models:
        folder = top / run.folder
        if not (folder / RESULTS_NAME).is_file():
            warnings.append(f"{run.model}: {folder} holds no results (the run stopped before this model started)")
        _, summary, notes = load_run(folder)
        warnings += [f"{run.model}: {note}" for note in notes]
        column = ModelColumn(run.model, run.folder, summary, endpoint=run.base_url)
        if (folder / RESULTS_NAME).is_file():
            for result in read_results(folder, []):
                marks = column.samples.setdefault(result.sample_id, SampleMarks())
                marks.runs += 1
                marks.passed += bool(result.error is None and result.passed)
                marks.errored += result.error is not None
                order[result.sample_id] = None
        else:  # never started: nothing was measured, and nothing may read as passed
            summary.status, summary.exit_code = "interrupted", EXIT_INTERRUPTED
            summary.abort_reason = f"no results in {folder}: resume the run with --resume {top}"
        run.status, run.exit_code = summary.status, summary.exit_code
        columns.append(column)
    rebuilt = matrix.model_copy(deep=True)
    rebuilt.models = matrix.models
    rebuilt.exit_code = combined_exit([EXIT_INTERRUPTED if r.exit_code is None else r.exit_code
                                     for r in matrix.models], matrix.gate_mode)
    rebuilt.gate = combined_verdict(matrix.models, matrix.gate_mode)
    statuses = {run.status for run in matrix.models}
    rebuilt.status = ("interrupted" if "interrupted" in statuses or None in statuses else
                      "aborted" if "aborted" in statuses else "completed")
    if rebuilt.status == "completed":
        rebuilt.abort_reason = None
    return MatrixView(rebuilt, columns, list(order), warnings)


def matrix_html(view: MatrixView) -> str:
    """A self-contained page: the table of numbers, the per-sample table, the combined verdict."""
    e = html.escape
    names = [c.model for c in view.columns]
    head = "".join(f"<th>{e(n)}</th>" for n in names)
    numbers = "".join(f"<tr><th>{e(label)}</th>{''.join(f'<td>{e(c)}</td>' for c in cells)}</tr>"
                      for label, cells in metric_rows(view))
    sample_rows = []
    for sample_id in view.sample_order:
        cells = "".join(f"<td class='{_css(m)}'>{e(m.mark().plain)}</td>"
                        for m in (c.samples.get(sample_id, SampleMarks()) for c in view.columns))
        sample_rows.append(f"<tr><th>{e(sample_id)}</th>{cells}<td>{e(passed_by(view, sample_id))}</td></tr>")
    gate = view.matrix.gate
    verdict = e(gate.message) if gate is not None else "no gate"
    folders = "".join(f"<li>{e(c.model)}: <code>{e(c.folder)}/</code></li>" for c in view.columns)
    notes = "".join(f"<li>{e(w)}</li>" for w in view.warnings)
    title = e(f"{view.matrix.suite}: {len(names)} models")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: .3em .7em; text-align: right; }}
th:first-child {{ text-align: left; }}
td.pass {{ background: #e6f4ea; }} td.fail {{ background: #fce8e6; }} td.error {{ background: #fef7e0; }}
.verdict {{ font-weight: bold; }}
</style></head><body>
<h1>{title} side by side</h1>
<p class="verdict">{verdict}</p>
<table id="models"><thead><tr><th></th>{head}</tr></thead><tbody>{numbers}</tbody></table>
<h2>Per sample: which models passed</h2>
<table id="samples"><thead><tr><th>sample</th>{head}<th>passed by</th></tr></thead>
<tbody>{''.join(sample_rows)}</tbody></table>
<h2>Folders</h2><ul>{folders}</ul>
{f'<h2>Notes</h2><ul>{notes}</ul>' if notes else ''}
</body></html>
"""


def _css(marks: SampleMarks) -> str:
    if marks.runs == 0:
        return "none"
    if marks.errored == marks.runs:
        return "error"
    return "pass" if marks.all_passed else "fail"


def write_matrix_html(view: MatrixView, path: Path) -> None:
    try:
        if path.parent != Path(""):
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(matrix_html(view), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--html {path}: cannot write ({exc.strerror or type(exc).__name__})") from None


__all__ = ["MatrixSummary", "load_matrix", "matrix_html", "write_matrix_html"]
