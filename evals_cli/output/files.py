"""Where a run's files live and how they are written (appended and flushed per sample) and read back."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from evals_cli.errors import ConfigError, refuse_newer
from evals_cli.models.results import RunSummary, SampleResult
from evals_cli.text_caps import MAX_LINE_BYTES, cap_result, clean_text, max_field_chars

RecordT = TypeVar("RecordT", bound=BaseModel)
ModelT = TypeVar("ModelT", bound=BaseModel)

RESULTS_NAME = "results.jsonl"
SUMMARY_NAME = "summary.json"


def default_output_dir(suite_name: str, root: Path = Path("results")) -> Path:
    """A new folder `<suite>-<time>`, created here: two runs of one suite started in the same second (parallel CI
    jobs, test workers) each get their own (`-2`, `-3`, ...) instead of appending to one results file."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", suite_name).strip("-") or "suite"
    stem = f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}"
    root.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 1000):
        candidate = root / (stem if attempt == 1 else f"{stem}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(f"{root}: no free folder name for {stem}; pass -o DIR")


class ResultsWriter:
    """Appends one line per finished sample and flushes it, so a killed run keeps every finished sample. A result
    is written as it is given: whoever produced it has already reduced its final state changes to what is stored
    of them (environment/excerpts.py), after the graders read them whole."""

    def __init__(self, directory: Path, redact: Callable[[str], str] | None = None) -> None:
        """`redact` (the run's Redactor) masks every line and the summary as written: a model or a server can
        echo a key into any field, so masking the serialised text is the one place that catches them all."""
        directory.mkdir(parents=True, exist_ok=True)
        self.redact = redact or (lambda text: text)
        self.directory = directory
        self.path = directory / RESULTS_NAME
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, result: SampleResult) -> None:
        line = _dump(result)
        if len(line) > max_field_chars():  # no field is longer than its line: cap (in place) only when one may be
            line = _within_bound(result, _dump(cap_result(result)))
        self._fh.write(self.redact(line) + "\n")
        self._fh.flush()

    def write_summary(self, summary: RunSummary) -> Path:
        path = self.directory / SUMMARY_NAME
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(self.redact(summary.model_dump_json(indent=2)), encoding="utf-8")
        tmp.replace(path)
        return path

    def close(self) -> None:
        self._fh.close()


_SMALLEST_FIELD = 256  # characters a field keeps however far a line must shrink (its marker says how many it had)


def _within_bound(result: SampleResult, line: str) -> str:
    """The line cut (in place) until it fits MAX_LINE_BYTES: every text field to a quarter of the cap, then a
    quarter of that, ... A sample of many large tool calls (44 calls of 200,000 characters each, twice over as
    raw and parsed arguments) passes every per-field cap and still writes megabytes."""
    limit = max_field_chars()
    bound = max(MAX_LINE_BYTES, 4 * limit)  # a cap raised past a quarter of the bound raises the bound with it
    while limit > _SMALLEST_FIELD and len(line) > bound // 4 and len(line.encode()) > bound:
        limit = max(_SMALLEST_FIELD, limit // 4)
        line = _dump(cap_result(result, limit))
    return line


def _dump(result: SampleResult) -> str:
    """The result as one JSON line. A lone UTF-16 surrogate (a judge's or a custom grader's text; the targets
    already clean the agent's) cannot be encoded: it becomes U+FFFD rather than costing the sample its line."""
    try:
        return result.model_dump_json()
    except PydanticSerializationError:
        return clean_text(json.dumps(result.model_dump(mode="json"), ensure_ascii=False)) or ""


def results_path(target: Path) -> Path:
    """Accept a results file or the run folder holding it."""
    return target / RESULTS_NAME if target.is_dir() else target


def read_records(target: Path, model: type[RecordT], what: str, warnings: list[str] | None = None) -> Iterator[RecordT]:
    """A run's results lines as `model`, lazily (sample results, or a sessions run's analyses). Only a last line
    that is not whole JSON is torn (a run killed while writing): a warning, not fatal; a whole JSON line that is
    not a `what` is an error naming its line."""
    path = results_path(target)
    if not path.is_file():
        raise ConfigError(f"{path}: no results file; give a results.jsonl or the run folder that holds it")
    with path.open(encoding="utf-8", errors="replace") as fh:
        pending: tuple[int, str] | None = None
        for number, line in enumerate(fh, 1):
            if pending is not None:
                raise ConfigError(f"{path}:{pending[0]}: not a {what}: {pending[1]}")
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError as exc:  # torn only if it is the last line: a killed run's half-written line
                pending = (number, str(exc).splitlines()[0][:200])
                continue
            refuse_newer(data, newest_version(model), f"{path}:{number}", what)
            try:
                yield model.model_validate(data)
            except ValidationError as exc:  # whole JSON, but not this kind of line (another run kind's, say)
                raise ConfigError(f"{path}:{number}: not a {what}: {str(exc).splitlines()[0][:200]}") from None
        if pending is not None and warnings is not None:
            warnings.append(f"{path}:{pending[0]}: torn last line ignored (the run was killed while writing)")


def read_results(target: Path, warnings: list[str] | None = None) -> Iterator[SampleResult]:
    """Results lines, lazily. A torn last line (a killed run) is reported in `warnings`, not fatal."""
    return read_records(target, SampleResult, "results line", warnings)


def read_summary(target: Path) -> RunSummary | None:
    path = (target if target.is_dir() else target.parent) / SUMMARY_NAME
    if not path.is_file():
        return None
    return read_versioned(path, RunSummary, "summary")


def newest_version(model: type[BaseModel]) -> int:
    """The schema_version this evals-cli writes for `model` (its field's default)."""
    default = model.model_fields["schema_version"].default
    assert isinstance(default, int), model
    return default


def read_versioned(path: Path, model: type[ModelT], what: str) -> ModelT | None:
    """A JSON file of `model`; None when it cannot be read as one (callers rebuild or say so), a ConfigError when
    a newer evals-cli wrote it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    refuse_newer(data, newest_version(model), str(path), what)
    try:
        return model.model_validate(data)
    except ValidationError:
        return None
