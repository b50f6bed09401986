"""A label posted by a report's buttons (`evals view` serves the report and saves each click into the run's
labels.jsonl, the same file `evals label` appends to). The page says which item and which label; what the judge
said of the item (its verdict, score, fingerprint and the digest of the answer) is read from the run itself, never
taken from the request, so a label in the file always describes the run's own judge."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from evals_cli.calibration.items import ItemKey, label_for, load_judged_run
from evals_cli.errors import ConfigError
from evals_cli.labels import LABELS_NAME, Label, append_label, parse_label

_WRITING = threading.Lock()  # the viewer answers requests in threads: one append at a time


def save_posted_label(folder: Path, body: bytes) -> Label:
    """Append the label in `body` (one labels-file object, as the report's download writes it) to
    folder/labels.jsonl. ConfigError naming what is wrong: not JSON, a bad field, no such judged item, or a label
    given to another answer than this run's."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ConfigError("the posted label is not a UTF-8 JSON object") from None
    posted, problems = parse_label(data, "the posted label")
    if posted is None:
        raise ConfigError(problems)
    run = load_judged_run(folder)
    key = ItemKey(posted.sample_id, posted.repeat, posted.grader, posted.turn)
    item = run.by_key().get(key)
    if item is None:
        raise ConfigError(f"{key.describe()}: no judge verdict of {folder} has this key; reload the report")
    if posted.item is not None and posted.item != item.digest:
        raise ConfigError(f"{key.describe()}: the label was given to another answer than this run's (the page is "
                          "older than the run); reload the report")
    label = label_for(run, item, posted.label == "pass", posted.note)
    with _WRITING:
        append_label(run.path / LABELS_NAME, label)
    return label
