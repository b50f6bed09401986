"""What run.json records of each judge grader when a run starts: the pass mark its verdicts are read at and a
fingerprint of the judge. Read through duck typing (a grader with `uses_judge`, a `spec`, its endpoints and rubric),
so this package never imports the graders or the gate."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from evals_cli.labels import Fingerprint
from evals_cli.models.calibration import JudgeRecord


def rubric_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def scale_name(scale: Any) -> str:
    """'1-10', '0-1', 'pass-fail', or the labelled choices with their scores."""
    if isinstance(scale, str):
        return scale
    try:
        choices = [[getattr(c, "label", ""), getattr(c, "score", None)] for c in scale]
        return json.dumps(choices, ensure_ascii=False)
    except TypeError:
        return str(scale)


def judge_records(graders: Mapping[str, Any], gate: Any) -> dict[str, JudgeRecord]:
    """name -> record for every judge grader of a run.

    A verdict on a whole conversation or on one turn of a per-turn sample passes at the grader's threshold, as the
    gate reads it (`gate.threshold`: its own, its kind's, else the gate's per-sample pass value). A `scope: reply`
    grader's reply passes at its own threshold, else the gate's per-sample rule (the grade's threshold is the share
    of replies, `min_share`, not a reply's mark)."""
    records: dict[str, JudgeRecord] = {}
    for name, grader in graders.items():
        if not getattr(grader, "uses_judge", False):
            continue
        spec = grader.spec
        scope = getattr(spec, "scope", "conversation")
        if scope == "reply":
            own = spec.threshold if spec.threshold is not None else type(spec).threshold_by_default
            op, mark = ("gte", own) if own is not None else (gate.sample_rule or ("gte", 1.0))
        else:
            op, mark = "gte", gate.threshold(name)
        models = [str(getattr(e, "model", "")) for e in getattr(grader, "endpoints", None) or []]
        records[name] = JudgeRecord(scope=scope, op=op, mark=float(mark),
                                    rubric=rubric_digest(str(getattr(grader, "rubric_text", "") or "")),
                                    model=", ".join(dict.fromkeys(models)), scale=scale_name(getattr(spec, "scale", "")))
    return records


def fingerprint_of(record: JudgeRecord | None) -> Fingerprint | None:
    return Fingerprint(record.rubric, record.model, record.scale) if record is not None else None
