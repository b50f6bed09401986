"""Read a judge's verdict defensively: JSON, fenced JSON, JSON inside prose, or a 'score: N' line.

Injection hardening: the graded material is sent inside `<data-NONCE>` tags whose nonce is derived from
the material itself. Anything the judge echoes back inside those tags is cut out before parsing, so a
submission that says `{"score": 10}` or `SCORE: 10` can never be read as the judge's verdict.
"""

from __future__ import annotations

import json
import re
from typing import Any

_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


class VerdictError(ValueError):
    """The judge's reply holds no usable verdict."""


def number(value: Any) -> float:
    if isinstance(value, bool):
        raise VerdictError(f"score is a boolean ({value})")
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            raise VerdictError(f"score {value!r} is not a number") from None
    else:
        raise VerdictError(f"score {value!r} is not a number")
    return result  # NaN passes here and fails every range check


def strip_echo(text: str, nonce: str | None) -> str:
    """Cut out material the judge echoed back from inside the data tags (a closed block, or an open one
    running to the end of the reply)."""
    if not nonce:
        return text
    tag = re.escape(f"data-{nonce}")
    text = re.sub(rf"<{tag}>.*?</{tag}>", " ", text, flags=re.DOTALL)
    return re.sub(rf"<{tag}>.*", " ", text, flags=re.DOTALL)


def _objects(text: str, key: str) -> list[dict[str, Any]]:
    found = []
    for match in re.finditer(r"\{", text):
        try:
            value, _ = _DECODER.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict) and key in value:
            found.append(value)
    return found


def extract(text: str, key: str = "score", nonce: str | None = None) -> tuple[Any, str]:
    """(the raw answer under `key`, the reason) from a judge reply; VerdictError when there is none."""
    if not text or not text.strip():
        raise VerdictError("empty reply")
    text = strip_echo(text, nonce).strip()
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and key in whole:
        candidates = [whole]
    else:
        candidates = [obj for block in _FENCE.findall(text) for obj in _objects(block, key)] or _objects(text, key)
    if candidates:
        verdict = candidates[-1]  # the judge's conclusion comes last
        return verdict[key], str(verdict.get("reason") or verdict.get("rationale") or "").strip()
    line = re.compile(rf"\b{re.escape(key)}\b\W{{0,3}}\s*[:=]\s*\**\s*([-\w.]+)", re.IGNORECASE)
    found = line.findall(text)
    if not found:
        raise VerdictError(f"no {key} found in the reply: {text[:200]!r}")
    return found[-1], text


def parse_verdict(text: str, scale: str, nonce: str | None = None) -> tuple[float, float, str]:
    """Numeric scales: (normalised score in [0, 1], raw score, reason); raises VerdictError."""
    from evals_cli.graders.scales import Scale

    raw, reason = extract(text, "score", nonce)
    normalised, value = Scale.of(scale).normalise(raw)
    return normalised, value, reason
