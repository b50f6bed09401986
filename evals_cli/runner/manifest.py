"""`run.json`, written when a run starts: what makes its results comparable (fingerprint) and what is
needed to summarise them again without the suite (gate, graders, repeats, pricing, shard). Resume checks
the fingerprint; merge checks it across shards and rebuilds one summary from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from evals_cli.errors import ConfigError
from evals_cli.runner.fingerprint import Fingerprint

MANIFEST_NAME = "run.json"


class Manifest(BaseModel):
    suite: str
    fingerprint: Fingerprint
    gate: dict[str, Any] = Field(default_factory=dict)
    graders: list[str] = Field(default_factory=list)
    repeats: int = 1
    pricing: dict[str, tuple[float, float]] = Field(default_factory=dict)
    shard: str | None = None


def write_manifest(directory: Path, manifest: Manifest) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST_NAME).write_text(manifest.model_dump_json(indent=2), encoding="utf-8")


def read_manifest(directory: Path) -> Manifest:
    path = directory / MANIFEST_NAME
    if not path.is_file():
        raise ConfigError(f"{directory}: no {MANIFEST_NAME}; give the folder of a run started by `evals run`")
    try:
        return Manifest.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError):
        raise ConfigError(f"{path}: unreadable run manifest") from None
