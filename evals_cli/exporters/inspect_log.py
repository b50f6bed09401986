"""A finished run as an inspect_ai `.eval` log, so that it opens in `inspect view` beside inspect's own runs
(`evals report RUN --format inspect -o FILE.eval`, or `--export inspect=FILE.eval`).

The file is the zip inspect_ai's eval recorder reads (inspect_ai/log/_recorders/eval.py): `header.json` (the
`EvalLog` without its samples: the eval spec, results, stats, status), one `samples/<id>_epoch_<n>.json` per
result (inspect_samples.py), `summaries.json` (the list `inspect view` shows) and `reductions.json` (each
grader's score per sample over its repeats). It is written with the standard library: inspect_ai is a test
dependency only, whose `read_eval_log` reads the file back in the tests.

The mapping: the suite is the task, the agent's model the model, the dataset the samples run; a repeat is an
epoch (1-based); each grader a scorer whose metrics are evals-cli's own aggregates under their own names
(`avg_score`, `accuracy`, `min`, `max`, `median`: inspect's `accuracy` is another measure, so no name is
borrowed); the gate's verdict goes into `results.metadata.gate`, the run's status into `status` (completed:
success, interrupted: cancelled, aborted: error with its reason).
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.exporters.base import EXPORTERS, FinishedRun
from evals_cli.exporters.common import prepare
from evals_cli.exporters.inspect_samples import sample, short_id, summary
from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.output.manifest import Manifest, read_manifest

_STATUS = {"completed": "success", "interrupted": "cancelled", "aborted": "error"}
_METRICS = ("avg_score", "accuracy", "min", "max", "median")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)


def _manifest(run_dir: Path) -> Manifest | None:
    try:
        return read_manifest(run_dir if run_dir.is_dir() else run_dir.parent)
    except ConfigError:  # a folder written by a version without run.json: the summary alone
        return None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evals-cli")
    except PackageNotFoundError:
        return "unknown"


def _spec(summary_: RunSummary, manifest: Manifest | None, ids: list[str], model: str) -> dict[str, Any]:
    """The `EvalSpec`: the suite as the task, the agent's model, the dataset run."""
    created = summary_.started_at or summary_.finished_at
    return {
        "eval_id": short_id("eval", summary_.suite, created), "run_id": short_id("run", summary_.suite, created),
        "created": created, "task": summary_.suite, "task_id": short_id("task", summary_.suite),
        "task_version": 0, "solver": "evals-cli",
        "dataset": {"name": summary_.suite, "samples": len(ids), "sample_ids": ids, "shuffled": False},
        "model": model, "config": {"epochs": manifest.repeats if manifest else 1},
        "packages": {"evals-cli": _version()},
        "scorers": [{"name": name, "options": {}, "metadata": {}} for name in summary_.graders],
        "metadata": {"evals_cli": {"fingerprint": manifest.fingerprint.model_dump() if manifest else None,
                                   "gate": manifest.gate if manifest else None, "shard": manifest.shard if manifest
                                   else None}}}


def _results(summary_: RunSummary, repeats: int) -> dict[str, Any]:
    """`EvalResults`: one score per grader, its aggregates as metrics (a metric with no value is left out)."""
    scores = []
    for name, agg in summary_.graders.items():
        metrics = {m: {"name": m, "value": getattr(agg, m), "params": {}} for m in _METRICS
                   if getattr(agg, m) is not None}
        applicable = agg.applicable if agg.applicable is not None else agg.count - agg.errors
        scores.append({"name": name, "scorer": name, "reducer": "mean" if repeats > 1 else None,
                       "scored_samples": applicable, "unscored_samples": max(0, agg.count - applicable),
                       "params": {}, "metrics": metrics})
    gate = summary_.gate.model_dump(mode="json") if summary_.gate is not None else None
    return {"total_samples": summary_.total, "completed_samples": summary_.graded, "scores": scores,
            "metadata": {"gate": gate, "passed": summary_.passed, "failed": summary_.failed,
                         "errored": summary_.errored, "exit_code": summary_.exit_code}}


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}


