"""A run's judges measured on labels (`evals calibrate RUN`), and several runs of one judge measured together
(`--pool OTHER_RUN ...`). The labels of each pooled run (its own labels.jsonl), matched to that run's judged items,
join RUN's labels in the confusion counts, so tpr and tnr rest on more items; the pass rate corrected is RUN's alone.

Pooling is only sound over the same judge: a pooled run whose judge grader differs from RUN's in its rubric, its
model, its scale or its pass mark (run.json's record of each judge, the labels' fingerprint) measured another
judge, and is refused naming the difference, unless `--pool-other-judges` asks for it (then said in a warning).
"""

from __future__ import annotations

from pathlib import Path

from evals_cli.calibration.calibrate import (
    CalibrationReport,
    check_grader,
    grader_reports,
    match,
    run_labels,
)
from evals_cli.calibration.compare import settings_differ
from evals_cli.calibration.items import JudgedItem, JudgedRun, load_judged_run
from evals_cli.errors import ConfigError
from evals_cli.labels import Label, read_labels


def calibrate_run(run_path: Path, labels_path: Path, grader: str | None = None, pool: list[Path] | None = None,
                  other_judges: bool = False) -> CalibrationReport:
    """`evals calibrate RUN --labels FILE [--pool OTHER_RUN ...]`: every judge grader the labels name, measured on
    RUN's labels and every pooled run's, RUN's pass rate corrected."""
    run = load_judged_run(run_path)
    labels = read_labels(labels_path)
    check_grader(run, grader)
    pairs, notes = match(run, labels)
    sources: dict[str, list[Path]] = {name: [labels_path] for name in run.graders}
    problems: list[str] = []
    warnings: list[str] = []
    for path in pool or []:
        other = load_judged_run(path)
        own = run_labels(path)
        found, more = match(other, read_labels(own))
        notes += more + other.warnings
        kept = _same_judges(run, other, found, grader, other_judges, problems, warnings)
        for name in dict.fromkeys(item.key.grader for item, _ in kept):
            sources.setdefault(name, []).append(own)
        pairs += kept
        notes.append(f"pooled {len(kept)} label{'s' if len(kept) != 1 else ''} of {own}")
    if problems:
        raise ConfigError(problems)
    reports = grader_reports(run, pairs, sources, grader)
    if not reports:
        raise ConfigError(f"{labels_path}: no label for {'the grader ' + grader if grader else 'any judge grader'} of "
                          f"{run_path}" + (" or the pooled runs" if pool else ""))
    for name, report in reports.items():
        report.calibration.warnings += [w for w in warnings if w.startswith(f"{name}: ")]
    return CalibrationReport(run_path, labels_path, reports, labels.notes + notes + run.warnings)


def _same_judges(run: JudgedRun, other: JudgedRun, pairs: list[tuple[JudgedItem, Label]], grader: str | None,
                 other_judges: bool, problems: list[str], warnings: list[str]) -> list[tuple[JudgedItem, Label]]:
    """The pooled run's pairs of the graders RUN also has; a grader whose judge differs is a problem (refused), or
    with `other_judges` a warning."""
    kept = []
    for name in dict.fromkeys(item.key.grader for item, _ in pairs):
        if (grader is not None and name != grader) or name not in run.graders:
            continue
        differs = settings_differ(run.judges.get(name), other.judges.get(name))
        if differs:
            said = (f"{name}: {other.path} judged with another judge than {run.path} (A: {run.path}, B: "
                    f"{other.path}): {'; '.join(differs)}")
            if not other_judges:
                problems.append(f"{said}; pool only runs of the same grader, rubric, judge model, scale and pass "
                                "mark, or give --pool-other-judges to pool them anyway")
                continue
            warnings.append(f"{said}; pooled anyway (--pool-other-judges): tpr and tnr mix two judges")
        kept += [(item, label) for item, label in pairs if item.key.grader == name]
    return kept
