"""The fingerprint of a run's suite and dataset (output/fingerprint.py holds its stored form): computed here, in
the runner, because reading it takes the whole SuiteSpec, which sits above the output layer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from evals_cli.output.fingerprint import Fingerprint, file_digest

if TYPE_CHECKING:  # annotations only; importing SuiteSpec imports every grader and target kind
    from evals_cli.suite.spec import SuiteSpec


# settings that change how a run goes, not what its results mean
_VOLATILE_TARGET = {"base_url", "api_key", "timeout", "max_retries", "sample_timeout"}


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def fingerprint(suite: SuiteSpec, dataset: Path, dataset_digest: str | None = None) -> Fingerprint:
    """`dataset_digest`: the file's `file_digest`, when a read already took it (the run's precheck does)."""
    data = suite.model_dump(include={"target", "tools", "graders", "gate", "judge"})
    data["target"] = {k: v for k, v in data["target"].items() if k not in _VOLATILE_TARGET}
    if isinstance(data["target"].get("models"), list):  # a model's own endpoint moves like target.base_url
        data["target"]["models"] = [m["model"] if isinstance(m, dict) else m for m in data["target"]["models"]]
    if data.get("judge"):
        data["judge"] = {k: v for k, v in data["judge"].items() if k not in _VOLATILE_TARGET}
    for grader in data["graders"].values():
        grader.pop("api_key", None)
        grader.pop("base_url", None)
        grader.pop("calibration", None)  # labels to correct a pass rate with: the results mean the same
    return Fingerprint(suite=_digest(data), dataset=dataset_digest or file_digest(dataset))
