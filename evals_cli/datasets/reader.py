"""Stream samples from a dataset file without loading it: JSONL line by line, CSV record by record (JSON arrays
are small, loaded). letta-evals' row spellings (`rubric_path`, `extra_vars`, `sample_id`) are mapped onto ours
here, in every format, so that its datasets load as they are."""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evals_cli.datasets.csv_rows import iter_csv
from evals_cli.datasets.jsonl import BOM, iter_jsonl, json_problem
from evals_cli.datasets.tutorial import is_tutorial_item, tutorial_to_sample
from evals_cli.errors import ConfigError
from evals_cli.models.sample import Sample
from evals_cli.suite.problems import clip, format_validation_error

_TRACE_MARKER = re.compile(rb'"resourceSpans"|"object"\s*:\s*"trace(?:\.span)?"')


def _is_traces(path: Path, fill: RowFill | None) -> bool:
    """Whether the dataset is a trace file, read one row per conversation: always for the file a traces target
    reads (the fill's owner names it), else when its content as a whole is traces (`is_trace_file`: past a broken
    or foreign first line). The traces reader is imported only for a file where some line names a trace's key:
    a JSONL dataset, the common case, costs no import of it."""
    owner = getattr(fill, "__self__", None)
    if getattr(owner, "trace_file", None) == path.resolve():
        return True
    with path.open("rb") as fh:
        if not any(_TRACE_MARKER.search(raw) for raw in fh):
            return False
    from evals_cli.traces.files import is_trace_file

    return is_trace_file(path)


def _read_by_target(path: Path, fill: RowFill | None) -> Iterable[tuple[str, Sample | list[str]]] | None:
    """The rows of a dataset the target reads itself: the file it names (`dataset_file`), read by its
    `read_dataset` ("file:line", a Sample or its problems); None for any other file."""
    owner = getattr(fill, "__self__", None)
    read = getattr(owner, "read_dataset", None)
    if read is None or getattr(owner, "dataset_file", None) != path.resolve():
        return None
    rows: Iterable[tuple[str, Sample | list[str]]] = read(path)
    return rows


def _first_char(path: Path) -> str:
    with path.open("rb") as fh:
        first = True
        while chunk := fh.read(4096):
            if first and chunk.startswith(BOM):  # editors on Windows write one; the suite reader accepts it too
                chunk = chunk[len(BOM):]
            first = False
            stripped = chunk.lstrip()
            if stripped:
                return chr(stripped[0])
    return ""


def _load_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity (not JSON; they compare false with everything)."""
    return json.loads(text, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value; write a number, a string or null")


def _lone_surrogate(value: Any, path: str = "") -> str | None:
    """The field holding a lone UTF-16 surrogate (`"\\ud800"` in JSON): Python reads it, but it cannot be
    written back as UTF-8, so such a row would vanish from the results instead of being graded."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "(row)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _lone_surrogate(key, path or "(key)") if isinstance(key, str) else None
            found = found or _lone_surrogate(item, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, f"{path}[{i}]")
            if found:
                return found
    return None


def _row_problem(raw: Any, where: str) -> str | None:
    """What makes a parsed row unusable before its fields are checked: lone surrogates, an id that is null,
    not finite, or not a string/number."""
    try:
        bad = _lone_surrogate(raw)
    except RecursionError:
        return f"{where}: the JSON is nested too deeply to read; flatten it"
    if bad is not None:
        return (f"{where}: {bad}: holds a lone UTF-16 surrogate (such as \\ud800), which is not valid text; "
                "fix the escape sequence or remove it")
    if isinstance(raw, dict) and "id" in raw:
        sid = raw["id"]
        if sid is None:
            return f"{where}: id: is null; give the sample a string id, or leave 'id' out to get one from the line"
        if isinstance(sid, bool) or not isinstance(sid, str | int | float):
            return f"{where}: id: expected a string or a number, got {type(sid).__name__}"
        if isinstance(sid, str) and not sid.strip():
            return f"{where}: id: is empty; give the sample a non-empty id, or leave 'id' out"
    return None


