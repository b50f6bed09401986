"""Under the results table: why each failed or errored sample did not pass, samples that failed for the same
reasons said once with every sample they hit, cut to fit the screen with the command that shows them whole.

Apart from the table (table.py) because the models side by side (matrix.py) show the same reasons under their
own table, and `evals report --why full` replaces these lines (why.py) while the table stays.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from evals_cli.display.state import Row, RunState
from evals_cli.display.text_fit import fit, wrap, wrap_with_tail
from evals_cli.invocation import command

MAX_REASON_ROWS = 20


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


def reason_kind(reason: str) -> str:
    """'endpoint error' of 'endpoint error: cannot reach ...': how the abort line points at a reason above."""
    head = reason.split(":", 1)[0]
    return head if head.endswith("error") and len(head) < 40 else "error"
