"""`evals label` (a run's judged items labelled by keyboard) and `evals calibrate` (its judge measured against the
labels, its pass rate corrected; two runs' judges compared): both over `evals_cli.calibration`.

`evals --help` imports every command's module: the calibration library is imported when a command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evals_cli.errors import ConfigError


def label(
    run_path: Annotated[Path, typer.Argument(metavar="RUN", help="A finished run (its folder or results.jsonl).")],
    labels: Annotated[Path | None, typer.Option("--labels", help="The labels file to append to (default RUN/labels.jsonl); labelling resumes where it stopped.")] = None,
    grader: Annotated[str | None, typer.Option("--grader", help="Only this judge grader's items.")] = None,
    only: Annotated[tuple[str, Path] | None, typer.Option("--only", metavar="disagreements-of FILE", help="Only the items on which the labels in FILE disagree with the judge.")] = None,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help="A random subset of N items (the same --seed draws the same items).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --sample draw.")] = 0,
) -> None:
    """Label the judged items of a run by keyboard (p pass, f fail, s skip, b back, n note, q quit), to calibrate its judge."""
    from evals_cli.calibration.labeller import ONLY_KINDS, run_labeller

    if only is not None and only[0] not in ONLY_KINDS:
        raise ConfigError(f"--only {only[0]}: choose {', '.join(ONLY_KINDS)} FILE")
    run_labeller(run_path, labels_path=labels, grader=grader, disagreements_of=only[1] if only else None,
                 sample=sample, seed=seed)


def calibrate(
    runs: Annotated[list[Path], typer.Argument(metavar="RUN [RUN_B]", help="A finished run; with two, their judges are compared.")],
    labels: Annotated[Path | None, typer.Option("--labels", help="The labels file (default RUN/labels.jsonl, the run's labels: evals label, evals view's buttons).")] = None,
    grader: Annotated[str | None, typer.Option("--grader", help="Only this judge grader.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    pool: Annotated[list[Path] | None, typer.Option("--pool", metavar="RUN", help="Also measure the judge on this run's labels (its labels.jsonl): several runs of the same grader, rubric and judge, pooled; repeatable.")] = None,
    pool_other_judges: Annotated[bool, typer.Option("--pool-other-judges", help="Pool runs whose judge differs (rubric, model, scale, pass mark): refused without it.")] = False,
) -> None:
    """Measure a run's judge against your labels (tpr, tnr, kappa) and correct its pass rate; with two runs, compare their judges."""
    if len(runs) > 2:
        raise ConfigError(f"evals calibrate takes one run, or two to compare their judges, not {len(runs)}")
    if labels is None:
        from evals_cli.calibration.calibrate import run_labels

        labels = run_labels(runs[0])
    if len(runs) == 2 and pool:
        raise ConfigError("--pool measures one run's judge on more labels; two runs compare their judges: give one")
    if len(runs) == 2:
        _compare_judges(runs[0], runs[1], labels, grader, as_json)
        return
    from evals_cli.calibration.pooling import calibrate_run
    from evals_cli.calibration.render import render_calibration
    from evals_cli.display.console import make_console

    report = calibrate_run(runs[0], labels, grader, pool or [], pool_other_judges)
    if as_json:
        import json

        print(json.dumps(report.as_json(), indent=2))
    else:
        make_console().print(render_calibration(report))


def _compare_judges(run_a: Path, run_b: Path, labels: Path, grader: str | None, as_json: bool) -> None:
    from evals_cli.calibration.compare import compare_judges
    from evals_cli.calibration.render import render_judges
    from evals_cli.display.console import make_console

    comparison = compare_judges(run_a, run_b, labels, grader)
    if as_json:
        import json

        print(json.dumps(comparison.as_json(), indent=2))
    else:
        make_console().print(render_judges(comparison))
