"""Read a judge's verdict defensively: JSON, fenced JSON, JSON inside prose, or a 'score: N' line."""

from __future__ import annotations

import json
import re
from typing import Any

SCALES: dict[str, tuple[float, float]] = {"1-10": (1.0, 10.0), "0-1": (0.0, 1.0)}
_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_SCORE_LINE = re.compile(r"\bscore\b\W{0,3}\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)


class VerdictError(ValueError):
    """The judge's reply holds no usable verdict."""


def _objects(text: str) -> list[dict[str, Any]]:
    found = []
    for match in re.finditer(r"\{", text):
        try:
            value, _ = _DECODER.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict) and "score" in value:
            found.append(value)
    return found


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise VerdictError(f"score is a boolean ({value})")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise VerdictError(f"score {value!r} is not a number")


def parse_verdict(text: str, scale: str) -> tuple[float, float, str]:
    """(normalised score in [0, 1], raw score, reason); raises VerdictError."""
    if not text or not text.strip():
        raise VerdictError("empty reply")
    text = text.strip()
    candidates: list[dict[str, Any]] = []
    try:
        whole = json.loads(text)
        if isinstance(whole, dict) and "score" in whole:
            candidates.append(whole)
    except ValueError:
        pass
    if not candidates:
        for block in _FENCE.findall(text):
            candidates.extend(_objects(block))
    if not candidates:
        candidates.extend(_objects(text))
    if candidates:
        verdict = candidates[0]
        raw = _number(verdict["score"])
        reason = str(verdict.get("reason") or verdict.get("rationale") or "")
    else:
        lines = _SCORE_LINE.findall(text)
        if not lines:
            raise VerdictError(f"no score found in the reply: {text[:200]!r}")
        raw = float(lines[-1])
        reason = text
    low, high = SCALES[scale]
    if not low <= raw <= high:
        raise VerdictError(f"score {raw:g} is outside the {scale} scale")
    normalised = raw / 10.0 if scale == "1-10" else raw
    return normalised, raw, reason.strip()
