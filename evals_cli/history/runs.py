"""The runs under a results folder, each read into a `RunEntry` (entries.py) from what it left on disk.

A run is a folder holding `run.json`, `results.jsonl` or `summary.json` (an `evals run`, `evals merge`,
`evals analyze`), or `matrix.json` (a run over several models, whose model subfolders belong to it). Every field
says only what the files prove: a run without summary.json has no verdict (it is still going, or it was stopped),
its counts are those of the results written so far, and it never counts towards a trend.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from evals_cli.errors import EXIT_GATE_FAILED, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_PASSED, ConfigError
from evals_cli.history.entries import GateWord, ModelLine, RunEntry, Status
from evals_cli.models.results import CacheUse, Coverage
from evals_cli.output.files import RESULTS_NAME, SUMMARY_NAME
from evals_cli.output.manifest import MANIFEST_NAME, MATRIX_NAME, StartedWith, read_manifest, read_matrix

RUNNING_WINDOW_S = 30 * 60
"""A run without summary.json whose files changed this recently is taken to be in flight (a results line is
written per finished sample); older, it was stopped before its end (killed, or the machine went down)."""
MAX_DEPTH = 6
_MARKERS = (MANIFEST_NAME, RESULTS_NAME, SUMMARY_NAME)


# --- finding runs ------------------------------------------------------------------------------------------


def run_folders(root: Path) -> Iterator[Path]:
    """Every run folder under `root` (itself included), in no order; a matrix's model folders are part of it."""
    for here, dirs, files in os.walk(root):
        depth = len(Path(here).relative_to(root).parts)
        if MATRIX_NAME in files or any(name in files for name in _MARKERS):
            dirs[:] = []
            yield Path(here)
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []


def scan_runs(root: Path) -> list[RunEntry]:
    """Every run under `root`, newest first. ConfigError when `root` is not a folder; a folder whose files cannot
    be read is left out (`evals report` on it says why)."""
    if not root.is_dir():
        raise ConfigError(f"{root}: no such folder; give the folder your runs are written to (default: results)")
    entries = []
    for folder in run_folders(root):
        if not inside(folder, root):
            continue
        try:
            entries.append(read_run(folder, root))
        except (ConfigError, OSError, ValueError, ValidationError):
            continue
    return sorted(entries, key=lambda e: (e.started, e.rel), reverse=True)


def inside(folder: Path, root: Path) -> bool:
    """The folder and every file in it resolve under `root`: a run whose results.jsonl (or any file) is a symlink
    leading out of the folder is not one of its runs, and is never read or served as one."""
    base = root.resolve()
    try:
        if not folder.resolve().is_relative_to(base):
            return False
        return all(path.resolve().is_relative_to(base) for path in folder.iterdir() if path.is_symlink())
    except OSError:
        return False


def newest_run(folder: Path) -> RunEntry | None:
    """The newest run under `folder` when `folder` is no run itself but holds runs (`evals report results`); None
    otherwise (a run folder, a file, or a folder without runs: the caller says what it is)."""
    if not folder.is_dir() or any((folder / name).is_file() for name in (*_MARKERS, MATRIX_NAME)):
        return None
    entries = [entry for entry in scan_runs(folder) if entry.rel != "."]
    return entries[0] if entries else None


def find_run(root: Path, rel: str) -> RunEntry | None:
    """The run named `rel` under `root`, only when scanning finds it there (never a path built from `rel`)."""
    return next((entry for entry in scan_runs(root) if entry.rel == rel), None)


# --- reading one run ---------------------------------------------------------------------------------------


def read_run(folder: Path, root: Path) -> RunEntry:
    rel = folder.relative_to(root).as_posix() if folder != root else "."
    if (folder / MATRIX_NAME).is_file():
        return _models_run(folder, rel)
    from evals_cli.report import run_kind

    if run_kind(folder) == "sessions":
        return _sessions_run(folder, rel)
    return _live_run(folder, rel)


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _file_time(folder: Path, names: tuple[str, ...]) -> datetime:
    """When the run started, by its files (a run without a summary): the oldest of them."""
    times = [(folder / n).stat().st_mtime for n in names if (folder / n).is_file()]
    return datetime.fromtimestamp(min(times) if times else folder.stat().st_mtime, UTC)


def _last_write(folder: Path) -> float:
    times = [p.stat().st_mtime for p in folder.iterdir() if p.is_file()] or [folder.stat().st_mtime]
    return max(times)


