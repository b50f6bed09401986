"""A fingerprint of what makes results comparable, stored with each run so that resume can refuse a
changed suite or dataset instead of mixing incomparable results."""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel


class Fingerprint(BaseModel):
    suite: str
    dataset: str


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]
