"""The pages `evals view` serves: the history of a results folder, and each run's report as `evals report --html`
writes it (the same renderers), with a way back and, while the run is in flight, a page that reloads itself."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import quote

from evals_cli.history.entries import RunEntry, Trend
from evals_cli.history.render import RUN_COLUMNS, TREND_COLUMNS, run_cells, trend_cells

REFRESH_S = 5


def run_href(rel: str) -> str:
    return "/run/" + quote(rel, safe="/") + "/"


def _sparkline_svg(rates: list[float]) -> str:
    """A bar per run, its height the pass rate (0..100%), so the trend reads at a glance."""
    width, height, gap = 10, 24, 2
    bars = "".join(f'<rect x="{i * (width + gap)}" y="{height - max(r * height, 1):.1f}" width="{width}" '
                   f'height="{max(r * height, 1):.1f}"><title>{r:.0%}</title></rect>' for i, r in enumerate(rates))
    return (f'<svg class="spark" role="img" aria-label="pass rate per run" width="{len(rates) * (width + gap)}" '
            f'height="{height}" viewBox="0 0 {len(rates) * (width + gap)} {height}">{bars}</svg>')


def _gate_class(word: str) -> str:
    return {"PASSED": "pass", "FAILED": "fail", "running": "running"}.get(word, "other")


def _run_row(entry: RunEntry) -> str:
    """One run's row: its cells, a link to its report (and to each model's, for a run of several models)."""
    e = html.escape
    cells = [e(c) for c in run_cells(entry)]
    if entry.kind == "models":  # each model's own report, beside the side-by-side page
        cells[2] = ", ".join(f'<a href="{e(run_href(entry.rel + "/" + m.folder))}">{e(m.model)}</a>'
                             for m in entry.per_model)
    cells[6] = f'<a href="{e(run_href(entry.rel))}">{cells[6]}</a>'
    detail = f'<div class="detail">{e(entry.detail)}</div>' if entry.detail else ""
    return (f'<tr class="run {e(entry.status)}" data-run="{e(entry.rel)}">'
            + "".join(f'<td class="{"gate " + _gate_class(entry.gate) if i == 4 else ""}" '
                      f'data-label="{e(RUN_COLUMNS[i])}">{c}{detail if i == 6 else ""}</td>'
                      for i, c in enumerate(cells)) + "</tr>")


def _trend_row(trend: Trend) -> str:
    e = html.escape
    cells = [e(c) for c in trend_cells(trend)]
    cells[3] = _sparkline_svg([p.pass_rate for p in trend.points])
    return "<tr>" + "".join(f'<td data-label="{e(TREND_COLUMNS[i])}">{c}</td>' for i, c in enumerate(cells)) + "</tr>"


def history_page(entries: list[RunEntry], found: list[Trend], root: str) -> str:
    e = html.escape
    running = [entry for entry in entries if entry.in_flight]
    refresh = f'<meta http-equiv="refresh" content="{REFRESH_S}">' if running else ""
    rows = [_run_row(entry) for entry in entries]
    trend_rows = [_trend_row(trend) for trend in found]
    banner = (f'<p class="flight">{len(running)} run{"s" if len(running) != 1 else ""} in flight '
              f'({", ".join(e(r.rel) for r in running)}): this page reloads every {REFRESH_S} s.</p>'
              if running else "")
    head = "".join(f"<th>{e(c)}</th>" for c in RUN_COLUMNS)
    trend_head = "".join(f"<th>{e(c)}</th>" for c in TREND_COLUMNS)
    empty = f"<p>No runs under {e(root)} yet.</p>" if not entries else ""
    trends_html = (f'<h2>Trend per suite</h2><p class="note">Pass rate of each suite\'s last completed runs, oldest '
                   f'first.</p><div class="scroll"><table id="trends"><thead><tr>{trend_head}</tr></thead><tbody>'
                   f'{"".join(trend_rows)}</tbody></table></div>' if trend_rows else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">{refresh}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>evals history: {e(root)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
.scroll {{ overflow-x: auto; }}
table {{ border-collapse: collapse; margin: .5em 0 1.5em; }}
th, td {{ border-bottom: 1px solid #ddd; padding: .35em .7em; text-align: left; vertical-align: top; }}
th {{ background: #f4f4f4; }}
td.gate.pass {{ color: #137333; font-weight: bold; }} td.gate.fail {{ color: #c5221f; font-weight: bold; }}
td.gate.running {{ color: #1a73e8; }} td.gate.other {{ color: #b06000; }}
.detail {{ color: #666; font-size: .85em; max-width: 40em; }}
.flight {{ background: #e8f0fe; padding: .5em .8em; border-radius: 4px; }}
.note {{ color: #555; }}
svg.spark rect {{ fill: #4c8bf5; }}
#runs td:first-child {{ white-space: nowrap; }}
@media (max-width: 700px) {{  /* a phone: each run is a card, every field labelled, nothing off-screen */
  body {{ margin: .8em; }}
  table, tbody, tr, td {{ display: block; }}
  thead {{ display: none; }}
  tr {{ border: 1px solid #ddd; border-radius: 6px; margin: 0 0 .7em; padding: .3em 0; }}
  td {{ border: none; padding: .15em .7em; }}
  td::before {{ content: attr(data-label) ": "; color: #666; }}
  #runs td:first-child {{ white-space: normal; }}
}}
</style></head><body>
<h1>Runs under {e(root)}</h1>
{banner}{empty}
<div class="scroll"><table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>
{trends_html}
<script>document.documentElement.dataset.reportReady = "1";</script>
</body></html>
"""


