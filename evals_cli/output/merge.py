"""Join the result folders of sharded runs into one run: one results file, one summary, one gate verdict.
Refuses folders of different suites or datasets (their fingerprints differ), parts not cut from one plan
(merge_plan.py) and parts whose rows are not their plan's or not their summary's (merge_rows.py): a verdict is
given only over parts that make one whole. Shards of a run over several models are merged model by model
(`merge_model_runs`).

Each result is written as a run writes it: its final state changes are stored as what changed by the function
the caller hands in (`store_changes`, environment/excerpts.py's), so that the shards of an older evals, which
stored them whole, come out as a run's results do now."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from evals_cli.errors import EXIT_INCOMPLETE, EXIT_INTERRUPTED, ConfigError, EvalsError
from evals_cli.gate.gate import Gate
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
from evals_cli.output.merge_plan import Part, plan_differences, plan_facts, split_differences
from evals_cli.output.merge_rows import PartMismatch, PartRows
from evals_cli.output.summary import Accumulator, combined_exit, combined_verdict
from evals_cli.sharding import parse_shard

StoreChanges = Callable[[list[StateChange] | None], None]  # a result's final state changes, stored in place


def merge_runs(folders: list[Path], out: Path, max_error_rate: float = 0.2, *,
               store_changes: StoreChanges) -> tuple[RunSummary, list[str]]:
    """(the merged summary, warnings); writes results.jsonl, summary.json and run.json into `out`."""
    if not folders:
        raise ConfigError("evals merge: give the result folders of the shards to join")
    dirs = [results_path(f).parent for f in folders]
    manifests = [read_manifest(d) for d in dirs]
    first = manifests[0]
    _check_one_run(dirs, manifests)
    warnings = _check_split(dirs, [m.shard for m in manifests])
    if (out / RESULTS_NAME).exists():
        raise ConfigError(f"{out}: already holds results; merge into a new folder")
    saved = [read_summary(d) for d in dirs]
    parts = [Part(d, parse_shard(m.shard) if m.shard else None) for d, m in zip(dirs, manifests, strict=True)]
    _check_plan(parts, manifests, saved)
    unfinished = [_unfinished(d, s) for d, s in zip(dirs, saved, strict=True)]
    acc = _accumulator(first)
    created = not out.exists()
    make_run_folder(out, "-o")  # a file, under a file, unwritable: said before anything is written
    try:
        writer = ResultsWriter(out)
    except OSError as exc:
        raise folder_error(out, exc, "-o") from None
    rows = [_part_rows(p, m, s, u is None) for p, m, s, u in zip(parts, manifests, saved, unfinished, strict=True)]
    try:
        samples = _join_results(rows, writer, acc, store_changes, warnings)
    except EvalsError:  # nothing of a refused merge is left behind (a folder given by -o is kept)
        writer.close()
        _discard(out, created)
        raise
    summary = acc.summary()
    summary.coverage = _coverage(saved, acc.total, len(samples))
    _times(summary, saved)
    stopped = [u for u in unfinished if u]
    if stopped:  # a shard that did not finish leaves samples out: the merged run is incomplete, no verdict
        summary.status = "aborted"
        summary.abort_reason = "; ".join(stopped) + "; finish it with evals run SUITE --resume DIR, then merge again"
    summary.exit_code = exit_code_for(summary, max_error_rate)
    writer.write_summary(summary)
    writer.close()
    write_manifest(out, _merged_manifest(manifests))
    return summary, warnings


def _check_one_run(dirs: list[Path], manifests: list[Manifest]) -> None:
    """Every folder is a part of the same suite, dataset and model as the first."""
    first = manifests[0]
    for d, m in zip(dirs[1:], manifests[1:], strict=True):
        if m.fingerprint != first.fingerprint or m.suite != first.suite:
            raise ConfigError(f"{d}: not a shard of the same run as {dirs[0]} (suite {m.suite!r} vs "
                              f"{first.suite!r}, or the suite or dataset changed); merge only shards of one suite")
        if m.model != first.model:  # one model's grades under another's name would be a false verdict
            raise ConfigError(f"{d}: a run of the model {m.model}, not {first.model} like {dirs[0]}; merge only shards "
                              "of one model (a run over several models merges model by model: give the top folders)")


def _check_plan(parts: list[Part], manifests: list[Manifest], saved: list[RunSummary | None]) -> None:
    """The parts of one split were cut from one plan (merge_plan.py), checked before anything is written. Folders
    run without --shard are no parts of one plan: they are joined as given, with a warning."""
    if any(p.shard is None for p in parts):
        return
    problems = plan_differences(parts, [plan_facts(m, s) for m, s in zip(manifests, saved, strict=True)])
    problems = problems or split_differences(parts, manifests)
    if problems:
        raise ConfigError(problems)


def _check_split(dirs: list[Path], shards: list[str | None]) -> list[str]:
    """Every part of one split, each once: a missing part would leave its samples out of a verdict that reads as
    the whole run's, a part given twice would count them twice (or, empty, go unnoticed). Checked from run.json
    before anything is written. Folders run without --shard are joined as given, with a warning."""
    if all(s is None for s in shards):
        return ["some folders were not run with --shard"]
    plain = [str(d) for d, s in zip(dirs, shards, strict=True) if s is None]
    if plain:
        raise ConfigError(f"evals merge: {', '.join(plain)} not run with --shard, unlike the others; merge the "
                          "folders of one split (evals run --shard K/N), every part once")
    parts = [(d, parse_shard(s)) for d, s in zip(dirs, shards, strict=True) if s is not None]
    totals = sorted({n for _, (_, n) in parts})
    if len(totals) > 1:
        shown = ", ".join(f"{d} ({k}/{n})" for d, (k, n) in parts)
        raise ConfigError(f"evals merge: the folders split the samples {' and '.join(map(str, totals))} ways: "
                          f"{shown}; merge the parts of one split (every --shard K/N with the same N)")
    n = totals[0]
    problems = [f"shard {k}/{n} is in both {' and '.join(str(d) for d in given)}: the same shard given twice? "
                "give each shard's folder once" for k in range(1, n + 1)
                if len(given := [d for d, (part, _) in parts if part == k]) > 1]
    missing = [f"{k}/{n}" for k in range(1, n + 1) if all(part != k for _, (part, _) in parts)]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        problems.append(f"shard{plural} {', '.join(missing)} missing: give the folder of every shard (a shard that "
                        f"never ran: evals run SUITE --shard {missing[0]} -o DIR, then merge again)")
    if problems:
        raise ConfigError([f"evals merge: {p}" for p in problems])
    return []


def _accumulator(manifest: Manifest) -> Accumulator:
    """What a run with this run.json folds its results into."""
    gate = Gate(GateSpec.model_validate(manifest.gate), manifest.graders)
    return Accumulator(gate, manifest.suite, manifest.graders, manifest.repeats, dict(manifest.pricing))


def _part_rows(part: Part, manifest: Manifest, summary: RunSummary | None, finished: bool) -> PartRows:
    """The part's plan as its run.json keeps it (an older one: its planned count, else its summary's)."""
    started = manifest.started_with
    planned = started.planned_results if started is not None else None
    if planned is None and summary is not None and summary.coverage is not None:
        planned = summary.coverage.expected_results
    return PartRows(part, manifest.repeats, started.planned_ids if started is not None else None, planned,
                    finished, _accumulator(manifest), summary)


_NO_VERDICT = ("evals merge: no verdict: those parts do not hold the rows they planned (a results.jsonl changed or "
               "damaged after its run); run each again into a new folder (evals run SUITE --shard K/N -o NEW_DIR), "
               "then merge again")


def _join_results(rows: list[PartRows], writer: ResultsWriter, acc: Accumulator, store_changes: StoreChanges,
                  warnings: list[str]) -> set[str]:
    """Every part's planned rows written and counted; the sample ids seen. Rows that are not the part's plan's
    are PartMismatch (exit 3), rows unlike the part's summary or in two folders a ConfigError (exit 2)."""
    seen: dict[tuple[str, int], Path] = {}
    samples: set[str] = set()
    for part in rows:
        directory = part.part.directory
        for result in read_results(directory, warnings):
            if not part.add(result):  # a duplicate, or a row the part did not plan: said below, not joined
                continue
            key = (result.sample_id, result.repeat)
            if key in seen:  # folders run without --shard that overlap
                raise ConfigError(f"sample {result.sample_id!r} (repeat {result.repeat}) is in both {seen[key]} "
                                  f"and {directory}: merge folders that hold different samples")
            seen[key] = directory
            samples.add(result.sample_id)
            store_changes(result.trajectory.state_changes)
            store_changes(result.trajectory.setup_changes)
            writer.write(result)
            acc.add(result)
    mismatched = [problem for part in rows for problem in part.problems()]
    if mismatched:
        raise PartMismatch([*mismatched, _NO_VERDICT])
    changed = [problem for part in rows for problem in part.disagreements()]
    if changed:
        raise ConfigError(changed)
    return samples


