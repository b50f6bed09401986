"""The final results table: a row per sample, why each failed or errored one did, per-grader aggregates, the
gate verdict in words.

Nothing is cut mid-word: a table wider than the console wraps its tools column at the commas; when even that
would fold a sample id or a tool name, the samples are shown as one block each instead."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rich import box
from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from evals_cli.display import reduced
from evals_cli.display.state import Cell, Row, RunState
from evals_cli.display.state_diff import describe_changes
from evals_cli.display.why import WholeReasons
from evals_cli.invocation import command
from evals_cli.models.results import CacheUse, RunSummary

MAX_REASON_ROWS = 20


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


def _row_score(row: Row) -> str:
    """The weighted score; `n/a` when the gate's graders had nothing to check (never a made-up number)."""
    return "n/a" if row.score is None and row.score_na else _fmt(row.score)


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


def fit(text: str, width: int) -> str:
    """`text` in at most `width` cells, shortened at a word boundary with `…` (mid-word only for one long word)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    cut = set_cell_size(text, width)
    space = cut.rfind(" ")
    if space > 0:  # at the last word boundary that fits; inside a word only when the first word is too long
        cut = cut[:space]
    else:
        cut = cut[:-1]
    return cut.rstrip(" ,;:") + "…"


def wrap(text: str, width: int, max_lines: int = 2) -> list[str]:
    """`text` in at most `max_lines` lines of `width` cells, broken between words; what does not fit is cut at a
    word boundary with `…` (a single word longer than a line is the only thing ever cut inside)."""
    width = max(width, 8)
    lines: list[str] = []
    rest = " ".join(text.split())
    while rest and len(lines) < max_lines:
        if cell_len(rest) <= width:
            lines.append(rest)
            rest = ""
            break
        if len(lines) == max_lines - 1:
            lines.append(fit(rest, width))
            rest = ""
            break
        cut = set_cell_size(rest, width + 1)
        space = cut.rfind(" ")
        if space <= 0:  # one word longer than the line
            head = set_cell_size(rest, width)
            lines.append(head)
            rest = rest[len(head):].lstrip()
        else:
            lines.append(rest[:space].rstrip())
            rest = rest[space + 1:].lstrip()
    return lines


MAX_GROUP_IDS = 6  # sample ids named in one group's line; the rest are counted


@dataclass
class ReasonGroup:
    """Failing samples that failed for exactly the same reasons: one cause, said once with every sample it hit
    (an unreachable endpoint is one problem, not one per sample)."""

    rows: list[Row]
    reasons: list[str]

    @property
    def errored(self) -> bool:
        return all(row.error is not None and row.passes == 0 for row in self.rows)

    @property
    def more(self) -> int:
        """Reasons past the kept ones (see RunState): `--why full` shows them."""
        return max(len(row.more_reasons) for row in self.rows)

    def ids(self) -> str:
        names = [row.sample_id for row in self.rows]
        shown = ", ".join(names[:MAX_GROUP_IDS])
        return shown + (f" and {len(names) - MAX_GROUP_IDS} more" if len(names) > MAX_GROUP_IDS else "")


def row_reasons(row: Row) -> list[str]:
    return row.reasons or [f"error: {row.error}" if row.error else "failed"]


def reason_groups(rows: Iterable[Row]) -> list[ReasonGroup]:
    """The failing rows grouped by identical reasons, in the order each group's first sample came."""
    groups: dict[tuple[str, ...], ReasonGroup] = {}
    for row in rows:
        reasons = row_reasons(row)
        key = (*reasons, "+" * len(row.more_reasons), "error" if row.error is not None and row.passes == 0 else "")
        if key in groups:
            groups[key].rows.append(row)
        else:
            groups[key] = ReasonGroup([row], reasons)
    return list(groups.values())


def wrap_with_tail(text: str, tail: str, width: int, max_lines: int) -> tuple[list[str], bool]:
    """`text` then `tail` (a list of sample ids) in about `max_lines` lines of `width`, the tail never cut: when
    both do not fit, the text gets all but one line (shortened at a word boundary) and the tail the next ones.
    Also whether the text was cut."""
    whole = wrap(f"{text} {tail}", width, max_lines=1_000)
    if len(whole) <= max_lines:
        return whole, False
    lines = wrap(text, width, max_lines=max(max_lines - 1, 1))
    return lines + wrap(tail, width, max_lines=1_000), lines[-1].endswith("…") and not text.endswith("…")


