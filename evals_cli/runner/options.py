"""What a caller (the CLI or Python) can say about one run, and what it gets back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals_cli.models.results import RunSummary, SampleResult

ResultCallback = Callable[[SampleResult], None]


@dataclass
class RunOptions:
    """Everything the CLI can override; None means 'as the suite says'."""

    output: Path | None = None
    concurrency: int | None = None
    max_samples: int | None = None
    tags: list[str] | None = None
    repeats: int | None = None
    no_judge: bool = False
    record: Path | None = None
    replay: Path | None = None
    base_url: str | None = None
    model: str | None = None
    timeout: float | None = None
    sample_timeout: float | None = None
    max_retries: int | None = None
    max_error_rate: float = 0.2
    resume: Path | None = None
    retry_errors: bool = False
    grace_s: float = 10.0
    shard: str | None = None  # "K/N": run only the K-th of N stable parts of the samples
    otel: bool = False  # or OTEL_EXPORTER_OTLP_ENDPOINT set
    tracer_provider: Any = None  # an OpenTelemetry TracerProvider to use instead of OTLP (tests)
    precheck: bool = True


@dataclass
class RunOutcome:
    summary: RunSummary
    output_dir: Path
    exit_code: int
    messages: list[str] = field(default_factory=list)