def run_page(entry: RunEntry, folder: Path, rel: str) -> str:
    """The report of one run (or one model of a run over several), from the renderers `evals report --html` uses,
    with a link back to the history; while the run is in flight the page reloads itself."""
    from evals_cli.output.manifest import is_matrix
    from evals_cli.report import run_kind

    if is_matrix(folder):
        from evals_cli.matrix_report import matrix_html
        from evals_cli.report import load_matrix

        page = matrix_html(load_matrix(folder, in_flight=entry.in_flight))
        links = "".join(f'<li><a href="{html.escape(run_href(rel + "/" + m.folder))}">{html.escape(m.model)}</a>'
                        f"</li>" for m in entry.per_model)
        page = _after_body(page, f"<h2>Each model's report</h2><ul>{links}</ul>", at_end=True)
    elif run_kind(folder) == "sessions":
        from evals_cli.exporters.html_sessions import render_sessions_html
        from evals_cli.report import load_sessions

        view = load_sessions(folder)
        page = render_sessions_html(view.analyses, view.summary, notes=view.warnings)
    else:
        from evals_cli.exporters.html import render_html
        from evals_cli.output.files import read_results
        from evals_cli.report import load_run

        _, summary, warnings = load_run(folder, in_flight=entry.in_flight)
        page = render_html(read_results(folder), summary, notes=warnings, run_dir=folder)
        # the report's label buttons save into the run's labels.jsonl through this viewer
        page = re.sub(r"(<head[^>]*>)", lambda m: m.group(1) + f'<meta name="evals-labels" content="'
                      f'{html.escape(run_href(rel))}labels">', page, count=1)
    back = (f'<p class="evals-history-nav" style="font-family:system-ui,sans-serif"><a href="/">← all runs</a> · '
            f"<code>{html.escape(rel)}</code></p>")
    if entry.marks:
        back += (f'<p class="evals-history-marks" style="font-family:system-ui,sans-serif">Not a live run: '
                 f'{html.escape("; ".join(entry.marks))}.</p>')
    if entry.in_flight:
        back += (f'<p class="evals-history-flight" style="font-family:system-ui,sans-serif">In flight: this page '
                 f"reloads every {REFRESH_S} s; no verdict until the run ends.</p>")
        page = re.sub(r"(<head[^>]*>)", lambda m: m.group(1) + f'<meta http-equiv="refresh" content="{REFRESH_S}">',
                      page, count=1)
    return _after_body(page, back)


def _after_body(page: str, fragment: str, at_end: bool = False) -> str:
    if at_end:
        return page.replace("</body>", fragment + "</body>", 1) if "</body>" in page else page + fragment
    found = re.search(r"<body[^>]*>", page)
    return page[:found.end()] + fragment + page[found.end():] if found else fragment + page


def save_label(entry: RunEntry, body: bytes) -> tuple[int, str]:
    """A label clicked in a run's report, appended to the run's labels.jsonl (evals_cli.calibration.intake)."""
    from evals_cli.calibration.intake import save_posted_label
    from evals_cli.errors import ConfigError

    try:
        label = save_posted_label(entry.path, body)
    except ConfigError as exc:
        return 400, "; ".join(exc.problems)
    return 200, f"saved: {label.label} for {label.sample_id} into {entry.rel}/labels.jsonl"
