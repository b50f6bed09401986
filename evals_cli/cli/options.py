"""Options more than one command takes: the --target file's help, and the exports asked for (`--export
FORMAT=PATH`, --junit, --task-results) of `evals run` and `evals merge`."""

from __future__ import annotations

from pathlib import Path

TARGET_HELP = ("A YAML file with the OpenAI-compatible agent to test (a target block, or target: with optional "
               "tools: and judge:), instead of the suite's target; letta-evals suites need one.")

EXPORT_HELP = ("Also write the run as FORMAT to PATH (repeatable): junit=out/junit.xml, task_results=out/tasks.jsonl, "
               "html=out/report.html.")


def exports_asked(values: list[str] | None, junit: Path | None, task_results: Path | None) -> dict[str, Path]:
    """format -> path of every export asked for (`--export FORMAT=PATH`, and --junit / --task-results, its older
    spellings), checked before anything runs; the exporters are imported only when one is asked for (a run's
    start without an export never pays for them)."""
    if not (values or junit or task_results):
        return {}
    from evals_cli.exporters import parse_exports, requested_exports

    return requested_exports(parse_exports(values or []), junit=junit, task_results=task_results)
