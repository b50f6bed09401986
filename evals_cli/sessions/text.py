"""Plain-text heuristics shared by the detectors: content tokens, message similarity, and 'facts'.

Facts are what the hallucination check and the handoff check look for, because they are what a model
invents or drops without noticing, and what can be checked without understanding the sentence:

- identifiers: a token mixing letters and digits, optionally joined by '-' or '_' (ORD-1001, RF-5521, A12);
  or digit groups joined by '-', '/' or ':' with at least 4 digits in all (2024-05-01, 10:30). Compared
  case-insensitively as substrings of the evidence.
- numbers: with a decimal point, or of at least two digits, after dropping currency signs and thousands
  separators ($1,299.00 is 1299). Single-digit integers ('2 items', 'step 3') are too common to mean anything.
  Compared by value against every number of the evidence, digits inside identifiers included.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

STOPWORDS = frozenset("""a an the and or but if then so to of in on at by for with from as is are was were be been
being it its this that these those i me my we our you your he she they them their his her what which who whom
when where why how do does did done can could would should will shall may might must not no yes please thanks
thank just also there here about into over than too very s t""".split())

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_IDENT = re.compile(r"(?<![\w.])(?=[A-Za-z0-9_-]*[A-Za-z])(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*(?![\w])")
_DIGIT_GROUP = re.compile(r"(?<![\w.])\d+(?:[-/:]\d+)+(?![\w])")
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])\d+(?:\.\d+)?(?![\w])")
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_UNIT = re.compile(r"^(\d+)[a-z]{1,2}$", re.IGNORECASE)  # 24h, 2nd, 10x: a number with a unit, not an id


def tokens(text: str) -> list[str]:
    """Lower-case words, apostrophes folded, with a light plural strip so 'refunds' meets 'refund'."""
    words = _WORD.findall(text.lower().replace("’", "'"))
    out = []
    for word in words:
        word = word.split("'")[0] if word.endswith(("'s", "'re", "'ve", "'ll", "'d", "'m")) else word
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.append(word)
    return out


def content_tokens(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in STOPWORDS}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def similarity(a: str, b: str) -> float:
    """How alike two user messages are: the max of difflib's ratio over normalised text (catches rewording
    that keeps the sentence) and the Jaccard index of content tokens (catches reordering)."""
    ratio = difflib.SequenceMatcher(None, " ".join(tokens(a)), " ".join(tokens(b))).ratio()
    return max(ratio, jaccard(content_tokens(a), content_tokens(b)))


@dataclass(frozen=True)
class Fact:
    text: str  # as written
    kind: str  # identifier | number
    key: str  # lower-case identifier, or the number rounded as text

    def __str__(self) -> str:
        return self.text


def _number_key(raw: str) -> str | None:
    try:
        return repr(round(float(raw.replace(",", "")), 6))
    except ValueError:
        return None


def facts(text: str) -> list[Fact]:
    """The identifiers, then the numbers, of a text, without duplicates (see the module docstring)."""
    found: dict[str, Fact] = {}
    rest = text
    for pattern in (_DIGIT_GROUP, _IDENT):
        for match in pattern.finditer(rest):
            raw = match.group(0)
            unit = _UNIT.match(raw)
            if unit:
                continue  # left for the number pass, which sees its digits once the letters are cut below
            if pattern is _DIGIT_GROUP and sum(c.isdigit() for c in raw) < 4:
                continue
            found.setdefault("i:" + raw.lower(), Fact(raw, "identifier", raw.lower()))
        rest = pattern.sub(lambda m: m.group(0) if _UNIT.match(m.group(0)) else " ", rest)
    rest = re.sub(r"(\d)[a-zA-Z]{1,2}\b", r"\1", rest)
    for match in _NUMBER.finditer(rest):
        raw = match.group(0)
        digits = raw.replace(",", "")
        if "." not in digits and len(digits.lstrip("0") or "0") < 2:
            continue
        key = _number_key(raw)
        if key is not None:
            found.setdefault("n:" + key, Fact(raw, "number", key))
    return list(found.values())


class Evidence:
    """Text a fact may be found in (tool results, user messages, the task)."""

    def __init__(self, texts: list[str]) -> None:
        self.text = "\n".join(texts).lower()
        self.numbers = {k for raw in _ANY_NUMBER.findall(self.text.replace(",", "")) if (k := _number_key(raw))}

    def supports(self, fact: Fact) -> bool:
        if fact.kind == "identifier":
            return fact.key in self.text
        return fact.key in self.numbers
