"""TaskResult JSONL: one record per sample in the shape of Microsoft Agent Framework's lab tools.

The lab benchmarks (`agent_framework_lab_gaia` and friends) write and view `TaskResult` records —
`{task_id, task, prediction, evaluation, runtime_seconds, error}` — so runs of evals-cli can be read by
the same viewers and notebooks. Our richer data goes into `evaluation.details`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evals_cli.exporters.base import EXPORTERS, FinishedRun
from evals_cli.exporters.common import case_name, model_calls, prepare, unique
from evals_cli.models.results import SampleResult


def task_result(result: SampleResult) -> dict[str, Any]:
    """One sample as a TaskResult record.

    `task_id` is unique per line (`id#repeat` for repeats), `task.task_id` is the sample's own id, so a
    consumer can group repeats of one task. An errored sample is incorrect with score null (never 0: the
    agent was not judged) and says why in `details.error` (and in `error`, where the lab tools look). Graders
    with nothing to check are listed in `details.not_applicable`, not among the scores.
    """
    calls = [call.name for call in result.trajectory.tool_calls]
    details: dict[str, Any] = {
        # a grader with nothing to check has no score here (its conventional 1.0 would be averaged as one)
        "scores": {name: grade.score for name, grade in result.grades.items() if grade.applicable},
        "tools_used": unique(calls),
        "tool_call_order": calls,
        "steps": model_calls(result),
    }
    not_applicable = [name for name, grade in result.grades.items() if not grade.applicable]
    if not_applicable:
        details["not_applicable"] = not_applicable
    error = f"{result.error.category}: {result.error.message}" if result.error else None
    if error is not None:
        details["error"] = error
    return {
        "task_id": case_name(result),
        "task": {"task_id": result.sample_id, "question": result.input},
        "prediction": {"prediction": result.trajectory.final_answer},
        "evaluation": {
            "is_correct": result.passed is True and error is None,
            "score": None if error is not None else result.score,
            "details": details,
        },
        "runtime_seconds": result.latency_s,
        "error": error,
    }


def write_task_results(results: Iterable[SampleResult], path: Path | str) -> int:
    """Write one TaskResult JSON record per line; returns how many were written."""
    count = 0
    with prepare(path).open("w", encoding="utf-8") as fh:
        for result in results:
            fh.write(json.dumps(task_result(result), ensure_ascii=False) + "\n")
            count += 1
    return count


@EXPORTERS.register("task_results")
def export_task_results(run: FinishedRun, path: Path) -> int:
    """`--task-results PATH`: one TaskResult record per sample."""
    return write_task_results(run.results(), path)
