"""A judge measured against a person's labels: `evals calibrate RUN --labels FILE`, and the corrected pass rate a
run prints when its judge grader names `calibration: FILE`.

Each label is matched with the run's judged item of the same key; the judge's verdict on it (pass at the grader's
pass mark) against the person's label gives the confusion counts, tpr, tnr and kappa. The judge's pass rate over
every judged item of the run, labelled or not, is then corrected for those rates (stats.rogan_gladen).

A label that names no item of the run is bad input (exit 2, naming its line): an unknown sample, repeat, grader or
turn, or a label given to another answer than the run's (its `item` digest differs). A labels file none of whose
samples is in the run is said to be another run's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals_cli.calibration.figures import misfit
from evals_cli.calibration.items import (
    JUDGE_ERROR_LABEL,
    ItemKey,
    JudgedItem,
    JudgedRun,
    run_folder,
)
from evals_cli.calibration.judges import fingerprint_of
from evals_cli.calibration.stats import (
    CHANCE,
    DRAWS,
    SEED,
    Confusion,
    corrected_interval,
    outside_unit,
    rogan_gladen_raw,
)
from evals_cli.errors import ConfigError
from evals_cli.invocation import command
from evals_cli.labels import LABELS_NAME, Label, LabelFile
from evals_cli.models.calibration import JudgeCalibration, JudgeRecord

FEW = 20  # fewer labels than this of either class: tpr or tnr rests on too few items to trust
SHOWN = 10  # bad lines named in one message


@dataclass
class Disagreement:
    item: JudgedItem
    label: Label


@dataclass
class GraderReport:
    """One judge grader measured: the figures (`calibration`, what --json prints) and the items it got wrong."""

    name: str
    calibration: JudgeCalibration
    disagreements: list[Disagreement] = field(default_factory=list)
    record: JudgeRecord | None = None

    def as_json(self) -> dict[str, Any]:
        data = self.calibration.model_dump(exclude={"labels"})
        data["disagreements"] = [
            {"sample_id": d.item.key.sample_id, "repeat": d.item.key.repeat, "turn": d.item.key.turn,
             "label": d.label.label, "judge": d.item.verdict(), "score": d.item.score, "reason": d.item.reason,
             "note": d.label.note} for d in self.disagreements]
        return data


@dataclass
class CalibrationReport:
    run: Path
    labels: Path
    graders: dict[str, GraderReport]
    notes: list[str] = field(default_factory=list)  # duplicates, and the run's own warnings

    def as_json(self) -> dict[str, Any]:
        return {"graders": {name: report.as_json() for name, report in self.graders.items()}, "notes": self.notes}


def measure(pairs: list[tuple[bool, bool]], passed: int, judged: int, no_answer: int = 0, *, draws: int = DRAWS,
            seed: int = SEED) -> JudgeCalibration:
    """The figures of one judge: `pairs` are (judge passed, person passed) over the labelled items; `passed` of the
    run's `judged` items passed the judge, and `no_answer` more items failed with no answer to judge. Only the
    judged share is corrected (no judge erred on the others); both rates are over all the grader's items, so the
    certain fails pull them down as they pull down the grader's own pass rate. A figure that is undefined is
    None, and the correction is refused (with the reason) rather than made up."""
    confusion = Confusion.of(pairs)
    total = judged + no_answer
    share = judged / total if total else 0.0  # of the grader's items, the judged ones (the rest are certain fails)
    out = JudgeCalibration(n=confusion.n, tp=confusion.tp, fp=confusion.fp, fn=confusion.fn, tn=confusion.tn,
                           tpr=confusion.tpr, tnr=confusion.tnr, kappa=confusion.kappa, judged=judged,
                           no_answer=no_answer, observed_pass_rate=passed / total if total else None)
    pos, neg = confusion.positives, confusion.negatives
    if pos < FEW or neg < FEW:
        short = "either class" if pos < FEW and neg < FEW else ("pass" if pos < FEW else "fail")
        out.warnings.append(f"few labels: {pos} item{'s' if pos != 1 else ''} labelled pass and {neg} labelled fail "
                            f"(fewer than {FEW} of {short}): tpr and tnr rest on too few items to trust; label 50-100 "
                            "judged items")
    tpr, tnr, observed = out.tpr, out.tnr, out.observed_pass_rate
    if tpr is None or tnr is None:
        missing = "pass" if tpr is None else "fail"
        out.refused = (f"no item is labelled {missing}, so {'tpr' if tpr is None else 'tnr'} is undefined and the pass "
                       "rate cannot be corrected; label items of both kinds")
        return out
    if observed is None:
        out.refused = "the run has no judged item with a verdict to correct"
        return out
    raw = rogan_gladen_raw(passed / judged, tpr, tnr) if judged else 0.0
    if raw is None:
        out.refused = (f"{CHANCE} (tpr {tpr:.2f} + tnr {tnr:.2f} = {tpr + tnr:.2f} ≤ 1): its pass rate cannot be "
                       "corrected")
        return out
    out.raw_corrected_pass_rate = raw * share
    out.corrected_pass_rate = min(1.0, max(0.0, raw)) * share
    if outside_unit(raw):
        out.clipped = True
        out.warnings.append(misfit(out))
    if not judged:  # every item failed with no answer: certain, nothing to estimate
        out.ci = [0.0, 0.0]
        return out
    interval = corrected_interval(confusion, passed, judged, draws=draws, seed=seed)
    if interval.low is None or interval.high is None:
        out.warnings.append(f"no interval for the corrected pass rate: {interval.why}")
    else:
        out.ci = [interval.low * share, interval.high * share]
    return out


def leniency(c: JudgeCalibration) -> list[str]:
    """The judge's mistakes in words: how lenient (passes items the person failed) and how strict."""
    lines = []
    for wrong, total, verb, yours in ((c.fp, c.tn + c.fp, "passes", "failed"), (c.fn, c.tp + c.fn, "fails", "passed")):
        if total:
            lines.append(f"{verb} {wrong} of the {total} item{'s' if total != 1 else ''} you {yours}")
    return lines


