"""CSV datasets (letta-evals and promptfoo keep samples in spreadsheets): each record after the header is one
sample, streamed, and every unreadable record is a problem naming file:line and column instead of an exception.

The column mapping, in the spirit of both tools:

- `input` (or `messages`): the user message; a cell holding a JSON list of strings (`["hi", "and then?"]`) is a
  multi-turn conversation, as in letta-evals.
- `ground_truth`: text, or a JSON list (one per turn, or alternatives, as in JSONL).
- `id` or `sample_id`: the sample id (default `row-N`, N counting data records from 1).
- JSON-encoded cells for the fields that hold structures: `rubric_vars`, `metadata`, `agent_args`, `extra_vars`,
  `tools`, `expected_calls`, `messages`, `environment`, `expected_state`, `expected_actions`, `user`, `inject`,
  `choices`, `sandbox` (objects or lists);
  `expected_tool_order`, `forbidden_tools`, `tags`, `secrets`,
  `must_cite`, `must_not_say` take a JSON list or, for `tags`, `secrets` and the tool lists, comma-separated values
  (a secret holding a comma is written as a JSON list).
- `max_steps`, `max_tokens_per_sample`, `max_messages`: integers; `category`, `rubric`, `rubric_path`, `success`,
  `agent_model`: text.
- Every field a JSONL row can have is one of these (a test keeps it so): a row field read as a rubric variable
  would be silently ignored, and a grader with nothing to check is n/a, never a failure.
- promptfoo's `__metadata:NAME` columns go into `metadata.NAME`, `__description` into `metadata.description`;
  its other `__` columns (`__expected` assertions, ...) are refused, since they are not graded here.
- Every other column is a rubric variable (`rubric_vars.COLUMN`, text), as promptfoo's columns are its `vars`;
  when the `rubric_vars` cell gives the same name (letta-evals datasets repeat a column there), the cell is the
  rubric variable and the column goes into `metadata.COLUMN`.

An empty cell is an absent field (pandas' NaN in letta-evals). Records are read with Python's csv module
(quoted cells may span lines); bytes that are not UTF-8 make their record a problem, never text made up.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from evals_cli.datasets.jsonl import BOM
from evals_cli.suite.problems import clip

Record = tuple[str, int, dict[str, Any] | None, str | None]
"""(file:line, data record number from 1, the row as a JSONL row would hold it, None) or (..., None, problem)."""

JSON_FIELDS = ("rubric_vars", "metadata", "agent_args", "extra_vars", "tools", "expected_calls", "messages",
               "environment", "expected_state", "user", "expected_actions", "inject", "choices", "sandbox")
LIST_FIELDS = ("expected_tool_order", "forbidden_tools", "tags", "secrets")  # JSON list, or comma-separated names
TEXT_OR_LIST = ("input", "ground_truth", "must_cite", "must_not_say")  # text, or a JSON list
TEXT_FIELDS = ("id", "sample_id", "category", "rubric", "rubric_path", "success", "agent_model")
WHOLE_NUMBERS = ("max_steps", "max_tokens_per_sample", "max_messages")  # a row's own bounds
KNOWN = frozenset((*JSON_FIELDS, *LIST_FIELDS, *TEXT_OR_LIST, *TEXT_FIELDS, *WHOLE_NUMBERS))
PROMPTFOO_META = "__metadata:"
_BAD_BYTES = range(0xDC80, 0xDD00)  # surrogateescape's stand-ins for bytes that are not UTF-8


def _lines(path: Path, seen: Callable[[bytes, int], None] | None = None) -> Iterator[str]:
    """The file's lines as text; bytes that are not UTF-8 become surrogateescape stand-ins, found per record.
    `seen(raw bytes, offset)` hears every line as read (see datasets/jsonl.py)."""
    offset = 0
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            if seen is not None:
                seen(raw, offset)
                offset += len(raw)
            if number == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
            yield raw.decode("utf-8", errors="surrogateescape")


def _not_utf8(cells: list[str]) -> int | None:
    for index, cell in enumerate(cells):
        if any(ord(ch) in _BAD_BYTES for ch in cell):
            return index
    return None


def header_problems(header: list[str], where: str) -> list[str]:
    """What keeps a header from naming the columns: no input, duplicate or empty names, promptfoo assertions."""
    problems = []
    names = [h.strip() for h in header]
    if "input" not in names and "messages" not in names:
        problems.append(f"{where}: the header has no 'input' column (columns: {clip(', '.join(names), 200)}); "
                        "the first line of a CSV dataset names the columns, and 'input' holds the user message")
    seen: set[str] = set()
    for index, name in enumerate(names, 1):
        if not name:
            problems.append(f"{where}: column {index} has no name; name every column in the header")
        elif name in seen:
            problems.append(f"{where}: column '{clip(name)}' appears twice in the header; rename one")
        elif name.startswith("__") and not name.startswith(PROMPTFOO_META) and name != "__description":
            problems.append(f"{where}: column '{clip(name)}' (a promptfoo {name} column) is not read here; grade "
                            "with the suite's graders, or rename the column to make it a rubric variable")
        seen.add(name)
    if "id" in names and "sample_id" in names:
        problems.append(f"{where}: give the id in 'id' or 'sample_id', not both")
    return problems


def _json(cell: str, column: str, where: str) -> tuple[Any, str | None]:
    try:
        return json.loads(cell, parse_constant=_refuse_constant), None
    except (ValueError, RecursionError) as exc:
        why = f"at column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else clip(str(exc), 120)
        return None, (f"{where}: column {column}: invalid JSON ({why}); this column holds JSON (write "
                      "{\"\"key\"\": \"\"value\"\"} inside a quoted cell)")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _cell(column: str, cell: str, where: str) -> tuple[Any, str | None]:
    """A cell's value in the row, or the problem with it."""
    text = cell.strip()
    if column in JSON_FIELDS:
        return _json(text, column, where)
    if column in TEXT_OR_LIST:
        if text.startswith("[") and text.endswith("]"):
            value, problem = _json(text, column, where)
            if problem is not None:
                return None, problem.replace("this column holds JSON", "a cell in [ ] is read as a JSON list (a "
                                             "multi-turn conversation or alternatives)")
            return value, None
        return cell, None
    if column in LIST_FIELDS:
        if text.startswith("["):
            return _json(text, column, where)
        return [part.strip() for part in text.split(",") if part.strip()], None
    if column in WHOLE_NUMBERS:
        try:
            return int(text), None
        except ValueError:
            return None, f"{where}: column {column}: {clip(text)!r} is not a whole number"
    return cell, None