def _header(summary_: RunSummary, manifest: Manifest | None, ids: list[str], model: str) -> dict[str, Any]:
    """The `EvalLog` inspect reads first: everything but the samples."""
    roles = {role: _usage(use.usage.prompt_tokens, use.usage.completion_tokens) for role, use in
             summary_.roles.items()}
    header: dict[str, Any] = {
        "version": 2, "status": _STATUS.get(summary_.status, "error"),
        "eval": _spec(summary_, manifest, ids, model),
        "plan": {"name": "plan", "steps": [{"solver": "evals-cli", "params": {}}], "config": {}},
        "results": _results(summary_, manifest.repeats if manifest else 1),
        "stats": {"started_at": summary_.started_at, "completed_at": summary_.finished_at,
                  "model_usage": {model: _usage(summary_.usage.prompt_tokens, summary_.usage.completion_tokens)},
                  "role_usage": roles}}
    if summary_.status != "completed":
        reason = summary_.abort_reason or f"the run was {summary_.status}"
        header["error"] = {"message": reason, "traceback": "", "traceback_ansi": ""}
    return header


def _last_lines(run: FinishedRun) -> tuple[dict[tuple[str, int], int], str | None]:
    """The line of each (sample, repeat) that counts, the last one written (a resumed run writes a retried sample
    again), and the first model a row named; read in a pass of its own so that no result is held in memory."""
    last: dict[tuple[str, int], int] = {}
    model = None
    for index, result in enumerate(run.results()):
        last[(result.sample_id, result.repeat)] = index
        model = model or result.trajectory.agent_model
    return last, model


class _Reductions:
    """Each grader's score per sample, the mean of its repeats that were given a score (inspect's default
    reducer); a sample with none is left out, never a zero."""

    def __init__(self) -> None:
        self.per: dict[str, dict[str, list[tuple[float, str]]]] = {}

    def add(self, result: SampleResult) -> None:
        for name, grade in result.grades.items():
            if grade.score is not None and grade.applicable:
                self.per.setdefault(name, {}).setdefault(result.sample_id, []).append((grade.score, grade.rationale))

    def json(self) -> list[dict[str, Any]]:
        return [{"scorer": name, "reducer": "mean",
                 "samples": [{"value": sum(s for s, _ in given) / len(given), "sample_id": sid,
                              "explanation": given[0][1] if len(given) == 1 else None} for sid, given in by.items()]}
                for name, by in self.per.items()]


def _entry_name(result: SampleResult, taken: set[str]) -> str:
    """`samples/<id>_epoch_<n>.json`, the id made safe for a zip member name (the JSON keeps it whole)."""
    base = f"samples/{_UNSAFE.sub('_', result.sample_id)[:100]}_epoch_{result.repeat + 1}"
    name, n = f"{base}.json", 1
    while name in taken:
        n += 1
        name = f"{base}-{n}.json"
    taken.add(name)
    return name


def write_inspect_log(run: FinishedRun, path: Path) -> Path:
    """The run's `.eval` log at `path` (its folder created); returns the path."""
    manifest = _manifest(run.run_dir)
    last, row_model = _last_lines(run)
    model = (manifest.model if manifest and manifest.model else None) or row_model or "unknown"
    ids = list(dict.fromkeys(sample_id for sample_id, _ in last))
    target = prepare(path)
    summaries: list[dict[str, Any]] = []
    taken: set[str] = set()
    reductions = _Reductions()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for index, result in enumerate(run.results()):
            if last.get((result.sample_id, result.repeat)) != index:
                continue
            one = sample(result, model)
            archive.writestr(_entry_name(result, taken), _dumps(one))
            summaries.append(summary(one))
            reductions.add(result)
        archive.writestr("summaries.json", _dumps(summaries))
        archive.writestr("reductions.json", _dumps(reductions.json()))
        archive.writestr("header.json", _dumps(_header(run.summary, manifest, ids, model)))
    return target


@EXPORTERS.register("inspect")
def export_inspect(run: FinishedRun, path: Path) -> None:
    write_inspect_log(run, path)