def _unfinished(last_write: float) -> Status:
    return "running" if time.time() - last_write < RUNNING_WINDOW_S else "stopped"


def _gate_word(exit_code: int | None, status: str) -> GateWord:
    if status in ("running", "stopped"):
        return status  # type: ignore[return-value]
    if exit_code == EXIT_PASSED:
        return "PASSED"
    if exit_code == EXIT_GATE_FAILED:
        return "FAILED"
    return "not evaluated"


def run_marks(started: StartedWith | None, cache: CacheUse | None) -> list[str]:
    """How a run got its answers when not from live models, as its files record it (run.json's `started_with`,
    the summary's cache use): 'replayed' (--replay: every model answer from a recording), 'cached' (--cache
    answered some requests: N of M), 'no judge' (--no-judge: judge graders skipped). A run marked so is not
    comparable with a live one without saying it."""
    marks = []
    if started is not None and started.replay:
        marks.append(f"replayed from {Path(started.replay).name}")
    if cache is not None and cache.hits:
        marks.append(f"cached: {cache.hits} of {cache.hits + cache.misses} requests from {Path(cache.file).name}")
    if started is not None and started.no_judge:
        marks.append("no judge (--no-judge)")
    return marks


def _live_run(folder: Path, rel: str) -> RunEntry:
    """A run's entry, from its run.json and summary.json read once each."""
    from evals_cli.output.files import SUMMARY_NAME, read_summary

    manifest = read_manifest(folder) if (folder / MANIFEST_NAME).is_file() else None
    model = manifest.model if manifest is not None else None
    summary = read_summary(folder)
    marks = run_marks(manifest.started_with if manifest is not None else None,
                      summary.cache if summary is not None else None)
    if summary is not None:
        status: Status = summary.status
        code = summary.exit_code
        if status == "completed" and code in (EXIT_INCOMPLETE, EXIT_INTERRUPTED):
            status = "interrupted" if code == EXIT_INTERRUPTED else "aborted"
        started = _parse_time(summary.started_at) or _file_time(folder, _MARKERS)
        return RunEntry(folder, rel, "run", summary.suite, started, status, _gate_word(code, status),
                        models=[model] if model else [], passed=summary.passed, failed=summary.failed,
                        errored=summary.errored, total=summary.total, cost=summary.cost, exit_code=code,
                        detail=summary.abort_reason or "", subset=_subset(summary.coverage), marks=marks)
    suite = manifest.suite if manifest is not None else folder.name
    entry = RunEntry(folder, rel, "run", suite, _file_time(folder, _MARKERS), _unfinished(_last_write(folder)),
                     "running", models=[model] if model else [], marks=marks)
    _count_results(entry, folder)
    if (folder / SUMMARY_NAME).is_file():  # there, but not a summary: no verdict, and not "in flight" either
        entry.status = "stopped"
        entry.detail = f"summary.json is unreadable (after {entry.total} results): no verdict"
    else:
        entry.detail = (f"{entry.total} results so far, no summary yet" if entry.in_flight else
                        f"no summary.json: stopped after {entry.total} results; resume it with evals run SUITE "
                        f"--resume {folder}")
    entry.gate = _gate_word(None, entry.status)
    return entry


def _subset(coverage: Coverage | None) -> str:
    """The selection a run ran ('tags: smoke, -n 3'); '' for the whole dataset (or a summary that does not say)."""
    if coverage is None:
        return ""
    parts = [f"tags: {', '.join(coverage.tags)}"] if coverage.tags else []
    parts += [coverage.id_filter] if coverage.id_filter else []
    parts += [f"-n {coverage.max_samples}"] if coverage.max_samples is not None else []
    parts += [f"shard {coverage.shard}"] if coverage.shard else []
    return ", ".join(parts)


def _count_results(entry: RunEntry, folder: Path) -> None:
    """The counts of the results written so far (a run in flight, or one stopped before its summary)."""
    from evals_cli.output.files import read_results

    if not (folder / RESULTS_NAME).is_file():
        return
    cost = 0.0
    priced = False
    for result in read_results(folder, []):
        entry.total += 1
        if result.error is not None:
            entry.errored += 1
        elif result.passed is True:
            entry.passed += 1
        elif result.passed is False:
            entry.failed += 1
        if result.cost is not None:
            cost, priced = cost + result.cost, True
    entry.cost = cost if priced else None


