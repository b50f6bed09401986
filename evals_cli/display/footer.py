"""The lines under the graders table: the counts, what the judges' agreement and calibration say, the tokens,
cost and time, what --cache saved, why the run stopped and the gate verdict in words.

Apart from the table (table.py) because these are the run's figures, read off the summary alone: a run that no
model answered shows them with no table at all.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from evals_cli.display import reduced
from evals_cli.display.reasons import reason_kind
from evals_cli.display.text_fit import score_text
from evals_cli.models.results import CacheUse, RunSummary


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
        lines.append(f"reliability over {rel.repeats} repeats: pass@{rel.repeats} {score_text(rel.pass_at_k)}, "
                     f"pass^{rel.repeats} {score_text(rel.pass_hat_k)}, mean pass rate {score_text(rel.mean_pass_rate)}\n")
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


def cache_line(cache: CacheUse) -> str:
    """'cache: 12 hits, 3 misses (judge 3 misses): only the misses called a model': what --cache saved."""
    roles = ", ".join(f"{role} {count.misses}" for role, count in cache.roles.items() if count.misses)
    misses = f"{cache.misses} miss{'es' if cache.misses != 1 else ''}" + (f" ({roles})" if roles else "")
    return (f"cache: {cache.hits} hit{'s' if cache.hits != 1 else ''}, {misses}; only the misses called a model "
            f"(and were added to {cache.file}); tokens and cost count the cached answers too")
