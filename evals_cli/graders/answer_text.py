"""An answer compared with reference answers the way inspect_ai's `exact()` and `f1()` scorers compare them, so
that a score moved from an inspect eval means the same here.

Both texts are normalised word by word: split at spaces and hyphens (so a minus sign splits off, as in inspect:
`-2.5` reads `2.5`); each word case-folded; its punctuation removed (a number keeps its decimal point: `3.14`, and
punctuation around a number is dropped: `(3.14).` is `3.14`); a number (`3`, `3.00`, `1,000` once its comma is
gone) written in one form (`3.0`, `1000.0`); the articles a, an and the dropped; empty words dropped.

Exact match compares the normalised texts; F1 compares their sets of words (each word once, as inspect counts
them): the harmonic mean of the share of the answer's words that are in the reference (precision) and of the
reference's that are in the answer (recall), the best over the references, rounded to two places.

One difference, on purpose: a reference that normalises to nothing (`"The"`, `"..."`) is left out, as an empty
one is, rather than scored (inspect would give any non-empty answer 0 against it, and an empty one 1.0); a grader
whose references are all left out has nothing to check (n/a)."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable

_WORD_BREAKS = re.compile(r"[ -]")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)
_EDGES = string.whitespace + string.punctuation


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _word(raw: str) -> str:
    """One word normalised (it may come out empty, or, holding a line break, as two words)."""
    word = raw.casefold()
    if not _is_number(word):
        bare = word.strip(_EDGES)
        word = bare if _is_number(bare) else "".join(ch for ch in word if ch not in _PUNCTUATION)
    if _is_number(word):
        word = str(float(word))
    return " ".join(_ARTICLES.sub(" ", word).split())


def normalize(text: str, stop_words: Iterable[str] = ()) -> str:
    """`text` normalised (see the module's docstring), without the `stop_words` (normalised the same way)."""
    stops = {_word(word) for word in stop_words}
    words = (_word(raw) for raw in _WORD_BREAKS.split(text))
    return " ".join(word for word in words if word and word not in stops)


def f1_score(answer: str, reference: str, stop_words: Iterable[str] = ()) -> float:
    """F1 of the answer's set of normalised words against the reference's."""
    stops = list(stop_words)
    got, wanted = set(normalize(answer, stops).split()), set(normalize(reference, stops).split())
    shared = len(got & wanted)
    precision = shared / len(got) if got else 1.0
    recall = shared / len(wanted) if wanted else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def usable(references: Iterable[str], stop_words: Iterable[str] = ()) -> list[str]:
    """The references with something left once normalised (see the module's docstring for why the others go)."""
    stops = list(stop_words)
    return [ref for ref in references if normalize(ref, stops)]


def best_f1(answer: str, references: list[str], stop_words: Iterable[str] = ()) -> tuple[float, str]:
    """(the best F1 over the references, rounded to two places as inspect rounds it; the reference that gave it)."""
    stops = list(stop_words)
    scored = [(f1_score(answer, ref, stops), ref) for ref in references]
    best, ref = max(scored, key=lambda pair: pair[0])
    return round(best, 2), ref


def exact(answer: str, references: list[str]) -> str | None:
    """The first reference the answer equals once both are normalised; None when it equals none."""
    said = normalize(answer)
    return next((ref for ref in references if normalize(ref) == said), None)
