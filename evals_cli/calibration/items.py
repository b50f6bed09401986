"""The judged items of a finished run: every verdict a judge grader gave, one per sample for a whole-conversation
judge, one per turn for a judge of a per-turn sample, one per agent reply for a `scope: reply` judge.

An item is what a person labels and what calibration compares with the label. Its key is (sample, repeat, grader,
turn), `turn` the 0-based turn or reply index (None for a whole-conversation verdict). A grade without a score (the
judge failed) is no verdict: it is counted, never an item, so a judge error is never read as a failed item. A turn
of a per-turn sample that was never reached got a 0 from the grader, not from the judge: not an item either.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from evals_cli.calibration.judges import fingerprint_of
from evals_cli.errors import ConfigError
from evals_cli.labels import Label
from evals_cli.models.calibration import JudgeRecord
from evals_cli.models.results import NO_ANSWER, Grade, SampleResult, TurnGrade
from evals_cli.models.trajectory import Trajectory
from evals_cli.output.files import RESULTS_NAME, read_results, results_path
from evals_cli.output.manifest import MANIFEST_NAME, MATRIX_NAME, Manifest, read_manifest

Scope = Literal["sample", "turn", "reply"]


@dataclass(frozen=True, order=True)
class ItemKey:
    sample_id: str
    repeat: int
    grader: str
    turn: int | None

    def describe(self) -> str:
        """'sample db-host, grader quality' with the repeat and turn when they matter."""
        parts = [f"sample {self.sample_id}"]
        if self.repeat:
            parts.append(f"repeat {self.repeat}")
        if self.turn is not None:
            parts.append(f"turn {self.turn}")
        return ", ".join(parts) + f", grader {self.grader}"


@dataclass
class JudgedItem:
    """One verdict of a judge, with what a person needs to label it and the run's reading of it (pass or fail at
    the grader's pass mark)."""

    key: ItemKey
    scope: Scope
    score: float
    passed: bool
    reason: str
    submission: str
    result: SampleResult
    model: str = ""

    @property
    def conversation(self) -> Trajectory:
        """What the judge read: the whole conversation, or the conversation up to the judged turn or reply."""
        return self.result.trajectory.scoped(self.key.turn)

    @property
    def digest(self) -> str:
        """A digest of what was judged (the conversation up to the item, and the graded text): a label carries it,
        so a label given to another run's answer is recognised rather than compared with this run's judge."""
        return item_digest(self.conversation, self.submission)

    def verdict(self) -> str:
        return "pass" if self.passed else "fail"


@dataclass
class JudgedRun:
    """A run's judged items (grader by grader, each in the order of the results file) and what its run.json says of
    its judges."""

    path: Path
    items: list[JudgedItem]
    judges: dict[str, JudgeRecord]
    errors: dict[str, int] = field(default_factory=dict)  # per grader: judged items without a verdict
    no_answer: dict[str, int] = field(default_factory=dict)  # per grader: fails with no answer, never judged
    unjudged: dict[ItemKey, str] = field(default_factory=dict)  # those items' keys: why no verdict
    samples: dict[str, set[int]] = field(default_factory=dict)  # sample id -> repeats in the run
    warnings: list[str] = field(default_factory=list)

    @property
    def graders(self) -> list[str]:
        return list(dict.fromkeys(item.key.grader for item in self.items)) or list(self.judges)

    def by_key(self) -> dict[ItemKey, JudgedItem]:
        return {item.key: item for item in self.items}

    def of(self, grader: str) -> list[JudgedItem]:
        return [item for item in self.items if item.key.grader == grader]


