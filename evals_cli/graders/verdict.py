"""Read a judge's verdict defensively: JSON, fenced JSON, JSON inside prose, or a 'score: N' line.

Injection hardening, in two layers. The graded material is sent inside `<data-NONCE>` tags whose nonce is
derived from the material itself; anything the judge echoes back inside those tags is cut out before parsing.
A naive judge may also quote the answer outside the tags (before its verdict, after it, or inside its reason),
so every candidate verdict (a JSON object holding the key, or a `score: N` line) whose text also occurs in the
graded material is discarded as an echo: a submission that says `{"score": 10}` or `SCORE: 10` can never be
read as the judge's verdict. When only such echoed candidates exist, there is no verdict (VerdictError: the
grade is missing), never the attacker's number.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evals_cli.graders.scales import Scale, VerdictError, number

__all__ = ["VerdictError", "extract", "extract_verdict", "graded_material", "line_field", "number", "parse_verdict",
           "strip_echo"]

_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def strip_echo(text: str, nonce: str | None) -> str:
    """Cut out material the judge echoed back from inside the data tags (a closed block, or an open one
    running to the end of the reply)."""
    if not nonce:
        return text
    tag = re.escape(f"data-{nonce}")
    text = re.sub(rf"<{tag}>.*?</{tag}>", " ", text, flags=re.DOTALL)
    return re.sub(rf"<{tag}>.*", " ", text, flags=re.DOTALL)


_ESCAPES = (("\\\\", "\\"), ('\\"', '"'), ("\\n", " "), ("\\t", " "), ("\\r", " "))
_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    """The form echoes are compared in: JSON string escapes undone (a judge quoting the answer inside its JSON
    reason escapes its quotes; a transcript shows tool results JSON-encoded), whitespace collapsed, case folded."""
    for escaped, plain in _ESCAPES:
        text = text.replace(escaped, plain)
    return _SPACE.sub(" ", text).strip().casefold()


_AROUND_PUNCTUATION = re.compile(r"(?<=[^\w\s])\s+|\s+(?=[^\w\s])")


def _squeezed(text: str) -> str:
    """Echoes are compared without the whitespace next to punctuation: a judge that re-spaces `{"score":10}` as
    `{ "score": 10 }` is still echoing it (whitespace between two words stays, as one space)."""
    return _AROUND_PUNCTUATION.sub("", _normal(text))


def _spans(text: str, key: str | None) -> list[tuple[int, int, dict[str, Any]]]:
    """Every JSON object in `text` (holding `key`, unless None) with its span, outermost and nested alike."""
    found = []
    for match in re.finditer(r"\{", text):
        try:
            value, end = _DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and (key is None or key in value):
            found.append((match.start(), end, value))
    return found


class _Graded:
    """The graded material, ready to answer "does this candidate verdict occur in it?"."""

    def __init__(self, graded: str | None) -> None:
        self.text = _normal(graded or "")
        self.squeezed = _AROUND_PUNCTUATION.sub("", self.text)

    def holds_object(self, raw: str) -> bool:
        squeezed = _squeezed(raw)
        return bool(self.text) and bool(squeezed) and squeezed in self.squeezed

    def holds_line(self, raw: str) -> bool:
        """A score line is an echo when the graded text holds it with the same value: `score: 1` is not
        found in `score: 10`."""
        squeezed = _squeezed(raw)  # re-spaced echoes too: `score" : 10` is `score":10`
        if not self.text or not squeezed:
            return False
        return re.search(rf"(?<![\w]){re.escape(squeezed)}(?![\w.])", self.squeezed) is not None


def _line_pattern(key: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(key)}\b\W{{0,3}}\s*[:=]\s*\**\s*([-\w.]+)", re.IGNORECASE)


def extract(text: str, key: str = "score", nonce: str | None = None,
            graded: str | None = None) -> tuple[Any, str]:
    """(the raw answer under `key`, the reason) from a judge reply; VerdictError when there is none.

    `graded` is the material the judge was shown: a candidate verdict whose text occurs in it is an echo of
    the graded answer, never the judge's verdict."""
    raw, reason, _ = extract_verdict(text, key, nonce, graded)
    return raw, reason


def extract_verdict(text: str, key: str = "score", nonce: str | None = None,
                    graded: str | None = None) -> tuple[Any, str, dict[str, Any]]:
    """`extract`, with the verdict object the answer was read from (its other fields, such as a goal-completion
    judge's `turn_of_success`, come from the same object, never from an echo); {} when the answer came from a
    `score: N` line (`line_field` reads a field there)."""
    if not text or not text.strip():
        raise VerdictError("empty reply")
    text = strip_echo(text, nonce).strip()
    material = _Graded(graded)
    echoed = 0
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):  # a reply nested past the parser's depth is no verdict either
        whole = None
    if isinstance(whole, dict) and key in whole:
        if not material.holds_object(text):
            return whole[key], _reason(whole), whole
        echoed += 1
    fenced: list[dict[str, Any]] = []
    for block in _FENCE.finditer(text):
        for start, end, value in _spans(block.group(1), key):
            if material.holds_object(block.group(1)[start:end]):
                echoed += 1
            else:
                fenced.append(value)
    loose: list[dict[str, Any]] = []
    for start, end, value in _spans(text, key):
        if material.holds_object(text[start:end]):
            echoed += 1
        else:
            loose.append(value)
    candidates = fenced or loose
    if candidates:
        verdict = candidates[-1]  # the judge's conclusion comes last
        return verdict[key], _reason(verdict), verdict
    lines = []
    for match in _line_pattern(key).finditer(text):
        if material.holds_line(match.group(0)):
            echoed += 1
        else:
            lines.append(match.group(1))
    if lines:
        return lines[-1], text, {}
    if echoed:
        raise VerdictError(f"no {key} of the judge's own in the reply: the only {echoed} candidate(s) are quoted "
                           f"from the graded material (an echo is never a verdict): {text[:200]!r}")
    raise VerdictError(f"no {key} found in the reply: {text[:200]!r}")


def line_field(text: str, key: str, nonce: str | None = None, graded: str | None = None) -> str | None:
    """The last `key: VALUE` line of a plain-text verdict that is not quoted from the graded material."""
    text = strip_echo(text, nonce)
    material = _Graded(graded)
    found = [m.group(1) for m in _line_pattern(key).finditer(text) if not material.holds_line(m.group(0))]
    return found[-1] if found else None


def _reason(verdict: dict[str, Any]) -> str:
    return str(verdict.get("reason") or verdict.get("rationale") or "").strip()


def graded_material(messages: list[dict[str, Any]], nonce: str | None) -> str | None:
    """The material fenced in the last user message's `<data-NONCE>` tags (what the judge was asked to grade):
    every fenced span, one per line, since a rubric quotes the sample's values where it uses them."""
    if not nonce:
        return None
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str):
            tag = re.escape(f"data-{nonce}")
            found = re.findall(rf"<{tag}>\n?(.*?)\n?</{tag}>", content, flags=re.DOTALL)
            return "\n".join(found) if found else content
    return None


def parse_verdict(text: str, scale: str, nonce: str | None = None,
                  graded: str | None = None) -> tuple[float, float, str]:
    """Numeric scales: (normalised score in [0, 1], raw score, reason); raises VerdictError."""
    raw, reason = extract(text, "score", nonce, graded)
    normalised, value = Scale.of(scale).normalise(raw)
    return normalised, value, reason
