"""The final results table: a row per sample, per-grader aggregates, the gate verdict in words."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evals_cli.display.state import Cell, RunState
from evals_cli.models.results import RunSummary


def _fmt(score: float | None) -> str:
    return "—" if score is None else f"{score:.2f}"


def _cell(cell: Cell | None) -> Text:
    if cell is None:
        return Text("")
    if cell.error:
        return Text("error", style="yellow")
    if cell.na:  # nothing to check: the 1.0 is a convention, not a result
        return Text("n/a", style="dim")
    text = _fmt(cell.score)
    if cell.turns:
        text += f" ({cell.turns[0]}/{cell.turns[1]})"
    if cell.unreliable:
        text += " unreliable"
    style = "green" if (cell.score or 0) >= 0.999 else ("red" if (cell.score or 0) < 0.5 else "yellow")
    return Text(text, style=style)


def _tools(tools: list[str]) -> str:
    if not tools:
        return "—"
    shown = ", ".join(tools[:6])
    return shown + (f" +{len(tools) - 6}" if len(tools) > 6 else "")


def samples_table(state: RunState, title: str) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left", show_lines=False)
    table.add_column("sample", overflow="fold")
    table.add_column("tags")
    table.add_column("tools called", overflow="fold")
    for name in state.grader_names:
        table.add_column(name, justify="right")
    table.add_column("score", justify="right")
    table.add_column("pass" if state.repeats > 1 else "", justify="center")
    for row in state.rows.values():
        if row.runs > 1:
            style = "green" if row.passes == row.runs else ("red" if row.passes == 0 else "yellow")
            mark = Text(f"{row.passes}/{row.runs}", style=style)
            if row.error:
                mark.append(f" ({row.error})", style="yellow")
            if row.failed_by:
                mark.append(f" {', '.join(row.failed_by)}", style="red")
        elif row.error:
            mark = Text(f"{'incomplete' if row.incomplete else 'error'}: {row.error}", style="yellow")
        elif row.passed is None:
            mark = Text("?", style="yellow")
        elif row.passed:
            mark = Text("✓", style="green")
        else:  # the row names what failed it: a required grader, the weighted rule, an unknown tool
            mark = Text("✗" + (f" {', '.join(row.failed_by)}" if row.failed_by else ""), style="red")
        tools = _tools(row.tools) + ("" if row.stop_reason == "completed" else f" \\[{row.stop_reason}]")  # not markup
        table.add_row(row.sample_id, ",".join(row.tags), tools,
                      *[_cell(row.cells.get(n)) for n in state.grader_names], _fmt(row.score), mark)
    if state.hidden_rows:
        table.caption = f"... {state.hidden_rows} more samples in the results file"
    return table


def aggregates_table(summary: RunSummary) -> Table:
    table = Table(box=box.SIMPLE, title="graders", title_justify="left")
    for col in ("grader", "graded", "errors", "avg", "accuracy", "min", "max", "median", "weight"):
        table.add_column(col, justify="left" if col == "grader" else "right")
    weights = summary.gate.weights if summary.gate else {}
    for name, agg in summary.graders.items():
        graded = str(agg.count)
        if agg.applicable is not None and agg.applicable < agg.count:  # n/a samples were not really checked
            graded = f"{agg.applicable} of {agg.count}"
        table.add_row(name, graded, str(agg.errors), _fmt(agg.avg_score), _fmt(agg.accuracy),
                      _fmt(agg.min), _fmt(agg.max), _fmt(agg.median),
                      f"{weights[name]:g}" if name in weights else "—")
    return table


def footer(summary: RunSummary) -> Text:
    lines = Text()
    what = f"{summary.total} samples"
    if summary.reliability is not None and summary.reliability.repeats > 1:  # a count of runs, not of samples
        ran = summary.coverage.run if summary.coverage is not None else None
        what = f"{summary.total} sample runs" + (f" ({ran} samples × {summary.reliability.repeats} repeats)"
                                                 if ran is not None else "")
    counts = f"{what}: {summary.passed} passed, {summary.failed} failed, {summary.errored} errored"
    lines.append(counts + "\n")
    partial = summary.coverage.line() if summary.coverage is not None else None
    if partial:  # a verdict over part of the dataset must say so, and why
        lines.append(partial + "\n", style="bold yellow")
    if summary.errors_by_category:
        lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.errors_by_category.items())) + "\n")
    for name, agreement in summary.judge_agreement.items():
        parts = []
        if agreement.alpha is not None:
            parts.append(f"Krippendorff's alpha {agreement.alpha:.2f} across {', '.join(agreement.judges)} "
                         f"over {agreement.units} grades")
        if agreement.unreliable:
            parts.append(f"{agreement.unreliable} grade(s) flagged unreliable (spread > max_spread)")
        if parts:
            lines.append(f"judge {name}: " + "; ".join(parts) + "\n")
    rel = summary.reliability
    if rel is not None:
        lines.append(f"reliability over {rel.repeats} repeats: pass@{rel.repeats} {_fmt(rel.pass_at_k)}, "
                     f"pass^{rel.repeats} {_fmt(rel.pass_hat_k)}, mean pass rate {_fmt(rel.mean_pass_rate)}\n")
    tokens = f"tokens: agent {summary.usage.total_tokens:,}"
    if summary.judge_usage.total_tokens:
        tokens += f", judge {summary.judge_usage.total_tokens:,}"
    if summary.cost is not None:
        tokens += f"   cost: {summary.cost:.4f}"
    if summary.latency_p50_s is not None:
        tokens += f"   latency p50 {summary.latency_p50_s:.2f}s p95 {summary.latency_p95_s:.2f}s"
    lines.append(tokens + f"   time: {summary.duration_s:.1f}s\n")
    if summary.status != "completed" or summary.abort_reason:
        lines.append(f"Run {summary.status}: {summary.abort_reason or ''}\n", style="bold yellow")
    gate = summary.gate
    if gate is not None:
        style = "bold green" if gate.passed else ("bold red" if gate.passed is False else "bold yellow")
        lines.append(gate.message, style=style)
    return lines


def render_run(state: RunState, summary: RunSummary) -> RenderableType:
    return Group(samples_table(state, f"{summary.suite}"), aggregates_table(summary), footer(summary))
