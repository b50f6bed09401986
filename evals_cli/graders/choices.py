"""Multiple-choice rows (a row's `choices`): how the options reach the agent, and which one an answer chose.

A suite with a `choice` grader shows each row's options after its `input`, one line each, lettered as inspect_ai's
multiple_choice solver letters them::

    What is the capital of France?

    A) Paris
    B) Berlin

With `shuffle: true` the options are shown in an order drawn for each (sample id, repeat), the same in every run
(a recording replays, a resumed run asks what the first one asked), and the row's `ground_truth` letter follows
its option: the sample the agent runs and every grader reads holds the options as shown and the letter of the
correct one among them. The runner renders each (sample, repeat) through `ChoicePrompt` (runner/prepare.py `work`).

An answer chooses an option by its letter, read as inspect's `choice()` reads `ANSWER: B` (the last such line), or
the answer being the letter alone (`B`, `(b)`, `**B.**`), or beginning with one as a label (`B) Paris`), or
saying `the answer is B`; or by the option's text: the whole answer, or what its last `Answer: ...` line says,
equal to one option's once both are normalised (case, punctuation, articles: evals_cli/graders/answer_text.py).
`ANSWER: A, C` names several options: on a question with one correct option, that is no single choice.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evals_cli.errors import ConfigError
from evals_cli.graders.answer_text import normalize
from evals_cli.models.sample import Sample

LETTERS = string.ascii_uppercase
_ANSWER_LINE = re.compile(r"^[\s*_]*answer[\s*_]*:[\s*_]*\(?([A-Za-z](?:[\s,]+(?:and\s+)?[A-Za-z])*)\)?[\s*_]*\.?\s*$",
                          re.IGNORECASE | re.MULTILINE)
_BARE = re.compile(r"[\s*_().:]*([A-Za-z])[\s*_().:]*")
_LABEL = re.compile(r"[\s*_]*\(?([A-Z])[).:][*_]*\s+\S")
_ANSWER_TEXT = re.compile(r"^[\s*_]*answer[\s*_]*:[\s*_]*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_SAID = re.compile(r"(?i:\bthe\s+(?:correct\s+)?answer\s+is)\s*:?[\s*_]*\(?([A-Z])\)?[*_]*(?=\s*[.!,;)]|\s*$|\s)")


def letter(index: int) -> str:
    return LETTERS[index]


def options_text(choices: list[str]) -> str:
    """The options as the agent reads them: `A) ...` one per line."""
    return "\n".join(f"{letter(i)}) {choice}" for i, choice in enumerate(choices))


def letter_index(given: Any, count: int) -> int | None:
    """The option a ground-truth letter names (`B`, `b`: 1), None when it names none of `count`."""
    if not isinstance(given, str):
        return None
    text = given.strip().upper()
    if len(text) == 1 and text in LETTERS[:count]:
        return LETTERS.index(text)
    return None


def shown_order(sample_id: str, repeat: int, count: int) -> list[int]:
    """The options' order (indexes into the row's `choices`) shown in one repeat of one sample: drawn from a seed
    made of both, so every run shows the same order and each repeat its own."""
    seed = int.from_bytes(hashlib.sha256(f"{sample_id}\x00{repeat}".encode()).digest()[:8], "big")
    order = list(range(count))
    random.Random(seed).shuffle(order)
    return order


class ChoicePrompt:
    """What the suite's choice graders ask of the prompt: nothing when it has none; else each row with `choices`
    shown them, shuffled when the graders say `shuffle: true`. They must agree: all of them grade the one prompt."""

    def __init__(self, graders: Mapping[str, Any]) -> None:
        shuffles = {name: bool(getattr(g.spec, "shuffle", False)) for name, g in graders.items()
                    if getattr(g.spec, "kind", None) == "choice"}
        self.active = bool(shuffles)
        self.shuffle = any(shuffles.values())
        if self.shuffle and not all(shuffles.values()):
            on = ", ".join(n for n, s in shuffles.items() if s)
            off = ", ".join(n for n, s in shuffles.items() if not s)
            raise ConfigError(f"graders.{off.split(', ')[0]}.shuffle: the choice graders {on} shuffle the options "
                              f"and {off} do not, but they all grade the one prompt the agent saw; give every choice "
                              "grader the same shuffle")

    def shown(self, sample: Sample, repeat: int) -> Sample:
        """The sample the agent runs in this repeat: its options after its input, in the order shown, its
        ground-truth letter that of the same option in that order (itself without choices, or with no choice
        grader in the suite)."""
        choices = sample.choices
        if not self.active or not choices or not isinstance(sample.input, str):
            return sample
        order = shown_order(str(sample.id), repeat, len(choices)) if self.shuffle else list(range(len(choices)))
        options = [choices[i] for i in order]
        update: dict[str, Any] = {"choices": options, "input": f"{sample.input}\n\n{options_text(options)}"}
        correct = letter_index(sample.ground_truth, len(choices))
        if correct is not None:
            update["ground_truth"] = letter(order.index(correct))
        return sample.model_copy(update=update)


@dataclass(frozen=True)
class Pick:
    """What an answer chose: the option's index (None: no single option), the letters it named, and how it was
    read (`ANSWER: line`, `letter`, `label`, `the answer is`, `option text`)."""

    index: int | None
    letters: tuple[str, ...] = ()
    how: str = ""


def chosen(answer: str, choices: list[str]) -> Pick:
    """The option `answer` chose among `choices` (see the module's docstring for the forms read)."""
    lines = _ANSWER_LINE.findall(answer)
    if lines:
        named = tuple(dict.fromkeys(ch.upper() for ch in re.findall(r"[A-Za-z]+", lines[-1]) if ch.lower() != "and"))
        single = len(named) == 1 and len(named[0]) == 1
        return Pick(_index(named[0], len(choices)) if single else None, named, "ANSWER: line")
    for pattern, how in ((_BARE, "letter"), (_LABEL, "label"), (_SAID, "the answer is")):
        found = pattern.fullmatch(answer) if pattern is _BARE else pattern.match(answer)
        if found is None and pattern is _SAID:
            found = pattern.search(answer)
        if found is not None:
            return Pick(_index(found.group(1).upper(), len(choices)), (found.group(1).upper(),), how)
    stated = _ANSWER_TEXT.findall(answer)
    for text in (answer, *stated[-1:]):  # the whole answer, or what its last `Answer: ...` line says
        said = normalize(text)
        matches = [i for i, choice in enumerate(choices) if said and normalize(choice) == said]
        if len(matches) == 1:
            return Pick(matches[0], (letter(matches[0]),), "option text")
    return Pick(None)


def _index(named: str, count: int) -> int | None:
    return LETTERS.index(named) if len(named) == 1 and named in LETTERS[:count] else None
