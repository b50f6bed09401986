"""What to run, as a value made before anything runs: `plan(source, options)` reads the suite file once
(suite/source.py), resolves the options once (`--shard auto`, a resumed run's options, the models) and checks
everything `evals validate` checks, by the same pass; it starts no server and no process and writes nothing (a
run's plan imports the suite's custom code under the policy, as `evals validate --import-code` does).
`evals validate` prints a plan's `problems`; `evals run` hands the plan to `Run.open` (runner/run.py), which
refuses a plan with problems and owns every side effect of the start.

Where a new piece of the start goes: a check is a problem the preparation collects (runner/prepare.py, reached
by the plan's pass, so validate and run report it alike); a side effect (a server, a sandbox, a process, a
folder) belongs to `Run.open`, never to the plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.endpoints.resolve import provider_note
from evals_cli.errors import ConfigError
from evals_cli.models.results import MatrixSummary
from evals_cli.output.manifest import read_matrix
from evals_cli.run_options import RunOptions
from evals_cli.runner.overrides import with_shard
from evals_cli.runner.prepare import PreparedRun
from evals_cli.runner.started_with import resumed_options
from evals_cli.suite.kind import suite_kind
from evals_cli.suite.loader import TargetOverride, load_suite
from evals_cli.suite.source import SuiteSource
from evals_cli.suite.spec import SuiteSpec

if TYPE_CHECKING:
    from evals_cli.sessions.suite import SessionsSuiteSpec


@dataclass(frozen=True)
class RunPlan:
    """One run decided: the suite (a recorded-sessions document stays one: `sessions`), the options as resolved,
    the problems found (none: it may run), and, when several models are asked, those models (`Run.open` prepares
    one run per model from the suite checked once with the first). `checked` is the preparation the checking pass
    made when that one pass could also prepare the run (`single_pass`); otherwise `Run.open` prepares
    the run, starting what it needs (MCP servers), reading the run it resumes or reruns."""

    source: SuiteSource | None
    options: RunOptions
    suite: SuiteSpec | SessionsSuiteSpec | None
    problems: tuple[str, ...] = ()
    models: tuple[str, ...] | None = None
    sessions: bool = False
    checked: PreparedRun | None = None

    def refuse(self) -> None:
        """ConfigError (exit 2) listing every problem, as `evals validate` lists them; nothing when it may run."""
        if self.problems:
            raise ConfigError(list(self.problems))


def plan(suite: str | Path | SuiteSpec | SessionsSuiteSpec, options: RunOptions | None = None) -> RunPlan:
    """The plan of a run of `suite` (a file, of either kind, or a suite loaded in Python) with `options`. Problems
    of the options themselves that leave nothing to check (a --resume of another kind of run) raise ConfigError."""
    options = resumed_options(with_shard(options or RunOptions()))  # before --target, --base-url and models
    if isinstance(suite, str | Path):
        return _plan_file(SuiteSource.read(suite), options)
    from evals_cli.sessions.suite import SessionsSuiteSpec  # here: a suite of live agents never needs it

    if isinstance(suite, SessionsSuiteSpec):
        return _sessions(None, suite, options)
    if getattr(suite.target, "kind", None) == "recorded_sessions":  # a SuiteSpec built around a sessions target
        return _sessions(None, SessionsSuiteSpec.from_suite(suite), options)
    if options.target_file is not None:
        raise ConfigError("--target (target_file) replaces the target of a suite file; give the suite's path, or "
                          "load it with load_suite(path, TargetOverride(file=...))")
    models = models_for_spec(suite, options)
    if models is not None and len(models) > 1:
        return RunPlan(None, options, suite, models=tuple(models))
    if models is not None:
        options = options.model_copy(update={"model": models[0], "models": None})
    return RunPlan(None, options, suite)  # Run.open prepares it, raising the first problem it meets


def _plan_file(source: SuiteSource, options: RunOptions) -> RunPlan:
    if suite_kind(source) == "recorded_sessions":
        from evals_cli.sessions.suite import load_sessions_suite

        _no_models(options)
        try:
            sessions = load_sessions_suite(source)
        except ConfigError as exc:
            return RunPlan(source, options, None, tuple(exc.problems), sessions=True)
        return _sessions(source, sessions, options)
    models = models_for_source(source, options)
    # every check `evals validate` makes, the same way: a run never starts on a problem validate would report
    if models is not None and len(models) > 1:  # checked with the first model, then every model prepared
        override = TargetOverride(file=options.target_file, base_url=options.base_url, model=models[0])
        report = validate_suite(source, override, options, import_code=True)
        return RunPlan(source, options, report.suite, tuple(report.problems), models=tuple(models))
    if models is not None:
        options = options.model_copy(update={"model": models[0], "models": None})
    override = TargetOverride(file=options.target_file, base_url=options.base_url, model=options.model)
    report = validate_suite(source, override, options, import_code=True, for_run=options)
    if report.problems and report.prepared is not None:
        report.prepared.close_servers()
    return RunPlan(source, options, report.suite, tuple(report.problems),
                   checked=report.prepared if not report.problems else None)


def _sessions(source: SuiteSource | None, suite: SessionsSuiteSpec, options: RunOptions) -> RunPlan:
    _no_models(options)
    return RunPlan(source, options, suite, sessions=True)


def _no_models(options: RunOptions) -> None:
    if options.models is not None and len(options.models) > 1:
        raise ConfigError("--model sets the agent model (here several); a recorded_sessions suite has no live agent "
                          "(the judge is set with judge.model or EVAL_JUDGE_MODEL)")


DEFAULT_SUITES = ("suite.yaml", "evals.yaml")


def default_suite(folder: Path | None = None) -> Path:
    """The suite `evals run` / `evals validate` use when given none: suite.yaml or evals.yaml in `folder` (the
    current one). ConfigError (exit 2) naming both when neither is there, or when both are (which one is meant?)."""
    here = Path(folder) if folder is not None else Path.cwd()
    found = [here / name for name in DEFAULT_SUITES if (here / name).is_file()]
    names = " nor ".join(DEFAULT_SUITES)
    if not found:
        raise ConfigError(f"no suite given, and neither {names} is in {here}; give the suite file: evals run "
                          "SUITE.yaml (or create one with `evals init`)")
    if len(found) > 1:
        raise ConfigError(f"no suite given, and both {' and '.join(DEFAULT_SUITES)} are in {here}; name the one to "
                          "use: evals run SUITE.yaml")
    return Path(found[0].name) if folder is None else found[0]


# --- which models ------------------------------------------------------------------------------------------


def models_for_source(source: SuiteSource, options: RunOptions) -> list[str] | None:
    """The models a run of this suite file covers: --model (repeated), else those of the run being resumed, else
    the suite's `target.models`; None for a run of one model as before (--model once, or target.model)."""
    matrix = read_matrix(options.resume) if options.resume is not None else None
    if matrix is not None:
        return _resumed_models(matrix, options)
    if options.model is not None:
        return None
    if options.models is not None:
        return list(options.models)
    try:  # only to read target.models: a suite with problems is reported in full by the usual path
        spec = load_suite(source, TargetOverride(file=options.target_file, base_url=options.base_url))
    except ConfigError:
        return None
    return models_of_target(spec)