def _sample_id(raw: Any, where: str) -> str | None:
    """letta-evals' `sample_id` is our `id` (renamed before the id is checked or defaulted)."""
    if isinstance(raw, dict) and "sample_id" in raw:
        if "id" in raw:
            return f"{where}: give the id as id or sample_id (letta-evals), not both"
        raw["id"] = raw.pop("sample_id")
    return None


def _letta_fields(raw: dict[str, Any]) -> str | None:
    """letta-evals' row fields, renamed in place (None) or the problem with them:
    `rubric_path` (a rubric file relative to the suite) is our `rubric` naming a file, checked to stay inside the
    suite's folder as every row rubric file is; `extra_vars` (variables for custom code) is carried as
    `metadata.extra_vars`. (`sample_id` is renamed before, with the id checks: `_sample_id`.)"""
    if "rubric_path" in raw:
        from evals_cli.graders.rubric import row_rubric_is_path

        path = raw.pop("rubric_path")
        if path is None:
            pass
        elif "rubric" in raw and raw["rubric"] is not None:
            return "rubric_path: give rubric (text or a file) or rubric_path (letta-evals), not both"
        elif not isinstance(path, str) or not path.strip():
            return "rubric_path: expected the path of a rubric file, relative to the suite"
        else:
            path = path.strip()
            reference = path if row_rubric_is_path(path) or path.startswith("builtin:") else f"./{path}"
            if not row_rubric_is_path(reference):
                return (f"rubric_path: {clip(path)!r} cannot be told from rubric text (a path with spaces); "
                        "name the file .txt, .md, .j2 or .jinja")
            raw["rubric"] = reference
    if "extra_vars" in raw:
        extra = raw.pop("extra_vars")
        if extra is not None:
            metadata = raw.setdefault("metadata", {})
            if not isinstance(metadata, dict):
                return "metadata: expected an object"
            if "extra_vars" in metadata:
                return "give extra_vars or metadata.extra_vars, not both"
            metadata["extra_vars"] = extra
    return None


RowFill = Callable[[dict[str, Any]], dict[str, Any]]
"""What a target adds to a row before it is validated (a traces target fills `input` from the conversation)."""


def _validate(raw: Any, where: str, fill: RowFill | None = None) -> Sample | list[str]:
    if fill is not None and isinstance(raw, dict):
        raw = fill(raw)
    if not isinstance(raw, dict):
        return [f"{where}: expected a JSON object with 'input', got {type(raw).__name__}"]
    problem = _letta_fields(raw)
    if problem is not None:
        sid = raw.get("id")
        named = f"{where}: sample {clip(repr(sid))}" if sid is not None else where
        return [f"{named}: {problem}"]
    try:
        return Sample.model_validate(raw)
    except ValidationError as exc:
        sid = raw.get("id")
        named = f"{where}: sample {clip(repr(sid))}" if sid is not None else where
        return format_validation_error(exc, Sample, named)


Span = tuple[int, int, int]
"""Where a JSONL row is in its file: (byte offset, byte length, line number); see `span_row`."""

Seen = Callable[[bytes, int], None]


def iter_rows(path: Path, fill: RowFill | None = None) -> Iterator[tuple[str, int, Sample | list[str]]]:
    """(location, default id number, Sample or its problems) for every row, lazily."""
    for where, number, row, _ in rows_with_spans(path, fill=fill):
        yield where, number, row


