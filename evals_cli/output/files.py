"""Where a run's files live and how they are written (appended and flushed per sample) and read back."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from evals_cli.errors import ConfigError
from evals_cli.models.results import RunSummary, SampleResult

RESULTS_NAME = "results.jsonl"
SUMMARY_NAME = "summary.json"


def default_output_dir(suite_name: str, root: Path = Path("results")) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", suite_name).strip("-") or "suite"
    return root / f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}"


class ResultsWriter:
    """Appends one line per finished sample and flushes it, so a killed run keeps every finished sample."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.path = directory / RESULTS_NAME
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, result: SampleResult) -> None:
        self._fh.write(result.model_dump_json() + "\n")
        self._fh.flush()

    def write_summary(self, summary: RunSummary) -> Path:
        path = self.directory / SUMMARY_NAME
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(summary.model_dump_json(indent=2), encoding="utf-8")
        tmp.replace(path)
        return path

    def close(self) -> None:
        self._fh.close()


def results_path(target: Path) -> Path:
    """Accept a results file or the run folder holding it."""
    return target / RESULTS_NAME if target.is_dir() else target


def read_results(target: Path, warnings: list[str] | None = None) -> Iterator[SampleResult]:
    """Results lines, lazily. A torn last line (a killed run) is reported in `warnings`, not fatal."""
    path = results_path(target)
    if not path.is_file():
        raise ConfigError(f"{path}: no results file; give a results.jsonl or the run folder that holds it")
    with path.open(encoding="utf-8", errors="replace") as fh:
        pending: tuple[int, str] | None = None
        for number, line in enumerate(fh, 1):
            if pending is not None:
                raise ConfigError(f"{path}:{pending[0]}: not a results line: {pending[1]}")
            if not line.strip():
                continue
            try:
                yield SampleResult.model_validate(json.loads(line))
            except (ValueError, ValidationError) as exc:
                pending = (number, str(exc).splitlines()[0][:200])
        if pending is not None:
            if warnings is not None:
                warnings.append(f"{path}:{pending[0]}: torn last line ignored (the run was killed while writing)")


def read_summary(target: Path) -> RunSummary | None:
    path = (target if target.is_dir() else target.parent) / SUMMARY_NAME
    if not path.is_file():
        return None
    try:
        return RunSummary.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError:
        return None
