"""/metrics in the Prometheus text exposition format (version 0.0.4), written here: the format is a few lines of
text, and the runtime need not depend on a client library (the tests read it with prometheus_client's parser).

A value that is not known (the rolling gate with no verdict yet) is left out, never written as a zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "evals_watch_"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


@dataclass
class _Family:
    kind: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)


class Exposition:
    """Metric families in the order first named; each sample once per label set."""

    def __init__(self) -> None:
        self._families: dict[str, _Family] = {}

    def add(self, name: str, kind: str, help_text: str, value: float | None,
            labels: Mapping[str, str] | None = None) -> None:
        family = self._families.setdefault(PREFIX + name, _Family(kind, help_text))
        if value is not None:
            family.samples.append((dict(labels or {}), float(value)))

    def counter(self, name: str, help_text: str, value: float | None, **labels: str) -> None:
        """A counter, named `..._total` as Prometheus names counters."""
        self.add(name, "counter", help_text, value, labels)

    def gauge(self, name: str, help_text: str, value: float | None, **labels: str) -> None:
        self.add(name, "gauge", help_text, value, labels)

    def text(self) -> str:
        lines: list[str] = []
        for name, family in self._families.items():
            lines.append(f"# HELP {name} {_escape(family.help)}")
            lines.append(f"# TYPE {name} {family.kind}")
            for labels, value in family.samples:
                shown = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
                lines.append(f"{name}{{{shown}}} {_number(value)}" if shown else f"{name} {_number(value)}")
        return "\n".join(lines) + "\n"