def rows_with_spans(path: Path, seen: Seen | None = None,
                    fill: RowFill | None = None) -> Iterator[tuple[str, int, Sample | list[str], Span | None]]:
    """`iter_rows`, each row with its span in the file (JSONL only; None for CSV, JSON arrays and traces).
    `seen(raw bytes, offset)` hears every byte of the file as it is read (a digest of the file, taken on the same
    read). An OpenTelemetry trace file (OTLP/JSON) is one row per traced conversation (a traces suite without a
    dataset)."""
    own = _read_by_target(path, fill)
    if own is not None:  # a file the target reads itself (a recorded_session target's session file)
        for number, (where, row) in enumerate(own, 1):
            yield where, number, row, None
        if seen is not None:
            seen(path.read_bytes(), 0)
        return
    if not path.is_file():
        raise ConfigError(f"{path}: dataset not found; check 'dataset' in the suite (relative to the suite file)")
    if path.suffix.lower() == ".csv":
        for where, number, row in _iter_csv(path, seen, fill):
            yield where, number, row, None
        return
    if _first_char(path) == "[":
        for where, number, row in _iter_array(path, seen, fill):
            yield where, number, row, None
        return
    if _is_traces(path, fill):
        from evals_cli.traces.reader import dataset_rows

        if seen is not None:
            seen(path.read_bytes(), 0)
        for number, raw in enumerate(dataset_rows(path), 1):
            where = f"{path}: conversation {raw['id']!r}"
            yield where, number, _validate(raw, where), None
        return
    last = [0, 0]

    def at(raw_line: bytes, offset: int) -> None:
        last[0], last[1] = offset, len(raw_line)
        if seen is not None:
            seen(raw_line, offset)

    for where, number, raw, problem in iter_jsonl(path, unit="JSON object", utf8_fix="save as UTF-8",
                                                  loads=_load_json, skip_bom=True, seen=at):
        yield where, number, _jsonl_row(where, number, raw, problem, fill), (last[0], last[1], number)


def _jsonl_row(where: str, number: int, raw: Any, problem: str | None,
               fill: RowFill | None = None, checked: bool = False) -> Sample | list[str]:
    if problem is None:  # `_sample_id` renames letta-evals' sample_id: run on a checked row too
        problem = _sample_id(raw, where) or (None if checked else _row_problem(raw, where))
    if problem is not None:
        return [problem]
    if isinstance(raw, dict):
        raw["id"] = f"line-{number}" if "id" not in raw else _id_text(raw["id"])
    return _validate(raw, where, fill)


def span_row(path: Path, span: Span, raw_line: bytes, fill: RowFill | None = None, *, checked: bool = False) -> Sample:
    """The sample in `raw_line`, the bytes at `span` of the JSONL file `path`, read and checked again as the first
    read did (a ConfigError naming the line when it no longer holds a valid row: the file changed since).
    `checked`: they are the very bytes the check pass read and validated there (the caller compared them), so
    the row's checks are not run again, only its parse."""
    number = span[2]
    where = f"{path}:{number}"
    if number == 1 and raw_line.startswith(BOM):
        raw_line = raw_line[len(BOM):]
    try:
        raw, problem = _load_json(raw_line.decode("utf-8")), None
    except (ValueError, RecursionError) as exc:
        raw, problem = None, json_problem(exc, where, jsonl=True)
    row = _jsonl_row(where, number, raw, problem, fill, checked=checked)
    if isinstance(row, list):
        raise ConfigError([f"{p} (the file changed since it was checked)" for p in row])
    return row


def _iter_csv(path: Path, seen: Seen | None = None,
              fill: RowFill | None = None) -> Iterator[tuple[str, int, Sample | list[str]]]:
    for where, number, raw, problem in iter_csv(path, seen):
        if problem is None:
            problem = _row_problem(raw, where)
        if problem is not None or raw is None:
            yield where, number, [problem or f"{where}: unreadable record"]
            continue
        raw["id"] = f"row-{number}" if "id" not in raw else _id_text(raw["id"])
        yield where, number, _validate(raw, where, fill)