def _turn_problem(label: Label, turns: list[int | None], where: str, run: Path) -> str:
    key = f"sample {label.sample_id}" + (f" repeat {label.repeat}" if label.repeat else "")
    if turns == [None]:
        return (f"{where}: turn: {label.turn}, but {label.grader} judges the whole conversation of {key} in {run}; "
                "give turn null")
    shown = ", ".join(str(t) for t in turns if t is not None)
    if label.turn is None:
        return (f"{where}: turn: null, but {label.grader} judges {key} turn by turn in {run}; give the 0-based turn "
                f"or reply (judged: {shown})")
    return f"{where}: turn: {label.turn}: {label.grader} judged no such turn or reply of {key} in {run} (judged: {shown})"


def _names_nothing(label: Label, run: JudgedRun, where: str) -> str | None:
    """The problem with a label whose sample, repeat or grader the run does not have (None: it names them)."""
    if label.sample_id not in run.samples:
        return f"{where}: sample_id: {label.sample_id} is not a sample of {run.path}"
    if label.repeat not in run.samples[label.sample_id]:
        have = ", ".join(str(r) for r in sorted(run.samples[label.sample_id]))
        return (f"{where}: repeat: {label.repeat}: sample {label.sample_id} has no such repeat in "
                f"{run.path} (repeats: {have})")
    if label.grader not in run.graders:
        return (f"{where}: grader: {label.grader} is not a judge grader of {run.path} (its judges: "
                f"{', '.join(run.graders)})")
    return None


def match(run: JudgedRun, labels: LabelFile, *, check_items: bool = True) -> tuple[list[tuple[JudgedItem, Label]],
                                                                                   list[str]]:
    """(item, label) for every label, and notes. ConfigError naming each label that names nothing in the run; with
    `check_items`, also each label given to another answer than the run's."""
    items = run.by_key()
    per_sample: dict[tuple[str, int, str], list[int | None]] = {}
    for key in items:
        per_sample.setdefault((key.sample_id, key.repeat, key.grader), []).append(key.turn)
    unknown_samples = [label for label in labels.labels if label.sample_id not in run.samples]
    if unknown_samples and len(unknown_samples) == len(labels.labels):
        raise ConfigError(f"{labels.path}: none of its {len(labels.labels)} labelled items is a sample of {run.path} "
                          f"(e.g. line {unknown_samples[0].line}: sample {unknown_samples[0].sample_id}): a labels "
                          f"file of another run; label this run with `{command('label', run.path)}`")
    problems: list[str] = []
    stale: list[int] = []
    notes: list[str] = []
    pairs: list[tuple[JudgedItem, Label]] = []
    skipped: dict[str, list[int]] = {}
    for label in labels.labels:
        where = f"{labels.path}:{label.line}"
        named = _names_nothing(label, run, where)
        if named is not None:
            problems.append(named)
            continue
        key = ItemKey(label.sample_id, label.repeat, label.grader, label.turn)
        item = items.get(key)
        if item is None:
            why = run.unjudged.get(key)
            turns = per_sample.get((label.sample_id, label.repeat, label.grader))
            if why is not None or turns is None:  # no verdict there: nothing to compare, not a bad label
                skipped.setdefault(why or JUDGE_ERROR_LABEL, []).append(label.line)
            else:
                problems.append(_turn_problem(label, turns, where, run.path))
            continue
        if check_items and label.item is not None and label.item != item.digest:
            stale.append(label.line)
            continue
        pairs.append((item, label))
    notes += [f"{labels.path}: line {_lines(lines)}: {len(lines)} label{'s' if len(lines) != 1 else ''} left out, "
              f"on item{'s' if len(lines) != 1 else ''} that {why}" for why, lines in skipped.items()]
    if stale:
        problems.append(_stale(stale, labels, run.path))
    if problems:
        more = len(problems) - 20
        raise ConfigError(problems[:20] + ([f"{labels.path}: {more} more problems"] if more > 0 else []))
    return pairs, notes


