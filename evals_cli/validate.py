"""`evals validate`: every problem in a suite, its dataset and rubrics, found without calling any model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evals_cli.errors import ConfigError
from evals_cli.graders.base import Grader
from evals_cli.graders.rubric_check import SampleChecker
from evals_cli.models.specs import SuiteSpec


@dataclass
class ValidationReport:
    suite: SuiteSpec | None = None
    samples: int = 0
    problems: list[str] = field(default_factory=list)


def validate_suite(path: Path) -> ValidationReport:
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
    try:
        agent = judge_fallback(suite.target, resolve_target_endpoint(suite.target))
    except ConfigError as exc:
        report.problems.extend(exc.problems)
    try:
        prompt = read_system_prompt(suite)
        if suite.target.kind == "python":  # loads the agent file: a bad path or signature shows now
            build_target(suite, resolve_target_endpoint(suite.target), ClientPool(), prompt)
    except ConfigError as exc:
        report.problems.extend(f"{path}: {p}" for p in exc.problems)
    graders: dict[str, Grader] = {}
    try:
        graders = build_graders(suite, None, agent)
    except ConfigError as exc:
        report.problems.extend(f"{path}: {p}" for p in exc.problems)
    dataset = suite.resolve(suite.dataset)
    checker = SampleChecker(graders)
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
    dataset = data.get("dataset")
    if isinstance(dataset, str):
        try:
            report.samples, more = check_dataset(base / dataset)
            problems.extend(more)
        except ConfigError as exc:
            problems.extend(exc.problems)
    return problems
