"""`evals validate`: every problem in a suite, its dataset and rubrics, found without calling any model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.endpoints.resolve import provider_note
from evals_cli.errors import ConfigError
from evals_cli.suite.loader import TargetOverride
from evals_cli.suite.spec import SuiteSpec

if TYPE_CHECKING:
    from evals_cli.run_options import RunOptions
    from evals_cli.runner.prepare import PreparedRun
    from evals_cli.sessions.suite import SessionsSuiteSpec


@dataclass
class ValidationReport:
    """What `evals validate` found: the suite (either kind) when it loaded, its valid rows, every problem."""

    suite: SuiteSpec | SessionsSuiteSpec | None = None
    samples: int = 0
    problems: list[str] = field(default_factory=list)
    graders: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # deprecated names in use: printed, never a problem
    prepared: PreparedRun | None = None  # with `for_run`: the run, prepared by the same pass


def checked_run(path: Path, override: TargetOverride, options: RunOptions) -> PreparedRun:
    """`evals run`'s start: what `checked_suite` checks and what `PreparedRun` prepares, in one pass over the
    dataset where `single_pass` allows it (each row read and checked once: a second pass was a fifth of a
    replayed run's time), else the two passes in turn. Either way the same problems refuse the run."""
    from evals_cli.runner.prepare import PreparedRun

    report = validate_suite(path, override, options, import_code=True, for_run=options)
    if report.problems:
        if report.prepared is not None:
            report.prepared.close_servers()
        raise ConfigError(report.problems)
    if report.prepared is not None:
        return report.prepared
    assert isinstance(report.suite, SuiteSpec)
    return PreparedRun(report.suite, options)


def single_pass(suite: SuiteSpec, options: RunOptions) -> bool:
    """Whether validate's pass can prepare the run too. Not when the run starts MCP servers (validate never
    does), reads another run first (--rerun-failed, --resume, --replay-user: their own refusals come after the
    suite's problems), or skips the precheck (--no-precheck: the run reads the rows as it goes)."""
    return (options.precheck and not suite.mcp_servers and not suite.user_mcp_servers
            and options.rerun_failed is None
            and options.resume is None and options.replay_user is None)


def checked_suite(path: Path, override: TargetOverride | None = None, judging: RunOptions | None = None) -> SuiteSpec:
    """The suite `evals run` may start on: exactly what `evals validate` (with the same --target, --base-url and
    --model) reports, raised as one ConfigError listing every problem, so run never refuses less than validate
    and never lists fewer problems. `judging` (the run's options) brings --no-judge and --judge-*: a run that
    calls no judge, or names its judge on the command line, is not refused for a judge the suite leaves unset."""
    report = validate_suite(path, override, judging, import_code=True)  # the run imports the suite's code anyway
    if report.problems:
        raise ConfigError(report.problems)
    assert isinstance(report.suite, SuiteSpec)
    return report.suite


def _validate_sessions(path: Path, report: ValidationReport) -> ValidationReport:
    """A recorded-sessions suite: checked by the sessions pipeline's own preparation."""
    from evals_cli.sessions.prepare import check_sessions_suite
    from evals_cli.sessions.suite import load_sessions_suite

    try:
        report.suite = load_sessions_suite(path)
    except ConfigError as exc:
        report.problems.extend(exc.problems)
        return report
    report.samples, report.problems = check_sessions_suite(report.suite)
    return report


def _suite_notes(path: Path, suite: SuiteSpec) -> list[str]:
    """What a loaded suite is worth knowing without being wrong: old names, providers, tool order, MCP servers."""
    notes = [f"{path}: {'.'.join(loc)}: {note}" for loc, note in suite.naming_notes()]
    notes += [f"{path}: graders.{name}.provider: {note}" for name, spec in suite.graders.items()
              if (note := provider_note(getattr(spec, "provider", None))) is not None]
    return notes + _tool_order_notes(path, suite) + _mcp_notes(path, suite)


def validate_suite(path: Path, override: TargetOverride | None = None, judging: RunOptions | None = None,
                   import_code: bool = False, for_run: RunOptions | None = None) -> ValidationReport:
    """Every problem of a suite file, of either kind, found by the preparation a run goes through
    (`PreparedRun`; a recorded-sessions document: `sessions.prepare.check`) in its collecting mode: one path, no
    second list of checks. `judging`: see `checked_suite`.

    The suite's own Python files (custom extractors, @grader functions, rewards, a python agent) are only read
    unless `import_code` (`evals validate --import-code`): checking a suite written by someone else must not run
    its code. Read, each must lie inside the suite's folder (or code_dirs), parse, and name its function;
    imported, its signature is checked too, as a run checks it.

    `for_run` (the run's options; see `checked_run`): the same checks, by a pass that also prepares that run
    (`report.prepared`) when `single_pass` allows."""
    from evals_cli.suite.kind import suite_kind
    from evals_cli.suite.loader import load_suite

    report = ValidationReport()
    if suite_kind(path) == "recorded_sessions":
        return _validate_sessions(path, report)
    try:
        suite = load_suite(path, override)
    except ConfigError as exc:
        report.problems.extend(exc.problems)
        report.problems.extend(_salvage(path, report, import_code))
        return report
    report.suite = suite
    report.graders = list(suite.graders)
    report.notes = _suite_notes(path, suite)
    from evals_cli.run_options import RunOptions
    from evals_cli.runner.prepare import PreparedRun
    from evals_cli.runner.target_factory import validate_builds

    judge = {k: getattr(judging, k) for k in ("no_judge", "judge_model", "judge_base_url", "judge_api_key")} \
        if judging is not None else {}
    options = RunOptions(base_url=override.base_url if override else None, model=override.model if override else None,
                         **judge)
    if for_run is not None and single_pass(suite, for_run):
        prepared = PreparedRun(suite, for_run, problems=report.problems, where=str(path), import_code=import_code,
                               for_run=True)
        report.prepared = prepared
    else:  # build the target only where building checks something (a python agent's file: a bad path, signature)
        prepared = PreparedRun(suite, options, problems=report.problems, where=str(path),
                               build_target=validate_builds(suite.target), import_code=import_code)
    report.samples = prepared.rows
    report.notes += _prepared_notes(path, prepared)
    return report


def _prepared_notes(path: Path, prepared: PreparedRun) -> list[str]:
    """What preparing the run found worth saying: custom code read (not run), the rows' notes, simulated users."""
    notes: list[str] = []
    if prepared.code_read:
        shown = ", ".join(dict.fromkeys(prepared.code_read))
        notes.append(f"{path}: custom code read, not run: {shown} (each file is inside the suite's folder, "
                     "parses and defines its function); evals validate --import-code imports it and checks "
                     "the signatures too, as evals run does")
    notes += prepared.row_notes.notes()
    if prepared.simulated and prepared.user_endpoint is not None:  # resolved, not called: where users will come from
        endpoint = prepared.user_endpoint
        notes.append(f"{path}: {prepared.simulated} row(s) with a simulated user; the {endpoint.describe()} "
                     f"plays them (base URL from {endpoint.base_url_from})")
    return notes


def _tool_order_notes(path: Path, suite: SuiteSpec) -> list[str]:
    """tool_order graders in mode subset or superset, whose meaning flipped to agentevals' (a note per grader)."""
    from evals_cli.graders.kinds.trajectory import mode_change_note

    return [f"{path}: graders.{name}.mode: {note}" for name, spec in suite.graders.items()
            if getattr(spec, "kind", None) == "tool_order"
            and (note := mode_change_note(getattr(spec, "mode", ""))) is not None]


def _mcp_notes(path: Path, suite: SuiteSpec) -> list[str]:
    """MCP servers named without the mcp extra installed: validate starts none, so a note (a run refuses)."""
    if not suite.mcp_servers and not suite.user_mcp_servers:
        return []
    from evals_cli.mcp import sdk

    return [] if sdk.installed() else [f"{path}: {sdk.missing_note()}"]


def _salvage(path: Path, report: ValidationReport, import_code: bool = False) -> list[str]:
    """The suite is invalid, but its valid parts (graders, dataset) can still be checked: list it all at once."""
    from pydantic import TypeAdapter, ValidationError

    from evals_cli.datasets.reader import check_dataset
    from evals_cli.suite import spec as suite_spec
    from evals_cli.suite.envvars import expand
    from evals_cli.suite.yaml_file import parse_yaml, read_text

    try:
        data, _ = parse_yaml(read_text(path, "suite file"), str(path))
    except ConfigError:
        return []
    if not isinstance(data, dict):
        return []
    data = expand(data, (), [])
    base = path.resolve().parent
    suite_spec.refresh(data)  # the kinds it names, and one registered since the unions were built, count here too
    problems = _salvaged_graders(path, data, TypeAdapter(suite_spec.current_unions()[0]), import_code)
    from evals_cli.models.tools import ToolSpec
    from evals_cli.tools.mock import ToolResultChecker

    tools: dict[str, ToolSpec] = {}
    raw_tools = data.get("tools")
    for name, raw in (raw_tools.items() if isinstance(raw_tools, dict) else []):
        try:
            tools[str(name)] = ToolSpec.model_validate(raw)
        except ValidationError:
            continue  # already reported by the suite validation
    silent = ToolResultChecker(tools, str(path))
    dataset = data.get("dataset")
    if isinstance(dataset, str):
        try:
            report.samples, more = check_dataset(base / dataset, on_sample=silent)
            more += silent.problems()
            problems.extend(more)
        except ConfigError as exc:
            problems.extend(exc.problems)
    return problems


def _salvaged_graders(path: Path, data: dict[str, Any], adapter: Any, import_code: bool) -> list[str]:
    """Each grader of an invalid suite that validates on its own, built offline (no endpoint: a judge's rubric
    is still checked); what building finds, a plug-in kind's own error named."""
    from pydantic import ValidationError

    from evals_cli import custom_code
    from evals_cli.graders.base import GRADERS, GraderContext
    from evals_cli.graders.functions import bind_extractor
    from evals_cli.registry import plugin_code

    base = path.resolve().parent
    graders, dirs = data.get("graders"), data.get("code_dirs")
    roots = [base, *(base / d for d in dirs if isinstance(d, str))] if isinstance(dirs, list) else [base]
    problems: list[str] = []
    for name, raw in (graders.items() if isinstance(graders, dict) else []):
        try:
            spec = adapter.validate_python(raw)
        except ValidationError:
            continue  # already reported by the suite validation
        entry = GRADERS[spec.kind]
        try:  # offline: no endpoint needed to check a judge's rubric
            with custom_code.policy(roots, run=import_code), plugin_code(entry, "being built"):
                entry.impl(name, bind_extractor(spec, base), GraderContext(base, offline=True))
        except ConfigError as exc:
            problems.extend(f"{path}: graders.{name}: {p}" for p in exc.problems)
        except (ValueError, OSError, TypeError) as exc:
            problems.append(f"{path}: graders.{name}: {exc}")
    return problems
