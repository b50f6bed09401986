"""Results as they come: a run folder per window (run.json, results.jsonl appended and flushed per result,
summary.json when the window closes), rotated by time or by count, under `-o DIR/<replica>/`.

Each window is an ordinary run folder, so `evals view DIR` lists the open one as a run in flight and the closed
ones with their verdicts, `evals report` reads any of them, and `evals merge` joins windows and replicas (they
share one suite fingerprint; replicas grade disjoint traces, chosen by trace id upstream). A restart reads what
is on disk: a window a killed process left open gets its summary from its results, and every trace already
graded is skipped (the last 20,000, recent.py), so nothing is graded twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from evals_cli.endpoints.secrets import Redactor
from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.output.exit_codes import exit_code_for
from evals_cli.output.files import RESULTS_NAME, SUMMARY_NAME, ResultsWriter, read_results
from evals_cli.output.manifest import Manifest, write_manifest
from evals_cli.output.summary import Accumulator
from evals_cli.watch.recent import Recent
from evals_cli.watch.tags import TRACE_TAG

MakeAccumulator = Callable[[], Accumulator]
def trace_of(result: SampleResult) -> str | None:
    """The trace a result was graded from (its `trace:` tag)."""
    return next((t.removeprefix(TRACE_TAG) for t in result.tags if t.startswith(TRACE_TAG)), None)


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y%m%dT%H%M%S")


class Windows:
    """The replica's windows: the open one written to, the closed ones summarised."""

    def __init__(self, root: Path, manifest: Manifest, accumulator: MakeAccumulator, *, rotate_s: float,
                 rotate_results: int, redact: Redactor, max_error_rate: float = 1.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.root, self.manifest, self.accumulator = root, manifest, accumulator
        self.rotate_s, self.rotate_results, self.redact = rotate_s, rotate_results, redact
        self.max_error_rate, self.clock = max_error_rate, clock
        self.graded_traces = Recent()  # a restart skips these (a retrying exporter sends a batch again)
        self.sample_ids = Recent()  # a conversation id over several traces: each later one suffixed
        self.closed = 0
        self._writer: ResultsWriter | None = None
        self._acc: Accumulator | None = None
        self._opened = 0.0
        self._started_at = ""
        self._count = 0

    def resume(self) -> int:
        """Close what a killed process left open and learn what was graded; the results found."""
        found = 0
        for folder in sorted(p.parent for p in self.root.glob(f"*/{RESULTS_NAME}")):
            acc = self.accumulator()
            for result in read_results(folder):
                found += 1
                acc.add(result)
                self.sample_ids.add(result.sample_id)
                trace = trace_of(result)
                if trace is not None:
                    self.graded_traces.add(trace)
            if not (folder / SUMMARY_NAME).is_file():
                self._summarise(folder, acc, "", "interrupted", "the watch process stopped before it closed this "
                                "window; summarised from its results on restart")
        return found

    @property
    def current(self) -> Path | None:
        return self._writer.directory if self._writer is not None else None

    def write(self, result: SampleResult) -> None:
        if self._writer is not None and (self._count >= self.rotate_results
                                         or self.clock() - self._opened >= self.rotate_s):
            self.close()
        if self._writer is None:
            self._open()
        assert self._writer is not None and self._acc is not None
        if result.sample_id in self.sample_ids:  # one conversation id over several traces: each its own sample
            # (replicas do not know each other's ids: `evals merge` refuses one id graded by two, naming both)
            suffix = trace_of(result) or str(self._count)
            result.sample_id = f"{result.sample_id}~{suffix[:16]}"
        self.sample_ids.add(result.sample_id)
        self._writer.write(result)
        self._acc.add(result)
        self._count += 1
        trace = trace_of(result)
        if trace is not None:
            self.graded_traces.add(trace)

    def _open(self) -> None:
        self._opened = self.clock()
        self._started_at = datetime.fromtimestamp(self._opened, UTC).isoformat(timespec="seconds")
        folder = self.root / f"window-{_stamp(self._opened)}"
        n = 1
        while folder.exists():
            n += 1
            folder = self.root / f"window-{_stamp(self._opened)}-{n}"
        write_manifest(folder, self.manifest)
        self._writer = ResultsWriter(folder, self.redact)
        self._acc = self.accumulator()
        self._count = 0

    def close(self, status: str = "completed", reason: str | None = None) -> RunSummary | None:
        """Close the open window (its summary written); None when none is open."""
        if self._writer is None or self._acc is None:
            return None
        folder, acc = self._writer.directory, self._acc
        self._writer.close()
        self._writer = self._acc = None
        self.closed += 1
        return self._summarise(folder, acc, self._started_at, status, reason)

    def _summarise(self, folder: Path, acc: Accumulator, started_at: str, status: str,
                   reason: str | None) -> RunSummary:
        summary = acc.summary()
        summary.started_at = started_at
        summary.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        summary.status = status  # type: ignore[assignment]
        summary.abort_reason = reason
        summary.exit_code = exit_code_for(summary, self.max_error_rate)
        path = folder / SUMMARY_NAME
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.redact(summary.model_dump_json(indent=2)), encoding="utf-8")
        tmp.replace(path)  # whole or not at all: a reader never sees half a summary
        return summary