def _iter_array(path: Path, seen: Seen | None = None,
                fill: RowFill | None = None) -> Iterator[tuple[str, int, Sample | list[str]]]:
    data = path.read_bytes()
    if seen is not None:
        seen(data, 0)
    try:
        items = _load_json(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8; save the file as UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(json_problem(exc, f"{path}", jsonl=False).replace("invalid JSON", "invalid JSON array")) \
            from None
    if not isinstance(items, list):
        raise ConfigError(f"{path}: expected a JSON array of samples")
    for index, item in enumerate(items):
        where = f"{path}: item {index + 1}"
        problem = _sample_id(item, where) or _row_problem(item, where)
        if problem is not None:
            yield where, index + 1, [problem]
            continue
        notes: list[str] = []
        if is_tutorial_item(item):
            try:
                item = tutorial_to_sample(item, index, notes)
            except (ValueError, AttributeError, TypeError) as exc:
                yield where, index + 1, [f"{where}: {exc}"]
                continue
        elif isinstance(item, dict):
            item["id"] = f"item-{index + 1}" if "id" not in item else _id_text(item["id"])
        row = _validate(item, where, fill)
        if isinstance(row, Sample) and notes:
            row.add_format_notes(notes)
        yield where, index + 1, row


def _id_text(sid: Any) -> str:
    """A checked id (string or finite number, see `_row_problem`) as the string results use."""
    return sid if isinstance(sid, str) else str(sid)


def iter_samples(path: Path, fill: RowFill | None = None) -> Iterator[Sample]:
    """Valid samples, lazily; the first invalid row raises ConfigError naming file:line and field."""
    for _, _, row in iter_rows(path, fill):
        if isinstance(row, list):
            raise ConfigError(row)
        yield row


def _id_hash(sample_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(sample_id.encode("utf-8"), digest_size=8).digest(), "little")


def check_dataset(path: Path, limit: int = 50,
                  on_sample: Callable[[Sample, str], list[str]] | None = None, *,
                  on_row: Callable[[Sample, str, Span | None], list[str]] | None = None,
                  seen: Seen | None = None, fill: RowFill | None = None) -> tuple[int, list[str]]:
    """Read every row once, streaming; (valid sample count, problems), at most `limit` problems listed.

    Sample ids must be unique (results, resume and comparisons pair samples by id); to keep memory flat on
    huge files only 8-byte hashes are kept, and a second pass runs only when a duplicate shows up.
    `on_sample(sample, "file:line")` adds checks per valid sample (rubric variables, regexes, ...); `on_row` is
    the same with the row's span in the file (a run keeps what it will run: runner/prepare.py). `seen` hears
    every byte read (`rows_with_spans`).
    """
    count, extra = 0, 0
    problems: list[str] = []
    hashes = array("Q")

    def add(found: list[str]) -> None:
        nonlocal extra
        if len(problems) < limit:
            problems.extend(found)
        else:
            extra += len(found)

    for where, _, row, span in rows_with_spans(path, seen, fill):
        if isinstance(row, list):
            add(row)
            continue
        count += 1
        hashes.append(_id_hash(str(row.id)))
        if on_sample is not None:
            add(on_sample(row, where))
        if on_row is not None:
            add(on_row(row, where, span))
    add(_duplicate_ids(path, hashes, fill))
    if extra:
        problems.append(f"{path}: ... and {extra} more problems")
    if count == 0 and not problems:
        how = "one row per sample under the header" if path.suffix.lower() == ".csv" else "one JSON object per line"
        problems.append(f"{path}: the dataset has no samples; add {how}")
    return count, problems


def _duplicated(hashes: array) -> set[int]:
    """Hashes seen more than once. Sorted bucket by bucket (by the top byte): a full sort would turn the
    8-byte array into a list of Python ints several times its size."""
    buckets: dict[int, array] = {}
    for h in hashes:
        buckets.setdefault(h >> 56, array("Q")).append(h)
    dup: set[int] = set()
    for bucket in buckets.values():
        ordered = sorted(bucket)
        dup.update(a for a, b in zip(ordered, ordered[1:], strict=False) if a == b)
    return dup


def _duplicate_ids(path: Path, hashes: array, fill: RowFill | None = None) -> list[str]:
    dup = _duplicated(hashes)
    if not dup:
        return []
    seen: dict[str, list[str]] = {}
    for where, _, row in iter_rows(path, fill):
        if not isinstance(row, list) and _id_hash(str(row.id)) in dup:
            seen.setdefault(str(row.id), []).append(where.rsplit(":", 1)[-1].strip())
    return [f"{path}: duplicate sample id {clip(repr(sid))} (rows {', '.join(rows)}); give every sample a unique id"
            for sid, rows in seen.items() if len(rows) > 1]


def select_samples(samples: Iterable[Sample], tags: list[str] | None, max_samples: int | None) -> Iterator[Sample]:
    """Only samples carrying one of `tags` (when given), at most `max_samples` of them."""
    wanted = set(tags or [])
    taken = 0
    if max_samples is not None and max_samples <= 0:
        return
    for sample in samples:
        if wanted and not wanted.intersection(sample.tags):
            continue
        taken += 1
        yield sample
        if max_samples is not None and taken >= max_samples:
            return