def _discard(out: Path, created: bool) -> None:
    """What a refused merge wrote removed: the folder when the merge made it, else the results file it began."""
    if created:
        shutil.rmtree(out, ignore_errors=True)
    else:
        (out / RESULTS_NAME).unlink(missing_ok=True)


def _times(summary: RunSummary, saved: list[RunSummary | None]) -> None:
    """The merged run ran from the first shard's start to the last one's end (each shard's start plus its
    duration; starts are kept to the second, so shards started in different seconds are within a second of the
    truth), and no shorter than its longest shard. Left unset when a shard's times are not known."""
    known = [s for s in saved if s is not None and s.started_at and s.finished_at]
    if not known or len(known) != len(saved):
        return
    try:
        starts = [datetime.fromisoformat(s.started_at).timestamp() for s in known]
    except ValueError:
        return
    summary.started_at = min(s.started_at for s in known)
    summary.finished_at = max(s.finished_at for s in known)
    ends = [start + s.duration_s for start, s in zip(starts, known, strict=True)]
    summary.duration_s = max(max(ends) - min(starts), *(s.duration_s for s in known))


def _merged_manifest(manifests: list[Manifest]) -> Manifest:
    """The first shard's run.json without its shard, planning every shard's samples: what one run would keep."""
    first = manifests[0]
    started = first.started_with
    if started is not None:
        plans = [m.started_with for m in manifests]
        samples = [p.planned_samples if p is not None else None for p in plans]
        results = [p.planned_results if p is not None else None for p in plans]
        started = started.model_copy(update={"planned_samples": _sum(samples), "planned_results": _sum(results),
                                             "planned_ids": None})  # one unsharded run: no part's ids
    return first.model_copy(update={"shard": None, "started_with": started})


