"""How a measured value meets a threshold, and how an undecided verdict is worded: below the gate, so the summary,
the exit code and every view (terminal, HTML, sessions) compare and word alike without standing on the gate's
machinery (graders, custom rewards)."""

from __future__ import annotations

from collections.abc import Callable

EPS = 1e-9  # averages of 0.7s land on 0.69999...: compare as a person reading the table would
OPS: dict[str, Callable[[float, float], bool]] = {
    "gt": lambda a, b: a > b + EPS, "gte": lambda a, b: a >= b - EPS,
    "lt": lambda a, b: a < b - EPS, "lte": lambda a, b: a <= b + EPS,
    "eq": lambda a, b: abs(a - b) <= EPS,
}
SYMBOLS = {"gt": ">", "gte": "≥", "lt": "<", "lte": "≤", "eq": "="}
# how an undecided gate's message begins (runs and sessions alike): the exit code reads the reason after it
UNDECIDED = "Gate could not be evaluated: "
# how the abort reason of a run whose gate could not be evaluated begins
GATE_UNDECIDED = "the gate could not be evaluated"
