"""The final results table: a row per sample, why each failed or errored one did (reasons.py), per-grader
aggregates, the gate verdict in words (footer.py).

Nothing is cut mid-word: a table wider than the console wraps its tools column at the commas; when even that
would fold a sample id or a tool name, the samples are shown as one block each instead."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from evals_cli.display import reduced
from evals_cli.display.footer import cache_line, footer
from evals_cli.display.reasons import MAX_REASON_ROWS, ReasonGroup, Reasons, reason_groups, reason_kind, row_reasons
from evals_cli.display.state import Cell, Row, RunState
from evals_cli.display.state_diff import describe_changes
from evals_cli.display.text_fit import fit, score_text, wrap, wrap_with_tail
from evals_cli.display.why import WholeReasons
from evals_cli.models.results import RunSummary

__all__ = [  # what callers import from here; the reasons and the footer have modules of their own
    "MAX_REASON_ROWS", "AggregatesView", "ReasonGroup", "Reasons", "SamplesView", "StateDiffs", "aggregates_table",
    "cache_line", "fit", "footer", "reason_groups", "reason_kind", "render_run", "row_reasons", "samples_table",
    "wrap", "wrap_with_tail",
]


def _cell(cell: Cell | None) -> Text:
    if cell is None:
        return Text("")
    if cell.error:
        return Text("error", style="yellow")
    if cell.na:  # nothing to check: the 1.0 is a convention, not a result
        return Text("n/a", style="dim")
    text = score_text(cell.score)
    if cell.turns:
        text += f" ({cell.turns[0]}/{cell.turns[1]})"
    if cell.unreliable:
        text += " unreliable"
    style = "green" if (cell.score or 0) >= 0.999 else ("red" if (cell.score or 0) < 0.5 else "yellow")
    return Text(text, style=style)


def _row_score(row: Row) -> str:
    """The weighted score; `n/a` when the gate's graders had nothing to check (never a made-up number)."""
    return "n/a" if row.score is None and row.score_na else score_text(row.score)


def _tools(tools: list[str]) -> str:
    if not tools:
        return "—"
    shown = ", ".join(tools[:6])
    return shown + (f" +{len(tools) - 6}" if len(tools) > 6 else "")


def _mark(row: Row) -> Text:
    if row.runs > 1:
        style = "green" if row.passes == row.runs else ("red" if row.passes == 0 else "yellow")
        mark = Text(f"{row.passes}/{row.runs}", style=style)
        if row.error:
            mark.append(f" ({row.error})", style="yellow")
        if row.failed_by:
            mark.append(f" {', '.join(row.failed_by)}", style="red")
        if row.reduced is not None:  # gate.reducer: what the gate counted for the sample
            mark.append_text(reduced.mark(row.reduced, row.reducer))
        return mark
    if row.error:
        return Text(f"{'incomplete' if row.incomplete else 'error'}: {row.error}", style="yellow")
    if row.passed is None:
        if row.unchecked:  # graded, but none of what it is judged on had anything to check
            return Text("n/a: nothing to check", style="dim")
        return Text("?", style="yellow")
    if row.passed:
        return Text("✓", style="green")
    # the row names what failed it: a required grader, the weighted rule, an unknown tool
    return Text("✗" + (f" {', '.join(row.failed_by)}" if row.failed_by else ""), style="red")


def _row_tools(row: Row) -> str:
    return _tools(row.tools) + ("" if row.stop_reason == "completed" else f" [{row.stop_reason}]")


def _natural_width(console: Console, options: ConsoleOptions, table: Table) -> int:
    """The width the table takes when nothing is wrapped (a measurement at the console's width is clamped)."""
    return console.measure(table, options=options.update_width(100_000)).maximum


def samples_table(state: RunState, title: str, tight: bool = False) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left", show_lines=False,
                  padding=(0, 0) if tight else (0, 1))
    table.add_column("sample", no_wrap=True)  # an id is never folded (SamplesView picks blocks instead)
    table.add_column("tags")
    table.add_column("tools called")  # wraps at the commas between tool names
    for name in state.grader_names:
        table.add_column(name, justify="right")
    table.add_column("score", justify="right")
    table.add_column("pass" if state.repeats > 1 else "", justify="center")
    for row in state.rows.values():
        table.add_row(Text(row.sample_id), Text(",".join(row.tags)), Text(_row_tools(row)),  # Text: not markup
                      *[_cell(row.cells.get(n)) for n in state.grader_names], _row_score(row), _mark(row))
    if state.hidden_rows:
        table.caption = f"... {state.hidden_rows} more samples in the results file"
    return table


def _intact(lines: list[str], words: Iterable[str]) -> bool:
    """Every word appears whole on some line: nothing was folded or cut."""
    text = "\n".join(lines)
    return all(word in text for word in words if word)