class Reasons:
    """Under the table: why each failed or errored sample did not pass (the failing graders with their rationale,
    or the error), each reason on its own line; samples that failed for the same reasons are one line naming
    them all, so one cause is said once. At most MAX_REASON_ROWS entries, then how to see every reason whole
    (`evals report RUN --why full`) and the command that opens the full report."""

    def __init__(self, state: RunState, run_dir: Path | str | None, who: str | None = None) -> None:
        self.state = state
        self.run = str(run_dir) if run_dir is not None else "RUN"
        self.who = who  # a model of a run over several: named in the heading

    def said(self) -> list[str]:
        """Every reason these lines say, so the lines after them (abort, gate) need not say it again."""
        return [reason for group in reason_groups(self.state.failing_rows)[:MAX_REASON_ROWS]
                for reason in group.reasons]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = self.state.failing_rows
        total = self.state.failing_count
        if not total:
            return
        width = options.max_width
        report = command("report", self.run, "--html", "report.html")
        errored = sum(1 for row in rows if row.error is not None and row.passes == 0)
        yield Text(f"why {total} sample{'s' if total != 1 else ''}" + (f" of {self.who}" if self.who else "")
                   + " did not pass" + (f" ({errored} errored)" if errored else "") + ":", style="bold")
        groups = reason_groups(rows)
        shown = groups[:MAX_REASON_ROWS]
        singles = [g.rows[0].sample_id for g in shown if len(g.rows) == 1]
        # ids line up in a column as wide as the longest that still leaves room for the reason; longer ones
        # take what they need (never cut)
        pad = max((cell_len(i) for i in singles if cell_len(i) <= width - 44), default=0)
        lines = 2 if width >= 120 else 3
        cut = False
        for group in shown:
            style = "yellow" if group.errored else "red"
            more = f" (+{group.more} more)" if group.more else ""
            if len(group.rows) > 1:
                text = f"{len(group.rows)} samples: " + "; ".join(group.reasons) + more
                wrapped, was_cut = wrap_with_tail(text, f"({group.ids()})", width - 4, lines + 1)
                cut = cut or was_cut or bool(group.more)
                for i, part in enumerate(wrapped):
                    yield Text("  " if i == 0 else "    ", style=style).append(part)
                continue
            texts, was_cut = _one_sample(group, pad, width, lines)
            yield from texts
            cut = cut or was_cut
        hidden = total - sum(len(g.rows) for g in shown)
        if hidden > 0:
            yield Text(fit(f"  … and {hidden} more: see {report}", width), style="dim")
        # commands stay on one line whatever the width, so that they run when pasted (a fold breaks them)
        if cut:
            yield Text(f"every reason whole: {command('report', self.run, '--why', 'full')}", no_wrap=True,
                       overflow="ignore")
        yield Text(f"full report: {report}", no_wrap=True, overflow="ignore")
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
        table.add_row(name, graded, str(agg.errors), _fmt(agg.avg_score), _fmt(agg.accuracy),
                      _fmt(agg.min), _fmt(agg.max), _fmt(agg.median),
                      f"{weights[name]:g}" if name in weights else "—")
    return table


def _one_sample(group: ReasonGroup, pad: int, width: int, lines: int) -> tuple[list[Text], bool]:
    """One sample's reasons, its id in a column `pad` wide: (the lines, whether a reason was cut)."""
    style = "yellow" if group.errored else "red"
    more = f" (+{group.more} more)" if group.more else ""
    out: list[Text] = []
    cut = False
    row = group.rows[0]
    head = f"  {row.sample_id}" + " " * max(pad - cell_len(row.sample_id), 0) + "  "
    indent = cell_len(head)
    if width - indent < 40:  # a long id (or a narrow console): the id alone, whole, the reason under it
        out.append(Text(f"  {row.sample_id}"))
        head, indent = "      ", 6
    for n, reason in enumerate(group.reasons):
        text = reason + (more if n == len(group.reasons) - 1 else "")
        parts = wrap(text, width - indent, max_lines=lines)
        cut = cut or parts[-1].endswith("…") and not text.endswith("…")
        for i, part in enumerate(parts):
            line = Text(head if i == 0 and n == 0 else " " * indent)
            line.append(part, style=style)
            out.append(line)
    return out, cut or bool(group.more)


