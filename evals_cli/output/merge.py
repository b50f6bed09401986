"""Join the result folders of sharded runs into one run: one results file, one summary, one gate verdict.
Refuses folders of different suites or datasets (their fingerprints differ) and samples seen twice."""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import TypeAdapter

from evals_cli.errors import ConfigError
from evals_cli.gate import Gate
from evals_cli.models.results import RunSummary
from evals_cli.models.specs import SuiteSpec
from evals_cli.output.files import RESULTS_NAME, ResultsWriter, read_results, results_path
from evals_cli.output.summary import Accumulator
from evals_cli.runner.exit_codes import exit_code_for
from evals_cli.runner.manifest import Manifest, read_manifest, write_manifest


def merge_runs(folders: list[Path], out: Path, max_error_rate: float = 0.2) -> tuple[RunSummary, list[str]]:
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
    if (out / RESULTS_NAME).exists():
        raise ConfigError(f"{out}: already holds results; merge into a new folder")
    gate_spec = TypeAdapter(SuiteSpec.model_fields["gate"].annotation).validate_python(first.gate)
    gate = Gate(gate_spec, first.graders)
    acc = Accumulator(gate, first.suite, first.graders, first.repeats, dict(first.pricing))
    writer = ResultsWriter(out)
    warnings: list[str] = []
    seen: dict[tuple[str, int], Path] = {}
    try:
        for d in dirs:
            for result in read_results(d, warnings):
                key = (result.sample_id, result.repeat)
                if key in seen:
                    raise ConfigError(f"sample {result.sample_id!r} (repeat {result.repeat}) is in both {seen[key]} "
                                      f"and {d}: the same shard given twice?")
                seen[key] = d
                writer.write(result)
                acc.add(result)
    except ConfigError:
        writer.close()
        shutil.rmtree(out, ignore_errors=True)
        raise
    summary = acc.summary()
    summary.exit_code = exit_code_for(summary, max_error_rate)
    writer.write_summary(summary)
    writer.close()
    write_manifest(out, Manifest(**{**first.model_dump(), "shard": None}))
    shards = sorted(m.shard for m in manifests if m.shard)
    if len(shards) != len(manifests):
        warnings.append("some folders were not run with --shard")
    return summary, warnings
