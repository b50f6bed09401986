"""Labelling judged items in the HTML report: a pass and a fail button (and a note) beside every judge verdict, per
sample, per turn and per reply, and a "download labels" button that saves them as the labels file `evals calibrate`
reads (one JSON line per labelled item, the same keys `evals label` writes). The page parts are template files:
templates/_labels.html.j2 (the buttons), labels.css and labels.js; this module gives each item its data.

Each item's identity and what the judge said travel in its `data-item` attribute (JSON, escaped by the template),
with the run's own label of it (RUN/labels.jsonl, which `evals label` writes): the buttons show it. The script adds
the person's clicks. Served by `evals view`, each click is saved into RUN/labels.jsonl (a same-origin POST; the page
names the address in `<meta name="evals-labels">`); a report opened from disk keeps clicks in the browser's storage,
restored only onto the same judged answer (its digest), never onto another run's report at the same path, and
"download labels" saves them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from evals_cli.calibration.items import JudgedItem, judged_items, run_manifest
from evals_cli.calibration.judges import fingerprint_of
from evals_cli.errors import ConfigError
from evals_cli.labels import LABELS_NAME, Label, read_labels
from evals_cli.models.calibration import JudgeRecord
from evals_cli.models.results import SampleResult

ItemKey = tuple[str, int]  # (sample_id, repeat)


def item_data(item: JudgedItem, record: JudgeRecord | None, saved: Label | None = None) -> str:
    """The JSON a label line starts from: the item's key, the judge's verdict and score, the judge's fingerprint and
    the digest of what was judged; and the run's own label of it (RUN/labels.jsonl), shown on the buttons."""
    data: dict[str, object] = {"sample_id": item.key.sample_id, "repeat": item.key.repeat, "grader": item.key.grader,
                               "turn": item.key.turn, "judge": item.verdict(), "score": item.score}
    fingerprint = fingerprint_of(record)
    if fingerprint is not None:
        data["fingerprint"] = fingerprint.as_dict()
    data["item"] = item.digest
    if saved is not None and saved.item in (None, data["item"]):  # a label given to this very answer
        data["saved"] = {"label": saved.label, "note": saved.note}
    return json.dumps(data, ensure_ascii=False)


def run_labels(run_dir: Path | None) -> dict[tuple[str, int, str, int | None], Label]:
    """The run's labels (RUN/labels.jsonl, whichever tool wrote them), by item; none when the file is missing or
    unreadable (`evals calibrate` names its bad lines; a report still draws)."""
    if run_dir is None:
        return {}
    folder = run_dir if run_dir.is_dir() else run_dir.parent
    try:
        return read_labels(folder / LABELS_NAME, allow_empty=True).latest()
    except ConfigError:
        return {}


def label_items(results: Iterable[SampleResult], run_dir: Path | None,
                fallback: tuple[str, float] | None) -> dict[ItemKey, dict[tuple[str, int | None], str]]:
    """(sample, repeat) -> (grader, turn) -> the item's data, for every judge verdict in `results`. The pass mark is
    the one run.json records for the judge, else `fallback` (the report's per-sample pass rule, op and value)."""
    judges: dict[str, JudgeRecord] = {}
    if run_dir is not None:
        try:
            manifest = run_manifest(run_dir if run_dir.is_dir() else run_dir.parent)
        except ConfigError:
            manifest = None
        judges = dict(manifest.judges) if manifest is not None else {}
    op, mark = fallback or ("gte", 0.5)
    default = JudgeRecord(op=op if op in ("gt", "gte", "lt", "lte", "eq") else "gte", mark=mark)
    out: dict[ItemKey, dict[tuple[str, int | None], str]] = {}
    saved = run_labels(run_dir)
    for item in judged_items(results, judges, default):
        record = judges.get(item.key.grader)
        key = item.key
        out.setdefault((key.sample_id, key.repeat), {})[(key.grader, key.turn)] = \
            item_data(item, record, saved.get((key.sample_id, key.repeat, key.grader, key.turn)))
    return out