def models_for_spec(suite: SuiteSpec, options: RunOptions) -> list[str] | None:
    """As `models_for_source`, for a suite loaded already (the Python API)."""
    matrix = read_matrix(options.resume) if options.resume is not None else None
    if matrix is not None:
        return _resumed_models(matrix, options)
    if options.model is not None:
        return None
    return list(options.models) if options.models is not None else models_of_target(suite)


def models_of_target(suite: SuiteSpec) -> list[str] | None:
    names = getattr(suite.target, "model_names", None)
    models: list[str] | None = names() if names is not None else None
    return list(models) if models else None


def _resumed_models(matrix: MatrixSummary, options: RunOptions) -> list[str]:
    recorded = [run.model for run in matrix.models]
    asked = options.models or ([options.model] if options.model else None)
    if asked is not None and list(asked) != recorded:
        raise ConfigError(f"--resume {options.resume}: a run of the models {', '.join(recorded)}; --resume continues "
                          "every one of them: drop --model (to continue one model alone, give its folder: --resume "
                          f"{options.resume}/FOLDER --model NAME)")
    return recorded



# --- the checking pass: what `evals validate` reports -------------------------------------------------


@dataclass
class ValidationReport:
    """What `evals validate` found: the suite (either kind) when it loaded, its valid rows, every problem."""

    suite: SuiteSpec | SessionsSuiteSpec | None = None
    samples: int = 0
    problems: list[str] = field(default_factory=list)
    graders: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # deprecated names in use: printed, never a problem
    prepared: PreparedRun | None = None  # with `for_run`: the run, prepared by the same pass