def item_digest(trajectory: Trajectory, submission: str) -> str:
    """Sixteen hex digits over the conversation's words and calls (never its timings or token counts, which differ
    between two runs of the same answer) and the graded text."""
    turns: list[Any] = []
    for turn in trajectory.turns:
        steps = [[step.content or "", [[c.name, c.raw_arguments, c.result] for c in step.tool_calls]]
                 for step in turn.steps]
        turns.append([turn.user, steps])
    text = json.dumps([trajectory.prefilled, turns, submission], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def run_folder(run: Path) -> Path:
    """The folder of a run given as its folder or its results.jsonl; a run over several models is refused with the
    folders to give instead (each model's judge is its own)."""
    folder = run if run.is_dir() else run.parent
    if (folder / MATRIX_NAME).is_file():
        models = sorted(p.name for p in folder.iterdir() if (p / RESULTS_NAME).is_file())
        raise ConfigError(f"{run}: a run over several models; give one model's folder"
                          + (f" ({', '.join(str(folder / m) for m in models)})" if models else ""))
    if not results_path(run).is_file():
        raise ConfigError(f"{run}: no {RESULTS_NAME}; give the folder of a finished run (or its results.jsonl)")
    return folder


def run_manifest(folder: Path) -> Manifest | None:
    """The run's run.json; None when it has none (a folder not written by `evals run`)."""
    if not (folder / MANIFEST_NAME).is_file():
        return None
    return read_manifest(folder)  # unreadable, or written by a newer evals-cli: said, exit 2


def _fallback_mark(manifest: Manifest | None, run: Path) -> JudgeRecord:
    """The pass mark of a judge that run.json does not describe (a run made before it did): the gate's per-sample
    pass value, which every grader without a threshold of its own uses."""
    if manifest is None:
        raise ConfigError(f"{run}: no {MANIFEST_NAME}, so the judge's pass mark is unknown and no verdict can be read "
                          "from its scores; give the folder `evals run` wrote")
    from evals_cli.models.specs import GateSpec

    try:
        gate = GateSpec.model_validate(manifest.gate or {})
        op, value = gate.sample_op, gate.sample_value
    except (ValidationError, AttributeError):
        op, value = "gte", 0.7
    return JudgeRecord(op=op if op in ("gt", "gte", "lt", "lte", "eq") else "gte", mark=value)


def is_judged(grade: Grade) -> bool:
    """A grade a judge gave (model_judge keeps the judge's model in its metadata)."""
    return "judge" in grade.metadata


def _turns_asked(grade: Grade) -> set[int] | None:
    """The turns a per-turn or per-reply judge was asked about (its recorded calls); None when not recorded."""
    calls = grade.metadata.get("turn_calls")
    if not isinstance(calls, list):
        return None
    return {c["turn"] for c in calls if isinstance(c, dict) and isinstance(c.get("turn"), int)}


def _no_answer(turn: TurnGrade) -> bool:
    return turn.score == 0.0 and turn.rationale.startswith(NO_ANSWER)


NO_ANSWER_LABEL = "failed with no answer: not the judge's verdict"
JUDGE_ERROR_LABEL = "the judge gave no verdict on (a judge error)"


@dataclass
class Unjudged:
    """What a run holds without a judge's verdict, per grader: items failed with no answer to judge (never asked),
    and items whose judge failed. Their keys too, so a label given to one is told apart from a label naming
    nothing in the run."""

    errors: dict[str, int] = field(default_factory=dict)
    no_answer: dict[str, int] = field(default_factory=dict)
    keys: dict[ItemKey, str] = field(default_factory=dict)  # key -> NO_ANSWER_LABEL or JUDGE_ERROR_LABEL

    def missed(self, key: ItemKey) -> None:
        self.no_answer[key.grader] = self.no_answer.get(key.grader, 0) + 1
        self.keys[key] = NO_ANSWER_LABEL

    def failed(self, key: ItemKey) -> None:
        self.errors[key.grader] = self.errors.get(key.grader, 0) + 1
        self.keys[key] = JUDGE_ERROR_LABEL


def judged_items(results: Iterable[SampleResult], judges: dict[str, JudgeRecord], fallback: JudgeRecord | None,
                 unjudged: Unjudged | None = None) -> list[JudgedItem]:
    """Every verdict of every judge grader in `results`, read at its pass mark (`judges`, else `fallback`).

    `unjudged` collects, per judge grader, the items failed with no answer to judge (no judge saw them, so they
    are not items to label, but they are the grader's fails, and a pass rate without them would be too high) and
    the items whose judge failed, with their keys."""
    items: list[JudgedItem] = []
    tally = unjudged if unjudged is not None else Unjudged()
    for result in results:
        for name, grade in result.grades.items():
            key = ItemKey(result.sample_id, result.repeat, name, None)
            if grade.metadata.get("no_answer") or (
                    grade.per_turn_grades is not None and not is_judged(grade) and name in judges):
                if grade.per_turn_grades is None:
                    tally.missed(key)
                for t in grade.per_turn_grades or []:
                    if t.turn < len(result.trajectory.turns) and _no_answer(t):
                        tally.missed(ItemKey(result.sample_id, result.repeat, name, t.turn))
                continue
            if not is_judged(grade):
                continue
            record = judges.get(name) or fallback
            assert record is not None
            model = str(grade.metadata.get("judge") or "")
            if grade.per_turn_grades is None:
                if grade.score is None:
                    tally.failed(key)
                    continue
                items.append(JudgedItem(key, "sample", grade.score, record.passes(grade.score), grade.rationale,
                                        grade.submission or "", result, model))
                continue
            items += _turn_items(result, name, grade, record, name in judges, tally, model)
    return items


def _turn_items(result: SampleResult, name: str, grade: Grade, record: JudgeRecord, recorded: bool,
                tally: Unjudged, model: str) -> list[JudgedItem]:
    """The verdicts of a per-turn or per-reply judge on one sample: a turn never reached, or with nothing to judge,
    got the grader's 0, not the judge's."""
    out: list[JudgedItem] = []
    reply = grade.metadata.get("scope") == "reply"
    asked = _turns_asked(grade)
    failed = grade.metadata.get("replies_failed")
    reached = len(result.trajectory.turns)
    for turn in grade.per_turn_grades or []:
        key = ItemKey(result.sample_id, result.repeat, name, turn.turn)
        if (asked is not None and turn.turn not in asked) or turn.turn >= reached:
            if turn.turn < reached and _no_answer(turn):
                tally.missed(key)
            continue
        if turn.score is None:
            tally.failed(key)
            continue
        if recorded or not reply or not isinstance(failed, list):
            passed = record.passes(turn.score)
        else:  # an older run.json: the run's own list of the replies that failed is the verdict
            passed = turn.turn not in failed
        out.append(JudgedItem(key, "reply" if reply else "turn", turn.score, passed, turn.rationale, turn.submission,
                              result, model))
    return out


def load_judged_run(run: Path) -> JudgedRun:
    """The judged items of a finished run (its folder or results.jsonl). ConfigError (exit 2) when it is not a run
    of samples, or no judge graded anything in it."""
    folder = run_folder(run)
    manifest = run_manifest(folder)
    judges = dict(manifest.judges) if manifest is not None else {}
    warnings: list[str] = []
    try:
        results = list(read_results(run, warnings))
    except ConfigError as exc:
        raise ConfigError([f"{p} (evals label and evals calibrate read the runs of `evals run`)" for p in exc.problems]) \
            from None
    names = list(dict.fromkeys(n for r in results for n, g in r.grades.items() if is_judged(g)))
    if not names:
        raise ConfigError(f"{run}: no judge grades in its results: no model_judge grader graded anything (a suite "
                          "without one, or a run with --no-judge); there is nothing to label or calibrate")
    fallback = None
    missing = [n for n in names if n not in judges]
    if missing:
        fallback = _fallback_mark(manifest, run)
        warnings.append(f"{folder / MANIFEST_NAME} does not record the pass mark of {', '.join(missing)} (a run made "
                        f"before it did): the gate's per-sample pass value ({fallback.op} {fallback.mark:g}) is used")
    order = {name: i for i, name in enumerate(names)}  # one grader's items together, each in results order
    tally = Unjudged()
    items = sorted(judged_items(results, judges, fallback, unjudged=tally), key=lambda item: order[item.key.grader])
    errors, no_answer = tally.errors, tally.no_answer
    samples: dict[str, set[int]] = {}
    for result in results:
        samples.setdefault(result.sample_id, set()).add(result.repeat)
    for name, count in errors.items():
        warnings.append(f"{name}: {count} judged item{'s' if count != 1 else ''} without a verdict (the judge failed) "
                        "left out: a judge error is not a failed item")
    return JudgedRun(folder, items, {n: judges[n] for n in names if n in judges}, errors, no_answer, tally.keys,
                     samples, warnings)


def label_for(run: JudgedRun, item: JudgedItem, passed: bool, note: str, review: bool = False) -> Label:
    """The label a person gave `item` (the keyboard labeller's or a page's), with the judge's verdict and
    fingerprint beside it."""
    return Label(sample_id=item.key.sample_id, grader=item.key.grader, label="pass" if passed else "fail",
                 repeat=item.key.repeat, turn=item.key.turn, note=note, judge="pass" if item.passed else "fail",
                 score=item.score, fingerprint=fingerprint_of(run.judges.get(item.key.grader)),
                 item=item.digest, review=review)
