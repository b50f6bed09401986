"""Post-run exporters: a finished run's results rewritten for other tools (JUnit XML, TaskResult JSONL, HTML).

Each exporter is a plain function over `SampleResult`s (and the `RunSummary` when it needs run-level
numbers), so the CLI can call it right after `evals run` or later over a run folder read back with
`evals_cli.output.files.read_results` / `read_summary`.
"""

from __future__ import annotations

from pathlib import Path

from evals_cli.exporters.html import render_html, write_html
from evals_cli.exporters.junit import JUnitCounts, build_junit, write_junit
from evals_cli.exporters.task_results import task_result, write_task_results
from evals_cli.models.results import RunSummary
from evals_cli.output.files import read_results


def export_run(run_dir: Path, summary: RunSummary, *, junit: Path | None = None, task_results: Path | None = None,
               threshold: float = 1.0) -> None:
    """The exports `evals run --junit/--task-results` asks for, read back from the run's results file."""
    if junit is not None:
        write_junit(read_results(run_dir), summary, junit, threshold=threshold)
    if task_results is not None:
        write_task_results(read_results(run_dir), task_results)


__all__ = [
    "JUnitCounts", "build_junit", "export_run", "render_html", "task_result", "write_html", "write_junit",
    "write_task_results",
]