def _sum(counts: list[int | None]) -> int | None:
    """The shards' counts added up; unknown when any shard's is."""
    return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


def _unfinished(directory: Path, summary: RunSummary | None) -> str | None:
    """Why a shard's results are not the whole shard (None when it finished). A shard that ran every sample it
    planned is whole even when its own share of errors stopped its verdict (exit 3): errors are counted again over
    every shard, as one run counts them, and 2 errors in a part of 8 may be 2 in a run of 24."""
    if summary is None:
        return f"{directory} has no summary.json (the shard was stopped before it finished)"
    cov = summary.coverage
    if summary.status != "interrupted" and cov is not None and cov.expected_results is not None \
            and summary.total >= cov.expected_results:
        return None
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
    _check_models_alike(folders[0], first)
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
    except EvalsError:  # one model's shards do not fit: leave no half-merged run behind
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


def _check_models_alike(folder: Path, matrix: MatrixSummary) -> None:
    """The models of a run side by side ran one plan (the same suite, dataset and options, the model aside):
    checked in the first folder given, whose models' shards `merge_runs` then checks against each other."""
    parts = [Part(folder / run.folder, None, run.model) for run in matrix.models]
    facts = [plan_facts(read_manifest(p.directory), read_summary(p.directory)) for p in parts]
    problems = plan_differences(parts, facts, "merge the shards of one run over several models (every model run "
                                "with the same suite, dataset and options)")
    if problems:
        raise ConfigError(problems)
