"""The `watch:` block of a watch suite: how live traffic is sampled, bounded, windowed and gated.

Durations are written as a number of seconds or with a unit (`250ms`, `10s`, `5m`, `1h`, `1d`), so that a
window of an hour reads `1h` in the suite and 3600.0 here.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from evals_cli.models.base import StrictModel

_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)?\s*")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def seconds(value: Any, field: str) -> float:
    """A duration in seconds: a number, or a string such as `10s`, `5m`, `1h`."""
    if isinstance(value, bool):
        raise ValueError(f"{field}: {value!r} is not a duration (write e.g. 10s, 5m, 1h)")
    if isinstance(value, int | float):
        number = float(value)
    else:
        match = _DURATION.fullmatch(str(value))
        if match is None:
            raise ValueError(f"{field}: {value!r} is not a duration (write e.g. 250ms, 10s, 5m, 1h)")
        number = float(match.group(1)) * _UNIT[match.group(2)]
    if number <= 0:
        raise ValueError(f"{field}: {value!r} must be more than zero")
    return number


class GateWindow(StrictModel):
    """Which graded conversations the rolling gate reads: those of the last `duration`, at most the last `last`."""

    duration: float | None = Field(default=3600.0, description="The window's length (e.g. 1h, 15m); null: no "
                                   "time bound (then `last` must be set).")
    last: int | None = Field(default=None, ge=1, description="At most the last N graded conversations.")
    min_samples: int = Field(default=20, ge=1, description="Fewer graded conversations than this in the window: "
                             "no verdict yet (the gate is `pending`, never a pass or a fail).")

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float | None:
        return None if value is None else seconds(value, "window.duration")


class WatchSpec(StrictModel):
    """How `evals watch` takes live traffic: sampling, bounds, windows, the rolling gate and alerts."""

    sample: float = Field(default=1.0, ge=0.0, le=1.0, description="Share of finished conversations graded, "
                          "chosen by trace id (every replica chooses the same ones); the rest are counted.")
    quiet: float = Field(default=10.0, description="A conversation is finished this long after its root span "
                         "ended with no new span (e.g. 10s, 200ms).")
    max_age: float = Field(default=600.0, description="A conversation is finished this long after its first span "
                           "whatever its root span did (its result says it was cut at max_age).")
    max_judge_calls_per_minute: int | None = Field(default=None, ge=1, description="Judge calls a minute at most; "
                                                   "a conversation over it is not graded, and counted.")
    max_cost_per_hour: float | None = Field(default=None, gt=0, description="Spend (suite pricing) an hour at "
                                            "most; a conversation over it is not graded, and counted.")
    queue: int = Field(default=1000, ge=1, description="Finished conversations waiting to be graded; past it the "
                       "newest are shed, and counted.")
    max_spans: int = Field(default=200_000, ge=1, description="Spans held for conversations not finished yet; "
                           "past it the oldest conversation is shed, and counted.")
    concurrency: int = Field(default=8, ge=1, description="Conversations graded at once.")
    rotate: float = Field(default=3600.0, description="A results window closes after this long (e.g. 1h).")
    rotate_results: int = Field(default=100_000, ge=1, description="A results window closes after this many results.")
    window: GateWindow = Field(default_factory=GateWindow, description="The rolling gate's window.")
    evaluate_every: float = Field(default=5.0, description="How often the rolling gate is decided (and alerts sent).")
    webhook: str | None = Field(default=None, description="URL POSTed a JSON alert (the window's gate and the "
                                "failing conversations' ids) when the rolling gate fails.")
    export: str | None = Field(default=None, description="OTLP/HTTP endpoint (e.g. http://collector:4318) the "
                               "grades are sent to as spans with gen_ai.evaluation.result events, in the "
                               "conversation's trace.")
    replica: str | None = Field(default=None, description="This replica's name, the subfolder of -o it writes "
                                "(default: $HOSTNAME, else `watch`): replicas share one folder.")

    @field_validator("quiet", "max_age", "rotate", "evaluate_every", mode="before")
    @classmethod
    def _durations(cls, value: Any, info: Any) -> float:
        return seconds(value, str(info.field_name))
