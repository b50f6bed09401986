"""`evals validate`: every problem in a suite, its dataset and rubrics, found without calling any model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evals_cli.errors import ConfigError
from evals_cli.graders.base import Grader
from evals_cli.graders.rubric_check import SampleChecker
from evals_cli.models.sample import Sample
from evals_cli.models.specs import SuiteSpec
from evals_cli.suite.loader import TargetOverride


@dataclass
class ValidationReport:
    suite: SuiteSpec | None = None
    samples: int = 0
    problems: list[str] = field(default_factory=list)


class RowChecks:
    """Every per-row check a suite implies, as one `check_dataset(on_sample=...)` hook: the graders' own checks
    and rubric rendering, and suite tools that would answer nothing. `evals validate` and the run's precheck
    both use it, so neither can accept a row the other refuses."""

    def __init__(self, suite: SuiteSpec, graders: dict[str, Grader], where: str = "") -> None:
        from evals_cli.tools.mock import ToolResultChecker

        self.samples = SampleChecker(graders)
        self.tools = ToolResultChecker(getattr(suite, "tools", None) or {}, where or str(suite.base_dir))

    def __call__(self, sample: Sample, where: str = "") -> list[str]:
        return self.samples(sample, where) + self.tools(sample, where)

    def problems(self) -> list[str]:
        return self.samples.problems() + self.tools.problems()


def checked_suite(path: Path, override: TargetOverride | None = None) -> SuiteSpec:
    """The suite `evals run` may start on: exactly what `evals validate` (with the same --target, --base-url and
    --model) reports, raised as one ConfigError listing every problem, so run never refuses less than validate
    and never lists fewer problems."""
    from evals_cli.suite.loader import target_override

    with target_override(override):
        report = validate_suite(path, override)
    if report.problems:
        raise ConfigError(report.problems)
    assert report.suite is not None
    return report.suite


def validate_suite(path: Path, override: TargetOverride | None = None) -> ValidationReport:
    from evals_cli.datasets.reader import check_dataset
    from evals_cli.endpoints.pool import ClientPool
    from evals_cli.graders.build import build_graders
    from evals_cli.runner.prepare import read_system_prompt
    from evals_cli.sessions.suite import check_sessions_suite, is_sessions_suite
    from evals_cli.suite.loader import load_suite
    from evals_cli.targets.factory import build_target, judge_fallback, resolve_target_endpoint

    if is_sessions_suite(path):
        report = ValidationReport()
        try:
            report.suite = load_suite(path)
        except ConfigError as exc:
            report.problems.extend(exc.problems)
            return report
        report.samples, report.problems = check_sessions_suite(report.suite)
        return report
    report = ValidationReport()
    try:
        suite = load_suite(path)
    except ConfigError as exc:
        report.problems.extend(exc.problems)
        report.problems.extend(_salvage(path, report))
        return report
    report.suite = suite
    agent = None
    endpoint = {"base_url": override.base_url, "model": override.model} if override is not None else None
    try:
        agent = judge_fallback(suite.target, resolve_target_endpoint(suite.target, endpoint))
    except ConfigError as exc:
        report.problems.extend(exc.problems)
    try:
        prompt = read_system_prompt(suite)
        if suite.target.kind == "python":  # loads the agent file: a bad path or signature shows now
            build_target(suite, resolve_target_endpoint(suite.target, endpoint), ClientPool(), prompt)
    except ConfigError as exc:
        report.problems.extend(f"{path}: {p}" for p in exc.problems)
    graders: dict[str, Grader] = {}
    try:
        graders = build_graders(suite, None, agent)
    except ConfigError as exc:
        report.problems.extend(f"{path}: {p}" for p in exc.problems)
    dataset = suite.resolve(suite.dataset)
    checker = RowChecks(suite, graders, str(path))
    try:
        report.samples, problems = check_dataset(dataset, on_sample=checker)
        report.problems.extend(problems)
        report.problems.extend(checker.problems())
    except ConfigError as exc:
        report.problems.extend(exc.problems)
    return report


def _salvage(path: Path, report: ValidationReport) -> list[str]:
    """The suite is invalid, but its valid parts (graders, dataset) can still be checked: list it all at once."""
    from pydantic import TypeAdapter, ValidationError

    from evals_cli.datasets.reader import check_dataset
    from evals_cli.graders.base import GRADER_KINDS
    from evals_cli.graders.build import build_graders  # noqa: F401  (registers the kinds)
    from evals_cli.models.specs import GraderSpec
    from evals_cli.suite.envvars import expand
    from evals_cli.suite.loader import parse_yaml, read_text

    try:
        data, _ = parse_yaml(read_text(path, "suite file"), str(path))
    except ConfigError:
        return []
    if not isinstance(data, dict):
        return []
    data = expand(data, (), [])
    base = path.resolve().parent
    problems: list[str] = []
    adapter: TypeAdapter = TypeAdapter(GraderSpec)
    graders = data.get("graders")
    for name, raw in (graders.items() if isinstance(graders, dict) else []):
        try:
            spec = adapter.validate_python(raw)
        except ValidationError:
            continue  # already reported by the suite validation
        cls = GRADER_KINDS[spec.kind]
        extra = (None, None) if cls.uses_judge else ()  # no endpoint needed to check a judge's rubric
        try:
            cls(name, spec, base, *extra)  # type: ignore[call-arg]
        except (ValueError, OSError, TypeError) as exc:
            problems.append(f"{path}: graders.{name}: {exc}")
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
