"""Text written to fit a terminal: a line shortened at a word boundary (`fit`), a paragraph in a few lines
(`wrap`, `wrap_with_tail`), and a score as every view writes it (`score_text`).

Apart from the views because each of them (the samples table, the reasons under it, the models side by side)
cuts text the same way: nothing is cut mid-word, and what was cut ends in `…`.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size


def score_text(score: float | None) -> str:
    """A score in two decimals; `—` when there is none."""
    return "—" if score is None else f"{score:.2f}"


def fit(text: str, width: int) -> str:
    """`text` in at most `width` cells, shortened at a word boundary with `…` (mid-word only for one long word)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    cut = set_cell_size(text, width)
    space = cut.rfind(" ")
    if space > 0:  # at the last word boundary that fits; inside a word only when the first word is too long
        cut = cut[:space]
    else:
        cut = cut[:-1]
    return cut.rstrip(" ,;:") + "…"


def wrap(text: str, width: int, max_lines: int = 2) -> list[str]:
    """`text` in at most `max_lines` lines of `width` cells, broken between words; what does not fit is cut at a
    word boundary with `…` (a single word longer than a line is the only thing ever cut inside)."""
    width = max(width, 8)
    lines: list[str] = []
    rest = " ".join(text.split())
    while rest and len(lines) < max_lines:
        if cell_len(rest) <= width:
            lines.append(rest)
            rest = ""
            break
        if len(lines) == max_lines - 1:
            lines.append(fit(rest, width))
            rest = ""
            break
        cut = set_cell_size(rest, width + 1)
        space = cut.rfind(" ")
        if space <= 0:  # one word longer than the line
            head = set_cell_size(rest, width)
            lines.append(head)
            rest = rest[len(head):].lstrip()
        else:
            lines.append(rest[:space].rstrip())
            rest = rest[space + 1:].lstrip()
    return lines


def wrap_with_tail(text: str, tail: str, width: int, max_lines: int) -> tuple[list[str], bool]:
    """`text` then `tail` (a list of sample ids) in about `max_lines` lines of `width`, the tail never cut: when
    both do not fit, the text gets all but one line (shortened at a word boundary) and the tail the next ones.
    Also whether the text was cut."""
    whole = wrap(f"{text} {tail}", width, max_lines=1_000)
    if len(whole) <= max_lines:
        return whole, False
    lines = wrap(text, width, max_lines=max(max_lines - 1, 1))
    return lines + wrap(tail, width, max_lines=1_000), lines[-1].endswith("…") and not text.endswith("…")
