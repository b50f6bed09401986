"""A run and a suite's trend as the history shows them: what `evals history` prints and `evals view` serves,
apart from how they are read off disk (runs.py), so the pages and the terminal table need only these."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

RunKind = Literal["run", "models", "sessions"]
Status = Literal["completed", "aborted", "interrupted", "running", "stopped"]
GateWord = Literal["PASSED", "FAILED", "not evaluated", "running", "stopped"]


@dataclass
class ModelLine:
    """One model of a run over several models, as the history shows it."""

    model: str
    folder: str
    pass_rate: float | None
    passed: int
    graded: int
    gate: GateWord
    cost: float | None
    endpoint: str | None = None


@dataclass
class RunEntry:
    """One run, as its folder tells it. `rel` (the folder relative to the results folder, with `/`) names it in
    the history and in the viewer's addresses."""

    path: Path
    rel: str
    kind: RunKind
    suite: str
    started: datetime
    status: Status
    gate: GateWord
    models: list[str] = field(default_factory=list)
    passed: int = 0
    failed: int = 0
    errored: int = 0
    total: int = 0
    cost: float | None = None
    exit_code: int | None = None
    detail: str = ""
    per_model: list[ModelLine] = field(default_factory=list)
    subset: str = ""  # which samples, when not the whole dataset ("-n 3", "tags: smoke"): trends keep them apart
    marks: list[str] = field(default_factory=list)  # how the run got its answers, when not live: replayed, cached,
    # no judge (see runs.run_marks)

    @property
    def pass_rate(self) -> float | None:
        """Passed of the samples graded; errored samples are counted apart, never as failures."""
        graded = self.passed + self.failed
        return self.passed / graded if graded else None

    @property
    def in_flight(self) -> bool:
        return self.status == "running"

    def as_json(self) -> dict[str, object]:
        return {"run": self.rel, "kind": self.kind, "suite": self.suite, "started_at": self.started.isoformat(),
                "status": self.status, "gate": self.gate, "exit_code": self.exit_code, "models": self.models,
                "pass_rate": self.pass_rate, "passed": self.passed, "failed": self.failed, "errored": self.errored,
                "total": self.total, "cost": self.cost, "detail": self.detail, "subset": self.subset,
                "marks": self.marks,
                "per_model": [vars(m) for m in self.per_model]}


@dataclass
class TrendPoint:
    run: str
    started: datetime
    pass_rate: float
    gate: GateWord


@dataclass
class Trend:
    """A suite's pass rate over its last completed runs, oldest first (per model: a model's runs are its own)."""

    suite: str
    model: str
    runs: int
    points: list[TrendPoint]
    subset: str = ""

    @property
    def change(self) -> float | None:
        """The last pass rate minus the one before it (None with one run)."""
        return self.points[-1].pass_rate - self.points[-2].pass_rate if len(self.points) > 1 else None


def trends(entries: list[RunEntry], last: int = 8) -> list[Trend]:
    """Per suite (and model, and sample selection), the pass rate of its last `last` completed runs, oldest first.
    Runs in flight, stopped or aborted are left out (their pass rate is over the samples that happened to finish),
    and a run over part of the dataset (-n, --tag, --sample-id, --shard) is a series of its own: a trend must
    compare like with like."""
    series: dict[tuple[str, str, str], list[TrendPoint]] = {}
    for entry in sorted(entries, key=lambda e: (e.started, e.rel)):
        if entry.status != "completed":
            continue
        if entry.kind == "models":
            for line in entry.per_model:
                if line.pass_rate is not None and line.gate in ("PASSED", "FAILED"):
                    series.setdefault((entry.suite, line.model, entry.subset), []).append(
                        TrendPoint(f"{entry.rel}/{line.folder}", entry.started, line.pass_rate, line.gate))
        elif entry.kind == "run" and entry.pass_rate is not None and entry.gate in ("PASSED", "FAILED"):
            model = entry.models[0] if entry.models else ""
            series.setdefault((entry.suite, model, entry.subset), []).append(
                TrendPoint(entry.rel, entry.started, entry.pass_rate, entry.gate))
    found = [Trend(suite, model, len(points), points[-last:], subset)
             for (suite, model, subset), points in series.items()]
    return sorted(found, key=lambda t: (t.suite, t.model, t.subset))


SPARKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """Pass rates (0..1) as block characters: the level is the rate itself, not scaled to the series, so 90%
    → 95% does not look like a leap."""
    return "".join(SPARKS[min(int(v * len(SPARKS)), len(SPARKS) - 1)] for v in values)
