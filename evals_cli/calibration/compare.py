"""Two judge configurations (rubric, model, scale) measured against the same labels: `evals calibrate RUN_A RUN_B
--labels FILE`. Only the labelled items both runs judged count, so each judge is scored on the same items; the
difference in agreement with the person gets a paired bootstrap interval (each resample keeps an item's two
outcomes together), so a better rubric is picked on evidence, not on one lucky sample.

A label is matched in each run as `evals calibrate RUN` matches it; an item whose judged answer differs between the
runs (the agent answered otherwise in one) is left out and counted: the judges would not have read the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals_cli.calibration.calibrate import match
from evals_cli.calibration.items import JudgedItem, load_judged_run
from evals_cli.calibration.stats import Confusion, paired_difference_interval
from evals_cli.errors import ConfigError
from evals_cli.labels import Label, read_labels
from evals_cli.models.calibration import JudgeRecord
from evals_cli.thresholds import SYMBOLS


@dataclass
class Side:
    """One run's judge on the shared items."""

    run: Path
    record: JudgeRecord | None
    confusion: Confusion

    def as_json(self) -> dict[str, Any]:
        c = self.confusion
        record = self.record
        return {"run": str(self.run), "model": record.model if record else None,
                "rubric": record.rubric if record else None, "scale": record.scale if record else None,
                "pass_mark": {"op": record.op, "mark": record.mark, "scope": record.scope} if record else None,
                "n": c.n, "tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn, "tpr": c.tpr, "tnr": c.tnr,
                "kappa": c.kappa, "agreement": c.agreement}


@dataclass
class JudgeComparison:
    grader: str
    a: Side
    b: Side
    difference: float  # agreement of B minus agreement of A
    ci: tuple[float, float]
    left_out: int = 0  # labelled items whose judged answer differs between the runs
    samples: int = 0  # the samples those items belong to: the unit the interval resamples

    @property
    def differs(self) -> list[str]:
        """Every setting of the two judges that differs, in words."""
        return settings_differ(self.a.record, self.b.record)

    @property
    def verdict(self) -> str:
        low, high = self.ci
        if low > 0:
            return "B agrees with your labels more often than A (the interval is above 0)"
        if high < 0:
            return "A agrees with your labels more often than B (the interval is below 0)"
        return "no clear difference: the interval includes 0 (label more items, or the judges are alike)"

    def as_json(self) -> dict[str, Any]:
        return {"a": self.a.as_json(), "b": self.b.as_json(), "differs": self.differs,
                "agreement_difference": self.difference, "ci": list(self.ci), "samples": self.samples,
                "left_out": self.left_out, "verdict": self.verdict}




def pass_mark(record: JudgeRecord) -> str:
    return f"{SYMBOLS.get(record.op, record.op)} {record.mark:g}" + (" per reply" if record.scope == "reply" else "")


def settings_differ(a: JudgeRecord | None, b: JudgeRecord | None) -> list[str]:
    """'the pass mark (A ≥ 0.7, B ≥ 0.5)', 'the rubric', ...: what a reader must know before crediting a rubric
    with a difference the pass mark made."""
    if a is None or b is None:
        return [] if a is b else ["what run.json records of the judge (one run has no record)"]
    found = []
    if (a.op, a.mark, a.scope) != (b.op, b.mark, b.scope):
        found.append(f"the pass mark (A {pass_mark(a)}, B {pass_mark(b)})")
    if a.rubric != b.rubric:
        found.append("the rubric")
    if a.model != b.model:
        found.append(f"the judge model (A {a.model or '—'}, B {b.model or '—'})")
    if a.scale != b.scale:
        found.append(f"the scale (A {a.scale or '—'}, B {b.scale or '—'})")
    return found


@dataclass
class JudgesComparison:
    labels: Path
    graders: dict[str, JudgeComparison]
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"graders": {name: c.as_json() for name, c in self.graders.items()}, "notes": self.notes}


def compare_judges(run_a: Path, run_b: Path, labels_path: Path, grader: str | None = None) -> JudgesComparison:
    a, b = load_judged_run(run_a), load_judged_run(run_b)
    labels = read_labels(labels_path)
    notes = list(labels.notes)
    matched: list[dict[tuple[str, int, str, int | None], tuple[JudgedItem, Label]]] = []
    for run in (a, b):
        # a label made on one run names the other run's item of the same key: its answer is checked below, between
        # the runs, instead of against the digest of the run it was made on
        pairs, found = match(run, labels, check_items=False)
        notes += found + run.warnings
        matched.append({label.key: (item, label) for item, label in pairs})
    shared = [key for key in matched[0] if key in matched[1]]
    names = [n for n in dict.fromkeys(key[2] for key in shared) if grader is None or n == grader]
    if not names:
        raise ConfigError(f"{labels_path}: no labelled item judged by {'the grader ' + grader if grader else 'a judge'} "
                          f"in both {run_a} and {run_b}")
    out: dict[str, JudgeComparison] = {}
    for name in names:
        keys = [k for k in shared if k[2] == name]
        same = [k for k in keys if matched[0][k][0].digest == matched[1][k][0].digest]
        # and the label was given to that same answer (as a single run checks): a labels file of a third run
        # says nothing of these answers
        foreign = [k for k in same if matched[0][k][1].item not in (None, matched[0][k][0].digest)]
        if foreign and len(foreign) == len(same):
            raise ConfigError(f"{labels_path}: every label of {name} was given to another answer than the one both "
                              f"runs judged: labels of another run; label one of these runs with `evals label`")
        if foreign:
            notes.append(f"{name}: {len(foreign)} label{'s' if len(foreign) != 1 else ''} left out: given to another "
                         "answer than the one both runs judged")
        same = [k for k in same if k not in foreign]
        if not same:
            raise ConfigError(f"{name}: the agent's answers differ on every labelled item between {run_a} and {run_b}: "
                              "two judges compare only on the same answers (run both judges on one agent run, e.g. "
                              "with --replay of the same recording)")
        left_out = len(keys) - len(same)
        if left_out:
            notes.append(f"{name}: {left_out} labelled item{'s' if left_out != 1 else ''} left out: the agent's answer "
                         "differs between the two runs")
        agree_a = [matched[0][k][0].passed == matched[0][k][1].passed for k in same]
        agree_b = [matched[1][k][0].passed == matched[1][k][1].passed for k in same]
        sides = [Side(run, run_judged.judges.get(name),
                      Confusion.of([(matched[i][k][0].passed, matched[i][k][1].passed) for k in same]))
                 for i, (run, run_judged) in enumerate(((run_a, a), (run_b, b)))]
        difference = (sum(agree_b) - sum(agree_a)) / len(same)
        groups = [k[0] for k in same]  # the sample: its repeats and turns are resampled together
        out[name] = JudgeComparison(name, sides[0], sides[1], difference,
                                    paired_difference_interval(agree_a, agree_b, groups=groups), left_out,
                                    len(set(groups)))
    return JudgesComparison(labels_path, out, list(dict.fromkeys(notes)))
