"""Join the result folders of sharded runs into one run: one results file, one summary, one gate verdict.
Refuses folders of different suites or datasets (their fingerprints differ) and samples seen twice. Shards of
a run over several models are merged model by model (`merge_model_runs`).

Each result is written as a run writes it: its final state changes are stored as what changed by the function
the caller hands in (`store_changes`, environment/excerpts.py's), so that the shards of an older evals, which
stored them whole, come out as a run's results do now."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, ConfigError
from evals_cli.gate import Gate
from evals_cli.models.results import Coverage, MatrixSummary, ModelRun, RunSummary
from evals_cli.models.specs import GateSpec
from evals_cli.models.trajectory import StateChange
from evals_cli.output.exit_codes import exit_code_for
from evals_cli.output.files import RESULTS_NAME, ResultsWriter, read_results, read_summary, results_path
from evals_cli.output.manifest import (
    MATRIX_NAME,
    Manifest,
    folder_error,
    make_run_folder,
    read_manifest,
    read_matrix,
    write_manifest,
    write_matrix,
)
from evals_cli.output.summary import Accumulator, combined_exit, combined_verdict

StoreChanges = Callable[[list[StateChange] | None], None]  # a result's final state changes, stored in place


def merge_runs(folders: list[Path], out: Path, max_error_rate: float = 0.2, *,
               store_changes: StoreChanges) -> tuple[RunSummary, list[str]]:
    """(the merged summary, warnings); writes results.jsonl, summary.json and run.json into `out`."""
    if not folders:
        raise ConfigError("evals merge: give the result folders of the shards to join")
    dirs = [results_path(f).parent for f in folders]
    manifests = [read_manifest(d) for d in dirs]
    first = manifests[0]
    for d, m in zip(dirs[1:], manifests[1:], strict=True):
        if m.fingerprint != first.fingerprint or m.suite != first.suite:
            raise ConfigError(f"{d}: not a shard of the same run as {dirs[0]} (suite {m.suite!r} vs "
                              f"{first.suite!r}, or the suite or dataset changed); merge only shards of one suite")
        if m.model != first.model:  # one model's grades under another's name would be a false verdict
            raise ConfigError(f"{d}: a run of the model {m.model}, not {first.model} like {dirs[0]}; merge only shards "
                              "of one model (a run over several models merges model by model: give the top folders)")
    if (out / RESULTS_NAME).exists():
        raise ConfigError(f"{out}: already holds results; merge into a new folder")
    saved = [read_summary(d) for d in dirs]
    unfinished = [_unfinished(d, s) for d, s in zip(dirs, saved, strict=True)]
    gate_spec = GateSpec.model_validate(first.gate)
    gate = Gate(gate_spec, first.graders)
    acc = Accumulator(gate, first.suite, first.graders, first.repeats, dict(first.pricing))
    make_run_folder(out, "-o")  # a file, under a file, unwritable: said before anything is written
    try:
        writer = ResultsWriter(out)
    except OSError as exc:
        raise folder_error(out, exc, "-o") from None
    warnings: list[str] = []
    seen: dict[tuple[str, int], Path] = {}
    samples: set[str] = set()
    try:
        for d in dirs:
            for result in read_results(d, warnings):
                key = (result.sample_id, result.repeat)
                if key in seen:
                    raise ConfigError(f"sample {result.sample_id!r} (repeat {result.repeat}) is in both {seen[key]} "
                                      f"and {d}: the same shard given twice?")
                seen[key] = d
                samples.add(result.sample_id)
                store_changes(result.trajectory.state_changes)
                store_changes(result.trajectory.setup_changes)
                writer.write(result)
                acc.add(result)
    except ConfigError:
        writer.close()
        shutil.rmtree(out, ignore_errors=True)
        raise
    summary = acc.summary()
    summary.coverage = _coverage(saved, acc.total, len(samples))
    stopped = [u for u in unfinished if u]
    if stopped:  # a shard that did not finish leaves samples out: the merged run is incomplete, no verdict
        summary.status = "aborted"
        summary.abort_reason = "; ".join(stopped) + "; finish it with evals run SUITE --resume DIR, then merge again"
    summary.exit_code = exit_code_for(summary, max_error_rate)
    writer.write_summary(summary)
    writer.close()
    write_manifest(out, Manifest(**{**first.model_dump(), "shard": None}))
    shards = sorted(m.shard for m in manifests if m.shard)
    if len(shards) != len(manifests):
        warnings.append("some folders were not run with --shard")
    return summary, warnings


def _unfinished(directory: Path, summary: RunSummary | None) -> str | None:
    """Why a shard's results are not the whole shard (None when it finished)."""
    if summary is None:
        return f"{directory} has no summary.json (the shard was stopped before it finished)"
    if summary.status != "completed" or summary.exit_code in (EXIT_INCOMPLETE, EXIT_INTERRUPTED):
        status = summary.status if summary.status != "completed" else "incomplete"
        return f"{directory} was {status}" + (f" ({summary.abort_reason})" if summary.abort_reason else "")
    return None


