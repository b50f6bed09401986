"""The labels file: one JSON object per line, a person's verdict on one judged item.

    {"sample_id": "db-host", "repeat": 0, "grader": "quality", "turn": null, "label": "pass", "note": ""}

`turn` is the 0-based turn or reply index for per-turn and per-reply judges (null for a whole-conversation one).
`evals label` and the HTML report also write what the judge said (`judge`, `score`), a `fingerprint` of the judge
(a digest of its rubric, its model, its scale) and `item`, a digest of what was judged: with them a labels file
can calibrate a later run of the same judge, and a label given to another run's answer is recognised. Other keys
are kept for the person's own use and ignored.

A file is appended to, one line per label (a person going back relabels by appending), so the later label of an
item wins; reading says so in a note naming both lines. Every problem names the file, the line and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evals_cli.errors import ConfigError

LABELS_NAME = "labels.jsonl"
MAX_PROBLEMS = 20
Verdict = Literal["pass", "fail"]


@dataclass(frozen=True)
class Fingerprint:
    """Which judge a label was given against: a change of rubric or model changes what its verdicts mean."""

    rubric: str = ""
    model: str = ""
    scale: str = ""

    def differences(self, other: Fingerprint) -> list[str]:
        """What differs, in words ('the rubric', 'the judge model X, not Y'); only what both sides recorded."""
        found = []
        if self.rubric and other.rubric and self.rubric != other.rubric:
            found.append("the rubric")
        if self.model and other.model and self.model != other.model:
            found.append(f"the judge model ({self.model}, now {other.model})")
        if self.scale and other.scale and self.scale != other.scale:
            found.append(f"the scale ({self.scale}, now {other.scale})")
        return found

    def as_dict(self) -> dict[str, str]:
        return {"rubric": self.rubric, "model": self.model, "scale": self.scale}


@dataclass(frozen=True)
class Label:
    """One line of a labels file."""

    sample_id: str
    grader: str
    label: Verdict
    repeat: int = 0
    turn: int | None = None
    note: str = ""
    judge: Verdict | None = None  # the judge's verdict when the item was labelled
    score: float | None = None  # the judge's score then
    fingerprint: Fingerprint | None = None
    item: str | None = None  # digest of what was judged (see items.item_digest)
    review: bool = False  # given while reviewing disagreements (`evals label --only disagreements-of`)
    line: int = 0  # where it was read (0: not read from a file)

    @property
    def key(self) -> tuple[str, int, str, int | None]:
        return (self.sample_id, self.repeat, self.grader, self.turn)

    @property
    def passed(self) -> bool:
        return self.label == "pass"

    def as_json(self) -> str:
        data: dict[str, Any] = {"sample_id": self.sample_id, "repeat": self.repeat, "grader": self.grader,
                                "turn": self.turn, "label": self.label, "note": self.note}
        if self.judge is not None:
            data["judge"] = self.judge
        if self.score is not None:
            data["score"] = self.score
        if self.fingerprint is not None:
            data["fingerprint"] = self.fingerprint.as_dict()
        if self.item is not None:
            data["item"] = self.item
        if self.review:
            data["review"] = True
        return json.dumps(data, ensure_ascii=False)


@dataclass
class LabelFile:
    """A labels file read: the latest label of each item (in file order of those latest lines), and notes."""

    path: Path
    labels: list[Label]
    lines: int = 0  # labels read, duplicates included
    notes: list[str] = field(default_factory=list)

    def latest(self) -> dict[tuple[str, int, str, int | None], Label]:
        return {label.key: label for label in self.labels}


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_label(data: Any, where: str) -> tuple[Label | None, list[str]]:
    """A label from one decoded line, or the problems with it (each naming `where` and the field)."""
    if not isinstance(data, dict):
        return None, [f"{where}: not a JSON object; each line is one label such as "
                      '{"sample_id": "s1", "repeat": 0, "grader": "quality", "turn": null, "label": "pass"}']
    problems: list[str] = []
    sample = data.get("sample_id")
    if _int(sample):
        sample = str(sample)
    if not isinstance(sample, str) or not sample:
        problems.append(f"{where}: sample_id: missing or not a string; give the id of the labelled sample")
    grader = data.get("grader")
    if not isinstance(grader, str) or not grader:
        problems.append(f"{where}: grader: missing or not a string; give the name of the judge grader")
    repeat = data.get("repeat", 0)
    if not _int(repeat) or repeat < 0:
        problems.append(f"{where}: repeat: {json.dumps(repeat)} is not a repeat index; give 0 for a run without "
                        "repeats")
    turn = data.get("turn")
    if turn is not None and (not _int(turn) or turn < 0):
        problems.append(f"{where}: turn: {json.dumps(turn)} is not a turn; give the 0-based turn or reply index, or "
                        "null for a whole-conversation judge")
    label = data.get("label")
    if label not in ("pass", "fail"):
        hint = " (a skipped item has no line)" if label == "skip" else ""
        problems.append(f"{where}: label: {json.dumps(label)} is not a label; give \"pass\" or \"fail\"{hint}")
    problems += _optional_problems(data, where)
    if problems:
        return None, problems
    note, judge, score, fingerprint, item = (data.get("note") or "", data.get("judge"), data.get("score"),
                                             data.get("fingerprint"), data.get("item"))
    prints = Fingerprint(**{k: str(fingerprint.get(k, "")) for k in ("rubric", "model", "scale")}) \
        if isinstance(fingerprint, dict) else None
    return Label(sample_id=str(sample), grader=str(grader), label=label, repeat=int(repeat), turn=turn,  # type: ignore[arg-type]
                 note=str(note), judge=judge, score=float(score) if score is not None else None,
                 fingerprint=prints, item=item, review=data.get("review") is True), []


def _optional_problems(data: dict[str, Any], where: str) -> list[str]:
    """The problems with a label's optional keys (note, judge, score, fingerprint, item): each may be absent."""
    problems: list[str] = []
    note = data.get("note", "")
    if note is not None and not isinstance(note, str):
        problems.append(f"{where}: note: not a string")
    judge = data.get("judge")
    if judge is not None and judge not in ("pass", "fail"):
        problems.append(f"{where}: judge: {json.dumps(judge)} is not a verdict; \"pass\", \"fail\" or no key")
    score = data.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score)
                              or not 0 <= score <= 1):
        problems.append(f"{where}: score: {json.dumps(score)} is not a judge score in [0, 1]")
    fingerprint = data.get("fingerprint")
    if fingerprint is not None and not (isinstance(fingerprint, dict)
                                        and all(isinstance(v, str) for v in fingerprint.values())):
        problems.append(f"{where}: fingerprint: give an object of strings (rubric, model, scale) or no key")
    item = data.get("item")
    if item is not None and not isinstance(item, str):
        problems.append(f"{where}: item: not a string")
    return problems