def _stale(lines: list[int], labels: LabelFile, run: Path) -> str:
    whose = "every label" if len(lines) == len(labels.labels) else f"{len(lines)} labels"
    return (f"{labels.path}: line {_lines(lines)}: {whose} was given to another answer than {run}'s (the "
            "conversation or the graded text differs): labels of another run; label this run's items with "
            f"`{command('label', run)}`")


def _lines(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers[:SHOWN]) + (" ..." if len(numbers) > SHOWN else "")


def fingerprint_notes(labels: list[Label], record: JudgeRecord | None, grader: str, source: Path) -> list[str]:
    """A warning when labels were given against another rubric, judge model or scale than the grader's now."""
    current = fingerprint_of(record)
    if current is None:
        return []
    seen: dict[tuple[str, ...], int] = {}
    blind = 0
    for label in labels:
        if label.fingerprint is None:
            blind += 1
            continue
        diff = tuple(label.fingerprint.differences(current))
        if diff:
            seen[diff] = seen.get(diff, 0) + 1
    out = [f"{grader}: {count} label{'s' if count != 1 else ''} of {source} were given against another judge: "
           f"{' and '.join(diff)} differ{'s' if len(diff) == 1 else ''}; its tpr and tnr may not hold for this one"
           for diff, count in seen.items()]
    if blind and blind == len(labels):
        out.append(f"{grader}: the labels of {source} carry no fingerprint of the judge, so whether they were given "
                   "against this rubric and judge model cannot be checked")
    return out


def run_labels(run_path: Path) -> Path:
    """RUN/labels.jsonl, the run's own labels (what `evals label` and `evals view`'s buttons write): the labels
    file when none is named. ConfigError naming both ways to give one when it does not exist."""
    path = run_folder(run_path) / LABELS_NAME
    if not path.is_file():
        raise ConfigError(f"{run_path}: no {LABELS_NAME} in the run's folder, and no --labels given; label the run "
                          f"with `{command('label', run_path)}` (or the buttons of `evals view`), or give --labels "
                          "FILE")
    return path


def check_grader(run: JudgedRun, grader: str | None) -> None:
    if grader is not None and grader not in run.graders:
        raise ConfigError(f"--grader {grader}: not a judge grader of {run.path} (its judges: {', '.join(run.graders)})")


def grader_reports(run: JudgedRun, pairs: list[tuple[JudgedItem, Label]], sources: dict[str, list[Path]],
                   grader: str | None) -> dict[str, GraderReport]:
    """Each judge grader measured on the labelled `pairs` (this run's, and any pooled run's), its pass rate over
    this run's judged items corrected; `sources` names the labels files behind each grader's pairs."""
    reports: dict[str, GraderReport] = {}
    for name in run.graders:
        if grader is not None and name != grader:
            continue
        mine = [(item, label) for item, label in pairs if item.key.grader == name]
        if not mine:
            continue
        everything = run.of(name)
        calibration = measure([(item.passed, label.passed) for item, label in mine],
                              sum(1 for item in everything if item.passed), len(everything), run.no_answer.get(name, 0))
        source = ", ".join(str(path) for path in sources.get(name, [])) or str(run.path)
        calibration.warnings += fingerprint_notes([label for _, label in mine], run.judges.get(name), name,
                                                  Path(source))
        reports[name] = GraderReport(name, calibration, [Disagreement(item, label) for item, label in mine
                                                         if item.passed != label.passed], run.judges.get(name))
    return reports


def calibrated(grader: str, record: JudgeRecord, labels: list[Label], source: Path,
               items: list[JudgedItem], no_answer: int = 0) -> JudgeCalibration:
    """A calibrated run's figures for one judge: the judge's verdicts on the labelled items are those the labels
    recorded when they were given (its score read at this run's pass mark), the pass rate corrected is this run's."""
    pairs = [(record.passes(label.score) if label.score is not None else label.judge == "pass", label.passed)
             for label in labels]
    mine = [item for item in items if item.key.grader == grader]
    out = measure(pairs, sum(1 for item in mine if item.passed), len(mine), no_answer)
    out.labels = str(source)
    out.warnings = fingerprint_notes(labels, record, grader, source) + out.warnings
    return out