def _coverage(saved: list[RunSummary | None], results: int, samples: int) -> Coverage | None:
    """The shards' plans joined: the same dataset rows, filters and -n; the selected rows add up."""
    plans = [s.coverage for s in saved if s is not None and s.coverage is not None]
    if not plans or len(plans) != len(saved):
        return None
    first = plans[0]
    selected = sum(p.selected or 0 for p in plans)
    shards = ", ".join(sorted(p.shard for p in plans if p.shard))
    return Coverage(dataset_rows=first.dataset_rows, tagged=first.tagged, limited=first.limited, selected=selected,
                    expected_results=sum(p.expected_results or 0 for p in plans), tags=first.tags,
                    max_samples=first.max_samples, run=samples, results=results,
                    shard=shards if first.limited is not None and selected < first.limited else None)


def merge_model_runs(folders: list[Path], out: Path, max_error_rate: float = 0.2, *,
                     store_changes: StoreChanges) -> tuple[MatrixSummary, list[str]]:
    """Shards of a run over several models (each a folder with matrix.json): every model's shard folders are
    merged into `out/<its folder>` as `merge_runs` does, and `out/matrix.json` says how each model ended.
    Refuses shards run with different models."""
    matrices = [read_matrix(f) for f in folders]
    if any(m is None for m in matrices):
        plain = [str(f) for f, m in zip(folders, matrices, strict=True) if m is None]
        raise ConfigError(f"evals merge: {', '.join(plain)} not a run over several models, unlike {folders[0]}; "
                          "merge the shards of one run (all with the same --model list)")
    runs = [m for m in matrices if m is not None]
    first = runs[0]
    models = [r.model for r in first.models]
    for folder, matrix in zip(folders[1:], runs[1:], strict=True):
        if [r.model for r in matrix.models] != models:
            raise ConfigError(f"{folder}: a run of the models {', '.join(r.model for r in matrix.models)}, not "
                              f"{', '.join(models)} as {folders[0]}; merge only shards of one run")
    if (out / MATRIX_NAME).exists() or (out / RESULTS_NAME).exists():
        raise ConfigError(f"{out}: already holds results; merge into a new folder")
    created = not out.exists()
    make_run_folder(out, "-o")
    warnings: list[str] = []
    merged: list[ModelRun] = []
    try:
        for index, model in enumerate(models):
            own = [folder / matrix.models[index].folder for folder, matrix in zip(folders, runs, strict=True)]
            target = first.models[index].folder
            summary, notes = merge_runs(own, out / target, max_error_rate, store_changes=store_changes)
            warnings += [f"{model}: {note}" for note in dict.fromkeys(notes)]
            merged.append(ModelRun(model=model, folder=target, status=summary.status, exit_code=summary.exit_code,
                                   gate=summary.gate, base_url=first.models[index].base_url,
                                   base_url_from=first.models[index].base_url_from))
    except ConfigError:  # one model's shards do not fit: leave no half-merged run behind
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    matrix = MatrixSummary(suite=first.suite, gate_mode=first.gate_mode, models=merged)
    matrix.exit_code = combined_exit([r.exit_code if r.exit_code is not None else EXIT_INTERRUPTED for r in merged],
                                     first.gate_mode)
    matrix.gate = combined_verdict(merged, first.gate_mode)
    statuses = {r.status for r in merged}
    matrix.status = "aborted" if statuses != {"completed"} else "completed"
    write_matrix(out, matrix)
    return matrix, warnings