def read_labels(path: Path, *, allow_empty: bool = False) -> LabelFile:
    """Every label of `path`, the later of two for one item winning (said in `notes`). ConfigError (exit 2) naming
    each bad line, a missing or empty file (unless `allow_empty`: a labeller resuming a file it has just made)."""
    if not path.is_file():
        if allow_empty and not path.exists():
            return LabelFile(path, [])
        raise ConfigError(f"{path}: no such labels file; write one with `evals label RUN` (or the HTML report's "
                          "\"download labels\")")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({type(exc).__name__}); a labels file is UTF-8 JSON lines") from None
    problems: list[str] = []
    latest: dict[tuple[str, int, str, int | None], Label] = {}
    notes: list[str] = []
    count = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except ValueError as exc:
            problems.append(f"{where}: not JSON ({str(exc).splitlines()[0][:120]}); each line is one label object")
            continue
        label, found = parse_label(data, where)
        problems += found
        if label is None:
            continue
        count += 1
        label = Label(**{**label.__dict__, "line": number})
        earlier = latest.pop(label.key, None)  # popped: the item now sits where its latest label is
        if earlier is not None:
            turn = "" if label.turn is None else f", turn {label.turn}"
            notes.append(f"{path}:{number} labels the same item as line {earlier.line} (sample {label.sample_id}, "
                         f"repeat {label.repeat}, grader {label.grader}{turn}): the later label ({label.label}) counts")
        latest[label.key] = label
    if problems:
        more = len(problems) - MAX_PROBLEMS
        raise ConfigError(problems[:MAX_PROBLEMS] + ([f"{path}: {more} more problems"] if more > 0 else []))
    if not latest and not allow_empty:
        raise ConfigError(f"{path}: no labels in it (an empty file); label judged items with `evals label RUN`")
    return LabelFile(path, list(latest.values()), count, notes)


def append_label(path: Path, label: Label) -> None:
    """One label, appended and flushed at once: a labelling session killed midway keeps every label given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as fh:
        fh.seek(0, 2)
        end = fh.tell()
        if end:  # a file edited by hand may lack its last newline: the label must not join that line
            fh.seek(end - 1)
            if fh.read(1) != b"\n":
                fh.write(b"\n")
        fh.write((label.as_json() + "\n").encode("utf-8"))
        fh.flush()


def calibration_labels(path: Path, grader: str, where: str) -> list[Label]:
    """The labels a judge grader's `calibration:` file holds for it, checked before a run starts: each must say what
    the judge answered (`score` or `judge`, as `evals label` and the report's download write), since the run's own
    items are other answers and only the labelled ones measure the judge."""
    try:
        found = read_labels(path)
    except ConfigError as exc:
        raise ConfigError([f"{where}: {p}" for p in exc.problems]) from None
    mine = [label for label in found.labels if label.grader == grader]
    if not mine:
        others = sorted({label.grader for label in found.labels})
        raise ConfigError(f"{where}: {path} has no label for the grader '{grader}' (it labels {', '.join(others)}); "
                          "give the labels of this grader, from an earlier run of it")
    blind = [label.line for label in mine if label.score is None and label.judge is None]
    if blind:
        shown = ", ".join(str(n) for n in blind[:10]) + (" ..." if len(blind) > 10 else "")
        raise ConfigError(f"{where}: {path}: line {shown}: no judge verdict recorded (score or judge); a calibration "
                          "file must say what the judge answered on each labelled item, as `evals label` and the "
                          "HTML report's \"download labels\" write it")
    return mine