def _models_run(folder: Path, rel: str) -> RunEntry:
    matrix = read_matrix(folder)
    assert matrix is not None
    lines: list[ModelLine] = []
    entry = RunEntry(folder, rel, "models", matrix.suite, _parse_time(matrix.started_at) or
                     _file_time(folder, (MATRIX_NAME,)), "completed", "not evaluated",
                     models=[run.model for run in matrix.models])
    costs: list[float] = []
    unfinished = False
    last = _last_write(folder)
    for run in matrix.models:
        sub = folder / run.folder
        if not sub.is_dir():
            unfinished = True
            lines.append(ModelLine(run.model, run.folder, None, 0, 0, "not evaluated", None, run.base_url))
            continue
        last = max(last, _last_write(sub))
        one = _live_run(sub, f"{rel}/{run.folder}")
        entry.subset = entry.subset or one.subset
        entry.marks += [mark for mark in one.marks if mark not in entry.marks]
        unfinished = unfinished or one.status in ("running", "stopped")
        entry.passed, entry.failed = entry.passed + one.passed, entry.failed + one.failed
        entry.errored, entry.total = entry.errored + one.errored, entry.total + one.total
        if one.cost is not None:
            costs.append(one.cost)
        lines.append(ModelLine(run.model, run.folder, one.pass_rate, one.passed, one.passed + one.failed,
                               one.gate, one.cost, run.base_url))
    entry.per_model = lines
    entry.cost = sum(costs) if costs else None
    # matrix.json is written at the start marked interrupted with no end time, and again with its verdict at the end
    if unfinished or (not matrix.finished_at and matrix.status == "interrupted"):
        entry.status = _unfinished(last)
        entry.gate = _gate_word(None, entry.status)
        entry.detail = "no verdict yet" if entry.in_flight else "stopped before its end: resume it with --resume"
        return entry
    from evals_cli.report import load_matrix

    view = load_matrix(folder)  # the verdict recomputed from the model folders, as `evals report` shows it
    entry.status = view.matrix.status
    entry.exit_code = view.matrix.exit_code
    entry.gate = _gate_word(entry.exit_code, entry.status)
    entry.detail = view.matrix.gate.message if view.matrix.gate is not None else ""
    return entry


def _sessions_run(folder: Path, rel: str) -> RunEntry:
    """An `evals analyze` run: its summary.json is the common `RunSummary` (analyze.json marks the folder), or a
    `SessionsSummary` when an older evals-cli wrote it."""
    from evals_cli.output.files import read_summary
    from evals_cli.sessions.results import SessionsSummary

    path = folder / SUMMARY_NAME
    common = read_summary(folder) if path.is_file() else None
    if common is not None:
        code = common.exit_code
        completion = common.graders.get("task_completion")
        rate = completion.avg_score if completion is not None else None
        state: Status = "aborted" if common.status == "completed" and code == EXIT_INCOMPLETE else common.status
        return RunEntry(folder, rel, "sessions", common.suite, _parse_time(common.started_at) or
                        _file_time(folder, _MARKERS), state, _gate_word(code, state), errored=common.errored,
                        total=common.total, exit_code=code,
                        detail=f"{common.total} sessions" + (f", task completion {rate:.0%}" if rate is not None
                                                             else ""))
    try:
        summary = SessionsSummary.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None
    except ValueError:  # neither summary: listed as stopped with no verdict, as a run's unreadable summary is
        summary = None
    if summary is not None:
        status: Status = summary.status
        rate = summary.task_completion_rate
        return RunEntry(folder, rel, "sessions", summary.name, _parse_time(summary.started_at) or
                        _file_time(folder, _MARKERS), status, _gate_word(summary.exit_code, status),
                        errored=summary.errored, total=summary.sessions, exit_code=summary.exit_code,
                        detail=f"{summary.sessions} sessions" + (f", task completion {rate:.0%}" if rate is not None
                                                                 else ""))
    status = "stopped" if path.is_file() else _unfinished(_last_write(folder))
    with (folder / RESULTS_NAME).open(encoding="utf-8", errors="replace") as fh:
        count = sum(1 for line in fh if line.strip())
    detail = (f"summary.json is unreadable (after {count} sessions): no verdict" if path.is_file() else
              f"{count} sessions so far, no summary yet")
    return RunEntry(folder, rel, "sessions", folder.name, _file_time(folder, _MARKERS), status,
                    _gate_word(None, status), total=count, detail=detail)