def _row(header: list[str], cells: list[str], where: str) -> tuple[dict[str, Any] | None, str | None]:
    row: dict[str, Any] = {}
    loose: dict[str, str] = {}
    meta: dict[str, str] = {}
    for column, cell in zip(header, cells, strict=False):
        if column in KNOWN:
            if not cell.strip():
                continue  # an empty cell: the field is absent
            value, problem = _cell(column, cell, where)
            if problem is not None:
                return None, problem
            row["id" if column == "sample_id" else column] = value
        elif column.startswith(PROMPTFOO_META):
            if cell.strip():
                meta[column[len(PROMPTFOO_META):]] = cell
        elif column == "__description":
            if cell.strip():
                meta["description"] = cell
        else:
            loose[column] = cell
    if meta:
        metadata = row.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            return None, f"{where}: column metadata: expected a JSON object, got {type(metadata).__name__}"
        both = sorted(set(meta) & set(metadata))
        if both:
            return None, f"{where}: metadata.{both[0]} is given by two columns; keep one"
        metadata.update(meta)
    if loose:
        rubric_vars = row.setdefault("rubric_vars", {})
        if not isinstance(rubric_vars, dict):
            return None, f"{where}: column rubric_vars: expected a JSON object, got {type(rubric_vars).__name__}"
        for column in sorted(set(loose) & set(rubric_vars)):
            # the rubric_vars cell names it itself (letta-evals datasets repeat a column there): the cell wins
            # for the rubric, and the column is kept as metadata, so that nothing written is lost
            metadata = row.setdefault("metadata", {})
            if not isinstance(metadata, dict) or column in metadata:
                return None, (f"{where}: column {column}: also given by the rubric_vars and metadata cells; "
                              "keep one")
            metadata[column] = loose.pop(column)
        rubric_vars.update(loose)
    return row, None


def iter_csv(path: Path, seen: Callable[[bytes, int], None] | None = None) -> Iterator[Record]:
    """Every data record of a CSV file as a row dict, or the problem that kept it from being one."""
    lines = _lines(path, seen)
    reader = csv.reader(lines, strict=True)
    header: list[str] | None = None
    record = 0
    end = 0  # the physical line the previous record ended on
    while True:
        start = end + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            end = reader.line_num
            where = f"{path}:{start}"
            yield where, record + 1, None, f"{where}: not a readable CSV record ({exc}); check its quotes"
            if header is None:
                return
            record += 1
            continue
        end = reader.line_num
        where = f"{path}:{start}"
        if not cells or all(not c.strip() for c in cells):
            continue  # a blank line
        bad = _not_utf8(cells)
        if header is None:
            if bad is not None:
                yield where, 0, None, f"{where}: the header is not valid UTF-8; save the file as UTF-8"
                return
            header = [h.strip() for h in cells]
            problems = header_problems(header, where)
            if problems:
                for problem in problems:
                    yield where, 0, None, problem
                return
            continue
        record += 1
        if bad is not None:
            column = header[bad] if bad < len(header) else f"{bad + 1}"
            yield where, record, None, f"{where}: column {column}: not valid UTF-8; save the file as UTF-8"
            continue
        if len(cells) > len(header):
            yield where, record, None, (f"{where}: {len(cells)} cells but the header names {len(header)} columns; "
                                        "quote cells that hold commas")
            continue
        row, row_problem = _row(header, cells, where)
        yield where, record, row, row_problem
