"""Post-run exporters: a finished run's results rewritten for other tools (JUnit XML, TaskResult JSONL, HTML).

Each format is one module of this package registering itself in EXPORTERS (see base.py), so the CLI can call
any of them right after `evals run` (`--export FORMAT=PATH`, and the older `--junit` / `--task-results`) or later
over a run folder read back with `evals_cli.output.files.read_results` / `read_summary`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from evals_cli.errors import ConfigError
from evals_cli.exporters.base import EXPORTERS, Exporter, FinishedRun
from evals_cli.exporters.html import render_html, write_html
from evals_cli.exporters.junit import JUnitCounts, build_junit, write_junit
from evals_cli.exporters.task_results import task_result, write_task_results
from evals_cli.models.results import RunSummary
from evals_cli.registry import plugin_code


def known_formats() -> list[str]:
    return sorted(EXPORTERS.kinds())


def parse_export(value: str) -> tuple[str, Path]:
    """One `--export FORMAT=PATH` value as (format, path); a malformed value or an unknown format is a
    ConfigError naming the flag, the value and the formats there are."""
    fmt, sep, path = value.partition("=")
    fmt = fmt.strip()
    known = ", ".join(known_formats())
    if not sep or not fmt or not path:
        raise ConfigError(f"--export {value!r}: expected FORMAT=PATH, FORMAT one of {known}")
    if fmt not in EXPORTERS:
        raise ConfigError(f"--export {value!r}: unknown format {fmt!r}; known formats: {known}")
    return fmt, Path(path)


def parse_exports(values: Iterable[str]) -> dict[str, Path]:
    """Every `--export` value of a command line, format -> path; one format given two different files is a
    ConfigError (the later one would silently win)."""
    wanted: dict[str, Path] = {}
    for value in values:
        fmt, path = parse_export(value)
        if fmt in wanted and wanted[fmt] != path:
            raise ConfigError(f"--export {fmt}: two files given ({wanted[fmt]} and {path}); give one")
        wanted[fmt] = path
    return wanted


def requested_exports(exports: Mapping[str, Path] | None = None, *, junit: Path | None = None,
                      task_results: Path | None = None) -> dict[str, Path]:
    """format -> path of everything asked for, the old keyword arguments being aliases of their formats; every
    format checked before anything is written, so a typo does not leave half the exports done."""
    wanted: dict[str, Path] = {}
    for fmt, path in [("junit", junit), ("task_results", task_results), *(exports or {}).items()]:
        if path is None:
            continue
        if fmt not in EXPORTERS:
            raise ConfigError(f"unknown export format {fmt!r}; known formats: {', '.join(known_formats())}")
        if fmt in wanted and wanted[fmt] != Path(path):
            raise ConfigError(f"export {fmt}: two files given ({wanted[fmt]} and {path}); give one")
        wanted[fmt] = Path(path)
    return wanted


def export_run(output_dir: Path, summary: RunSummary, *, exports: Mapping[str, Path] | None = None,
               junit: Path | None = None, task_results: Path | None = None, threshold: float | None = None) -> None:
    """Write the exports `evals run` / `evals merge` ask for (`exports`: format -> path; `junit` and
    `task_results` are aliases), each read back from the run's results file. `threshold` is the gate's
    per-sample pass value (default 1.0: anything short of full marks is blamed)."""
    run = FinishedRun(output_dir, summary, 1.0 if threshold is None else threshold)
    for fmt, path in requested_exports(exports, junit=junit, task_results=task_results).items():
        entry = EXPORTERS[fmt]
        with plugin_code(entry, f"writing {path}", at=f"--export {fmt}"):  # a plug-in's error: exit 2 naming it
            entry.impl(run, path)


__all__ = [
    "EXPORTERS", "Exporter", "FinishedRun", "JUnitCounts", "build_junit", "export_run", "known_formats",
    "parse_export", "parse_exports", "render_html", "requested_exports", "task_result", "write_html", "write_junit",
    "write_task_results",
]


def export_folder(run_dir: Path, fmt: str, path: Path | None) -> tuple[Path, list[str]]:
    """`evals report RUN --format FORMAT -o PATH`: one export of a finished (or killed) run read back from its
    folder, with the summary `evals report` shows (a killed run's rebuilt, its verdict withheld) and the gate's
    per-sample pass value from its run.json. Returns (the file written, the warnings reading the run gave)."""
    from evals_cli.output.manifest import is_matrix
    from evals_cli.report import load_run, run_kind

    known = ", ".join(["table", *known_formats()])
    if fmt not in EXPORTERS:
        raise ConfigError(f"--format {fmt!r}: unknown format; known formats: {known}")
    if path is None:
        raise ConfigError(f"--format {fmt}: give the file to write with -o, e.g. -o run.{_SUFFIX.get(fmt, fmt)}")
    if is_matrix(run_dir) or run_kind(run_dir) == "sessions":
        raise ConfigError(f"{run_dir}: --format {fmt} exports the run of one suite and model; give one model's "
                          "folder of a run over several models (RUN/MODEL), and an `evals run` folder, not an "
                          "`evals analyze` one")
    _, summary, warnings = load_run(run_dir)
    export_run(run_dir, summary, exports={fmt: path}, threshold=_sample_value(run_dir))
    return path, warnings


_SUFFIX = {"inspect": "eval", "junit": "xml", "task_results": "jsonl"}


def _sample_value(run_dir: Path) -> float | None:
    """The gate's per-sample pass value as run.json recorded it (None: not recorded, or a gate of gates)."""
    from evals_cli.output.manifest import read_manifest

    try:
        gate = read_manifest(run_dir if run_dir.is_dir() else run_dir.parent).gate
    except ConfigError:
        return None
    value = gate.get("pass_value") if gate.get("pass_value") is not None else gate.get("value")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
