"""`evals merge`: the result folders of a sharded run joined into the run one machine would have written
(`output.merge`), shown as `evals report` shows a run (finished.py), and exported when asked.

`evals --help` imports every command's module: the merging and the rendering are imported when the command
runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals_cli.cli.options import EXPORT_HELP, exports_asked
from evals_cli.errors import ConfigError


def merge(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN...", help="The result folders of the shards.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged run's folder (new).")],
    max_error_rate: Annotated[float, typer.Option("--max-error-rate", min=0, max=1, help="Exit 3 past this share of errored samples.")] = 0.2,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML of the merged run.")] = None,
    task_results: Annotated[Path | None, typer.Option("--task-results", help="Also write TaskResult JSONL (= --export task_results=PATH).")] = None,
    export: Annotated[list[str] | None, typer.Option("--export", metavar="FORMAT=PATH", help=EXPORT_HELP)] = None,
) -> None:
    """Join the result folders of `evals run --shard K/N` (or `--shard auto`) jobs into one run, one summary, one
    gate verdict: every part once, all cut from one plan, each holding the rows it planned and agreeing with its own
    summary (a part that does not is refused by name, with no verdict)."""
    from evals_cli.cli import finished
    from evals_cli.environment.excerpts import store_changes
    from evals_cli.output.manifest import is_matrix
    from evals_cli.output.merge import merge_model_runs, merge_runs

    exports = exports_asked(export, junit, task_results)
    if runs and is_matrix(runs[0]):  # shards of a run over several models: merged model by model
        if exports:
            raise ConfigError("--export, --junit and --task-results with several models: not supported; export "
                              "each model's merged folder (evals report OUT/MODEL --html F)")
        matrix, warnings = merge_model_runs(runs, output, max_error_rate, store_changes=store_changes)
        finished.merged_models(runs, output, warnings)
        raise typer.Exit(matrix.exit_code)
    summary, warnings = merge_runs(runs, output, max_error_rate, store_changes=store_changes)
    finished.merged(runs, output, summary, warnings)
    if exports:
        from evals_cli.exporters import export_run

        export_run(output, summary, exports=exports)
    raise typer.Exit(summary.exit_code)
