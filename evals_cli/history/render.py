"""`evals history` in the terminal: the runs newest first, then each suite's trend. The cells are built once
(`run_cells`, `trend_cells`) so the terminal and the viewer's page say the same thing."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evals_cli.history.entries import RunEntry, Trend, sparkline

GATE_STYLES = {"PASSED": "bold green", "FAILED": "bold red", "running": "cyan"}


def when(entry: RunEntry) -> str:
    """The start, in this machine's time zone, to the minute."""
    return entry.started.astimezone().strftime("%Y-%m-%d %H:%M")


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def pass_cell(entry: RunEntry) -> str:
    """'80% (4/5)', '1 errored' added; per model for a run over several models."""
    if entry.kind == "models":
        return " · ".join(f"{m.model} {pct(m.pass_rate)}" for m in entry.per_model) or "—"
    if entry.kind == "sessions":
        return "—"
    graded = entry.passed + entry.failed
    cell = f"{pct(entry.pass_rate)} ({entry.passed}/{graded})" if graded else "—"
    return cell + (f", {entry.errored} errored" if entry.errored else "")


def cost_cell(entry: RunEntry) -> str:
    return "—" if entry.cost is None else f"{entry.cost:.4f}"


def models_cell(entry: RunEntry) -> str:
    return ", ".join(entry.models) or "—"


def run_cells(entry: RunEntry) -> list[str]:
    """when, suite, model(s), pass rate, gate, cost, run: one row of the history."""
    suite = f"{entry.suite} [{entry.subset}]" if entry.subset else entry.suite
    suite += "".join(f" ({mark})" for mark in entry.marks)  # replayed, cached, no judge: not a live run
    return [when(entry), suite, models_cell(entry), pass_cell(entry), entry.gate, cost_cell(entry), entry.rel]


RUN_COLUMNS = ["when", "suite", "model(s)", "pass rate", "gate", "cost", "run"]
TREND_COLUMNS = ["suite", "model", "runs", "trend", "pass rate, oldest → newest", "change"]


def trend_cells(trend: Trend) -> list[str]:
    rates = [p.pass_rate for p in trend.points]
    shown = " → ".join(pct(r) for r in rates[-5:])
    if len(rates) > 5:
        shown = "… → " + shown
    change = trend.change
    suite = f"{trend.suite} [{trend.subset}]" if trend.subset else trend.suite
    return [suite, trend.model or "—", str(trend.runs), sparkline(rates), shown,
            "—" if change is None else f"{change * 100:+.0f} pts"]


def render_history(entries: list[RunEntry], found: list[Trend], root: str, limit: int | None = None) -> RenderableType:
    if not entries:
        return Text(f"no runs under {root} (a run is a folder with run.json, results.jsonl or matrix.json)")
    shown = entries if limit is None else entries[:limit]
    runs = Table(box=box.SIMPLE_HEAD, title=f"runs under {root}, newest first ({len(entries)})", title_justify="left")
    for column in RUN_COLUMNS:
        runs.add_column(column, overflow="fold", justify="right" if column == "cost" else "left")
    for entry in shown:
        cells = run_cells(entry)
        runs.add_row(*cells[:4], Text(cells[4], style=GATE_STYLES.get(entry.gate, "yellow")), *cells[5:])
    parts: list[RenderableType] = [runs]
    if len(shown) < len(entries):
        parts.append(Text(f"… and {len(entries) - len(shown)} older runs (--limit N shows more)"))
    if found:
        table = Table(box=box.SIMPLE_HEAD, title="trend per suite: pass rate of its last completed runs",
                      title_justify="left")
        for column in TREND_COLUMNS:
            table.add_column(column, overflow="fold")
        for trend in found:
            table.add_row(*trend_cells(trend))
        parts.append(table)
    running = [e.rel for e in entries if e.in_flight]
    if running:
        parts.append(Text(f"in flight: {', '.join(running)} (no verdict until it ends)", style="cyan"))
    return Group(*parts)