def single_pass(suite: SuiteSpec, options: RunOptions) -> bool:
    """Whether validate's pass can prepare the run too. Not when the run starts MCP servers (validate never
    does), reads another run first (--rerun-failed, --resume, --replay-user: their own refusals come after the
    suite's problems), or skips the precheck (--no-precheck: the run reads the rows as it goes)."""
    return (options.precheck and not suite.mcp_servers and not suite.user_mcp_servers
            and options.rerun_failed is None
            and options.resume is None and options.replay_user is None)


def _validate_sessions(path: SuiteSource, report: ValidationReport) -> ValidationReport:
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


def validate_suite(path: Path | SuiteSource, override: TargetOverride | None = None,
                   judging: RunOptions | None = None, import_code: bool = False,
                   for_run: RunOptions | None = None) -> ValidationReport:
    """Every problem of a suite file, of either kind, found by the preparation a run goes through
    (`PreparedRun`; a recorded-sessions document: `sessions.prepare.check`) in its collecting mode: one path, no
    second list of checks. `judging` (the run's options) brings --no-judge and --judge-*: a run that calls no
    judge, or names its judge on the command line, is not refused for a judge the suite leaves unset.

    The suite's own Python files (custom extractors, @grader functions, rewards, a python agent) are only read
    unless `import_code` (`evals validate --import-code`): checking a suite written by someone else must not run
    its code. Read, each must lie inside the suite's folder (or code_dirs), parse, and name its function;
    imported, its signature is checked too, as a run checks it.

    `for_run` (the run's options; runner/plan.py): the same checks, by a pass that also prepares that run
    (`report.prepared`) when `single_pass` allows. A `SuiteSource` is the file as the start of a run read it."""
    from evals_cli.suite.kind import suite_kind
    from evals_cli.suite.loader import load_suite

    report = ValidationReport()
    source = path if isinstance(path, SuiteSource) else SuiteSource.read(path)
    path = source.path
    if suite_kind(source) == "recorded_sessions":
        return _validate_sessions(source, report)
    try:
        suite = load_suite(source, override)
    except ConfigError as exc:
        report.problems.extend(exc.problems)
        report.problems.extend(_salvage(source, report, import_code))
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


def _salvage(source: SuiteSource, report: ValidationReport, import_code: bool = False) -> list[str]:
    """The suite is invalid, but its valid parts (graders, dataset) can still be checked: list it all at once."""
    from pydantic import TypeAdapter, ValidationError

    from evals_cli.datasets.reader import check_dataset
    from evals_cli.suite import spec as suite_spec
    from evals_cli.suite.envvars import expand
    from evals_cli.suite.yaml_file import parse_yaml

    path = source.path
    try:
        data, _ = parse_yaml(source.text(), str(path))
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