def footer(summary: RunSummary, said: Iterable[str] = ()) -> Text:
    """The counts, tokens, cost and time, then why the run stopped and the gate verdict. `said`: the reasons
    printed above (see Reasons.said); a cause they already gave is referred to, not printed again."""
    lines = Text()
    what = f"{summary.total} samples"
    if summary.reliability is not None and summary.reliability.repeats > 1:  # a count of runs, not of samples
        ran = summary.coverage.run if summary.coverage is not None else None
        what = f"{summary.total} sample runs" + (f" ({ran} samples × {summary.reliability.repeats} repeats)"
                                                 if ran is not None else "")
    counts = f"{what}: {summary.passed} passed, {summary.failed} failed, {summary.errored} errored"
    if summary.unchecked:  # no verdict: nothing they are judged on had anything to check
        counts += f", {summary.unchecked} with nothing to check"
    lines.append(counts + "\n")
    partial = summary.coverage.line() if summary.coverage is not None else None
    if partial:  # a verdict over part of the dataset must say so, and why
        lines.append(partial + "\n", style="bold yellow")
    if summary.errors_by_category:
        lines.append("errors: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.errors_by_category.items())) + "\n")
    _judge_lines(summary, lines)
    rel = summary.reliability
    if rel is not None:
        lines.append(f"reliability over {rel.repeats} repeats: pass@{rel.repeats} {_fmt(rel.pass_at_k)}, "
                     f"pass^{rel.repeats} {_fmt(rel.pass_hat_k)}, mean pass rate {_fmt(rel.mean_pass_rate)}\n")
    if (line := reduced.counts_line(summary)) is not None:
        lines.append(line + "\n")
    lines.append(_tokens_line(summary) + f"   time: {summary.duration_s:.1f}s\n")
    if summary.cache is not None:
        lines.append(cache_line(summary.cache) + "\n")
    cause = summary.abort_reason
    if summary.status != "completed" or cause:
        above = next((reason for reason in said if cause and cause in reason), None)
        told = f"the {reason_kind(above)} above" if above is not None else cause or ""
        lines.append(f"Run {summary.status}: {told}\n", style="bold yellow")
    gate = summary.gate
    if gate is not None:
        style = "bold green" if gate.passed else ("bold red" if gate.passed is False else "bold yellow")
        message = gate.message
        if cause and message.endswith(f" ({cause})"):  # the line above said (or pointed at) the cause
            message = message[: -len(cause) - 3]
        lines.append(message, style=style)
    return lines


def _judge_lines(summary: RunSummary, lines: Text) -> None:
    """What the judges' agreement and their calibration labels say about the run's judged grades."""
    for name, agreement in summary.judge_agreement.items():
        parts = []
        if agreement.alpha is not None:
            parts.append(f"Krippendorff's alpha {agreement.alpha:.2f} across {', '.join(agreement.judges)} "
                         f"over {agreement.units} grades")
        if agreement.unreliable:
            parts.append(f"{agreement.unreliable} grade(s) flagged unreliable (spread > max_spread)")
        if parts:
            lines.append(f"judge {name}: " + "; ".join(parts) + "\n")
    if summary.calibration:  # judges with `calibration:` labels: the raw pass rate beside the corrected one
        from evals_cli.calibration.figures import corrected_line

        for name, calibration in summary.calibration.items():
            lines.append(corrected_line(name, calibration) + "\n")
            for warning in calibration.warnings:
                lines.append(f"warning: {warning}\n", style="yellow")


def _tokens_line(summary: RunSummary) -> str:
    """Tokens per role, the cost (split by role when more than one spent) and the latencies."""
    tokens = f"tokens: agent {summary.usage.total_tokens:,}"
    if summary.judge_usage.total_tokens:
        tokens += f", judge {summary.judge_usage.total_tokens:,}"
    if summary.user_usage.total_tokens:
        tokens += f", user simulator {summary.user_usage.total_tokens:,}"
    if summary.cost is not None:
        tokens += f"   cost: {summary.cost:.4f}"
        priced = [f"{role} {use.cost:.4f}" for role, use in summary.roles.items() if use.cost]
        if len(priced) > 1:  # the split only says something when more than one role spent
            tokens += f" ({', '.join(priced)})"
    if summary.latency_p50_s is not None:
        tokens += f"   latency p50 {summary.latency_p50_s:.2f}s p95 {summary.latency_p95_s:.2f}s"
    return tokens


def reason_kind(reason: str) -> str:
    """'endpoint error' of 'endpoint error: cannot reach ...': how the abort line points at a reason above."""
    head = reason.split(":", 1)[0]
    return head if head.endswith("error") and len(head) < 40 else "error"


def cache_line(cache: CacheUse) -> str:
    """'cache: 12 hits, 3 misses (judge 3 misses): only the misses called a model': what --cache saved."""
    roles = ", ".join(f"{role} {count.misses}" for role, count in cache.roles.items() if count.misses)
    misses = f"{cache.misses} miss{'es' if cache.misses != 1 else ''}" + (f" ({roles})" if roles else "")
    return (f"cache: {cache.hits} hit{'s' if cache.hits != 1 else ''}, {misses}; only the misses called a model "
            f"(and were added to {cache.file}); tokens and cost count the cached answers too")


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
