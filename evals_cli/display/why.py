"""`evals report RUN --why full|all`: every reason whole, in the terminal.

The lines under the table (`display.reasons.Reasons`) are cut to fit a screen; a judge's reasoning, a simulated
user's goal judgement or a per-reply verdict is often longer than that, and the reasons behind a *passing* judge
grade are never listed there at all, although that is where a lenient judge hides. This view prints them whole:

- `full`: every sample run that failed or errored, with the error or every grade that is under full marks or
  failed it, and every judge's grade of it (goal judgements included), each reason as written;
- `all`: every sample run, passing ones too, with every grade's reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.padding import Padding
from rich.text import Text

from evals_cli.models.results import Grade, SampleResult

WhyMode = Literal["short", "full", "all"]
WHY_MODES: tuple[WhyMode, ...] = ("short", "full", "all")


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _name(result: SampleResult) -> str:
    return result.sample_id if result.repeat <= 0 else f"{result.sample_id} (repeat {result.repeat + 1})"


def failing(result: SampleResult) -> bool:
    return result.error is not None or result.passed is False


def is_judged(grade: Grade) -> bool:
    """A model's verdict (a judge, a goal-completion judge): the grades whose reasoning a person should read."""
    return "judge" in grade.metadata or "goal_met" in grade.metadata


def _shown(name: str, grade: Grade, result: SampleResult, mode: WhyMode) -> bool:
    if mode == "all":
        return True
    blamed = any(f.grader == name for f in result.failed_by)
    low = grade.score is None or (grade.applicable and grade.score < 0.999)
    return blamed or low or is_judged(grade)


def _head(result: SampleResult) -> Text:
    head = Text(_name(result), style="bold")
    if result.error is not None:
        word = "incomplete" if result.error.incomplete else "error"
        head.append(f"  {word}: {result.error.category}", style="yellow")
    elif result.passed is None:
        head.append("  not graded" if not result.score_note else "  n/a: nothing to check", style="dim")
    elif result.passed:
        head.append("  ✓ passed", style="green")
    else:
        labels = list(dict.fromkeys(f.label for f in result.failed_by))
        head.append("  ✗ failed" + (f": {', '.join(labels)}" if labels else ""), style="red")
    if result.score is not None:
        head.append(f"  score {_score(result.score)}")
    return head


def _grade_head(name: str, grade: Grade, result: SampleResult) -> Text:
    style = "yellow" if grade.score is None else ("dim" if not grade.applicable else
                                                  "green" if grade.score >= 0.999 else "red")
    line = Text(f"{name} ", style="bold")
    line.append("error" if grade.score is None else ("n/a" if not grade.applicable else _score(grade.score)),
                style=style)
    if grade.turns_total:
        line.append(f" ({grade.turns_passed}/{grade.turns_total} turns)")
    meta = grade.metadata
    if "judge" in meta:
        raw = meta.get("raw_score")
        line.append(f" · judge {meta['judge']}" + (f", raw score {raw:g}" if isinstance(raw, int | float) else ""),
                    style="dim")
    if "goal_met" in meta:
        if meta.get("goal_met"):
            turn = meta.get("turn_of_success")
            line.append(" · goal met" + (f" at turn {turn}" if turn else ""), style="green")
        else:
            line.append(" · goal not met", style="red")
        if meta.get("turn_problem"):
            line.append(f" ({meta['turn_problem']})", style="yellow")
    for failure in result.failed_by:
        if failure.grader == name:
            line.append(f" · fails the sample ({failure.reason})" if failure.reason else " · fails the sample",
                        style="red")
    return line


def _paragraphs(text: str, indent: int) -> Iterator[RenderableType]:
    """The text as written, its own line breaks kept, wrapped by the console between words, never cut."""
    if text.strip():
        yield Padding(Text(text.strip("\n")), (0, 0, 0, indent))


def grade_lines(name: str, grade: Grade, result: SampleResult) -> Iterator[RenderableType]:
    yield Padding(_grade_head(name, grade, result), (0, 0, 0, 2))
    yield from _paragraphs(grade.rationale or "", 6)
    if grade.error and grade.error != grade.rationale:
        yield from _paragraphs(f"error: {grade.error}", 6)
    word = "reply" if grade.metadata.get("scope") == "reply" else "turn"
    failed = set(grade.metadata.get("replies_failed") or [])
    for turn in grade.per_turn_grades or []:
        mark = " (failed)" if turn.turn in failed else ""
        yield from _paragraphs(f"{word} {turn.turn + 1} {_score(turn.score)}{mark}: {turn.rationale}".rstrip(": "), 6)


class WholeReasons:
    """Every reason whole (see the module's docstring); `said` gives the errors it printed, so the abort and gate
    lines after it need not print them again."""

    def __init__(self, results: Iterable[SampleResult], mode: WhyMode = "full") -> None:
        self.mode = mode
        self.results = [r for r in results if mode == "all" or failing(r)]

    def said(self) -> list[str]:
        return [f"{r.error.category} error: {r.error.message}" for r in self.results if r.error is not None]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.mode == "all":
            title = f"every reason of {len(self.results)} sample run{'s' if len(self.results) != 1 else ''}:"
        elif self.results:
            title = f"why {len(self.results)} sample run{'s' if len(self.results) != 1 else ''} did not pass, whole:"
        else:
            return
        yield Text(title, style="bold")
        for result in self.results:
            yield from sample_reasons(result, self.mode)
            yield Text("")


def sample_reasons(result: SampleResult, mode: WhyMode = "full") -> Iterator[RenderableType]:
    """One sample run's verdict and its reasons whole: what `--why` prints for it, and the failure text the
    pytest plugin (evals_cli/testing.py) gives, so both say the same."""
    yield _head(result)
    if result.error is not None:
        yield from _paragraphs(f"{result.error.category} error: {result.error.message}", 2)
    for failure in result.failed_by:
        if failure.grader is None:  # the weighted rule, an unknown tool: not a grade of its own
            yield from _paragraphs(f"{failure.label}: {failure.reason}".rstrip(": "), 2)
    for name, grade in result.grades.items():
        if _shown(name, grade, result, mode):
            yield from grade_lines(name, grade, result)