class SamplesView:
    """The samples table when it fits; wrapped at word boundaries when that keeps every id and tool name whole;
    else one block per sample (narrow terminals, CI logs at 80 columns)."""

    def __init__(self, state: RunState, title: str) -> None:
        self.state = state
        self.title = title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        table = samples_table(self.state, self.title)
        if _natural_width(console, options, table) <= width:
            yield table
            return
        table = samples_table(self.state, self.title, tight=True)  # one space between columns, not three
        if _natural_width(console, options, table) <= width:
            yield table
            return
        lines = ["".join(seg.text for seg in line) for line in console.render_lines(table, options, pad=False)]
        words = [row.sample_id for row in self.state.rows.values()]
        words += [tool for row in self.state.rows.values() for tool in row.tools[:6]]
        if _intact(lines, words) and all(cell_len(line.rstrip()) <= width for line in lines):
            yield table
            return
        yield from self._blocks()

    def _blocks(self) -> Iterable[RenderableType]:
        state = self.state
        yield Text(self.title, style="italic")
        for row in state.rows.values():
            head = Text(row.sample_id, style="bold")
            head.append("  ")
            head.append_text(_mark(row))
            yield head
            details = Text()
            if row.tags:
                details.append(f"tags: {', '.join(row.tags)} · ")
            details.append(f"tools: {_row_tools(row)}")
            grades = Text()
            for name in state.grader_names:
                if name not in row.cells:  # an errored sample has no grades: nothing to list
                    continue
                if grades:
                    grades.append(" · ")
                grades.append(f"{name} ")
                grades.append_text(_cell(row.cells.get(name)))
            if grades:
                grades.append(f" · score {_row_score(row)}")
                details.append("\n")
                details.append_text(grades)
            yield Padding(details, (0, 0, 0, 4))
        if state.hidden_rows:
            yield Text(f"... {state.hidden_rows} more samples in the results file", style="dim")
        yield Text("")


class StateDiffs:
    """Under the reasons (`evals report` only): per stateful sample run that changed its world, what it changed,
    one compact diff per file or record (the HTML report has the same with each call's effect)."""

    def __init__(self, state: RunState, run_dir: Path | str | None) -> None:
        self.state = state
        self.run = str(run_dir) if run_dir is not None else "RUN"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        diffs = self.state.diffs
        if not diffs:
            return
        width = options.max_width
        total = len(diffs) + self.state.hidden_diffs
        who = "the agent and the user" if any(c.actor == "user" for d in diffs for c in d.changes) else "the agent"
        yield Text(f"what {who} changed in {total} sample run{'s' if total != 1 else ''} "
                   "(final state against the declared one):", style="bold")
        repeats = self.state.repeats > 1 or any(d.repeat for d in diffs)
        styles = {"+": "green", "-": "red", "~": "yellow", "@": "dim", "…": "dim", " ": ""}
        for diff in diffs:
            yield Text(f"  {diff.sample_id}" + (f" (repeat {diff.repeat + 1})" if repeats else ""))
            for change in describe_changes(diff.changes):
                yield Text(fit(f"    {change.head}", width), style="bold")
                for line in change.lines:
                    yield Text(fit(f"      {line.render()}", width), style=styles.get(line.sign, ""))
        if self.state.hidden_diffs:
            yield Text(fit(f"  … and {self.state.hidden_diffs} more: see evals report {self.run} --html report.html",
                           width), style="dim")
        yield Text("")


class AggregatesView:
    """The graders table, with one space between columns when three do not fit (80 columns): a grader name or
    a heading is never cut."""

    def __init__(self, summary: RunSummary) -> None:
        self.summary = summary

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = aggregates_table(self.summary)
        if _natural_width(console, options, table) > options.max_width:
            table = aggregates_table(self.summary, tight=True)
        yield table


def aggregates_table(summary: RunSummary, tight: bool = False) -> Table:
    table = Table(box=box.SIMPLE, title="graders", title_justify="left", padding=(0, 0) if tight else (0, 1))
    for col in ("grader", "graded", "errors", "avg", "accuracy", "min", "max", "median", "weight"):
        table.add_column(col, justify="left" if col == "grader" else "right", no_wrap=col != "graded")
    weights = summary.gate.weights if summary.gate else {}
    for name, agg in summary.graders.items():
        graded = str(agg.count)
        if agg.applicable is not None and agg.applicable < agg.count:  # n/a samples were not really checked
            graded = f"{agg.applicable} of {agg.count}"
        table.add_row(name, graded, str(agg.errors), score_text(agg.avg_score), score_text(agg.accuracy),
                      score_text(agg.min), score_text(agg.max), score_text(agg.median),
                      f"{weights[name]:g}" if name in weights else "—")
    return table


def render_run(state: RunState, summary: RunSummary, run_dir: Path | str | None = None,
               why: WholeReasons | None = None) -> RenderableType:
    """The samples, why the failing ones failed, the graders, the footer. `run_dir` names the run in the
    command that opens the full report (`evals report RUN --html report.html`); `why` (`evals report --why
    full|all`) prints every reason whole in place of the lines cut to fit."""
    reduced.attach(state, summary)
    reasons: Reasons | WholeReasons = why if why is not None else Reasons(state, run_dir)
    said = reasons.said()
    if summary.made_no_call():  # no model answered: a row per sample with nothing in it says nothing
        note = Text(f"{summary.suite}: no model answered: all {summary.total} samples errored before any reply "
                    "(the reasons below say why)", style="bold yellow")
        return Group(note, reasons, footer(summary, said))
    return Group(SamplesView(state, f"{summary.suite}"), reasons, StateDiffs(state, run_dir),
                 AggregatesView(summary), footer(summary, said))
