"""Labelling judged items in the HTML report: a pass and a fail button (and a note) beside every judge verdict, per
sample, per turn and per reply, and a "download labels" button that saves them as the labels file `evals calibrate`
reads (one JSON line per labelled item, the same keys `evals label` writes). The page parts are template files:
templates/_labels.html.j2 (the buttons), labels.css and labels.js; this module gives each item its data.

Each item's identity and what the judge said travel in its `data-item` attribute (JSON, escaped by the template);
the script adds the person's label and note. Labels survive a reload of the same report in the browser's storage,
restored only onto the same judged answer (its digest), never onto another run's report at the same path.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from evals_cli.calibration.items import JudgedItem, judged_items, run_manifest
from evals_cli.calibration.judges import fingerprint_of
from evals_cli.errors import ConfigError
from evals_cli.models.calibration import JudgeRecord
from evals_cli.models.results import SampleResult

ItemKey = tuple[str, int]  # (sample_id, repeat)


def item_data(item: JudgedItem, record: JudgeRecord | None) -> str:
    """The JSON a label line starts from: the item's key, the judge's verdict and score, the judge's fingerprint and
    the digest of what was judged."""
    data: dict[str, object] = {"sample_id": item.key.sample_id, "repeat": item.key.repeat, "grader": item.key.grader,
                               "turn": item.key.turn, "judge": item.verdict(), "score": item.score}
    fingerprint = fingerprint_of(record)
    if fingerprint is not None:
        data["fingerprint"] = fingerprint.as_dict()
    data["item"] = item.digest
    return json.dumps(data, ensure_ascii=False)


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
    for item in judged_items(results, judges, default):
        record = judges.get(item.key.grader)
        out.setdefault((item.key.sample_id, item.key.repeat), {})[(item.key.grader, item.key.turn)] = \
            item_data(item, record)
    return out
