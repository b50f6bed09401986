"""The exporter contract and its registry: a format is one module of this package that registers one function::

    @EXPORTERS.register("junit")
    def export_junit(run: FinishedRun, path: Path) -> None: ...

`export_run` (evals_cli/exporters/__init__.py) looks formats up here, so adding a format touches no CLI code,
import list or if/elif: its module, its test, and a row in the README's table of formats.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.output.files import read_results
from evals_cli.registry import Registry


@dataclass(frozen=True)
class FinishedRun:
    """A finished run as every exporter reads it: results read back from the run folder (so exporting right
    after `evals run` and later, from a folder, is the same code), the summary for run-level numbers, and the
    per-sample pass value that formats blaming graders compare scores with."""

    run_dir: Path
    summary: RunSummary
    threshold: float = 1.0

    def results(self) -> Iterator[SampleResult]:
        """The run's results, lazily (a fresh pass each call: a run can be larger than memory)."""
        return read_results(self.run_dir)


class Exporter(Protocol):
    """Writes one format of a finished run to `path` (its folder created by the exporter, see common.prepare)."""

    def __call__(self, run: FinishedRun, path: Path) -> object: ...


EXPORTERS: Registry[Exporter] = Registry("exporter", "evals_cli.exporters")
