"""`evals validate`: every problem in a suite, its dataset and rubrics, found without calling any model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evals_cli.errors import ConfigError
from evals_cli.graders.base import Grader
from evals_cli.graders.rubric import RubricError, compile_rubric, render_rubric, rubric_variables
from evals_cli.models.sample import Sample
from evals_cli.models.specs import SuiteSpec
from evals_cli.models.trajectory import Trajectory


@dataclass
class ValidationReport:
    suite: SuiteSpec | None = None
    samples: int = 0
    problems: list[str] = field(default_factory=list)


def check_rubrics(suite: SuiteSpec, samples: Iterable[Sample], graders: dict[str, Grader]) -> list[str]:
    """Render every judge rubric for every sample (placeholders for the run's values): missing variables
    and template errors show now, not at the first judge call."""
    judges = {name: g for name, g in graders.items() if getattr(g, "rubric_text", None) is not None}
    if not judges:
        return []
    missing: dict[tuple[str, str], list[str]] = {}
    problems: list[str] = []
    empty = Trajectory()
    for name, grader in list(judges.items()):
        try:
            compile_rubric(grader.rubric_text)  # type: ignore[attr-defined]
        except RubricError as exc:
            problems.append(f"graders.{name}: rubric {_rubric_name(grader)}: {exc}")
            del judges[name]
    for sample in samples:
        turns = range(len(sample.user_turns)) if sample.per_turn else [None]
        for name, grader in judges.items():
            for turn in turns:
                variables = rubric_variables(sample, empty, "", sample.ground_truth_for(turn), turn)
                try:
                    render_rubric(grader.rubric_text, variables)  # type: ignore[attr-defined]
                except RubricError as exc:
                    missing.setdefault((name, str(exc)), []).append(str(sample.id))
                    break
    for (name, problem), ids in missing.items():
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        problems.append(f"graders.{name}: rubric {_rubric_name(judges[name])}: {problem} (samples: {shown})")
    return problems


def _rubric_name(grader: Grader) -> str:
    return grader.spec.rubric or "(inline prompt)"


def validate_suite(path: Path) -> ValidationReport:
    from evals_cli.datasets.reader import check_dataset, iter_rows
    from evals_cli.endpoints.resolve import resolve_agent
    from evals_cli.graders.build import build_graders
    from evals_cli.suite.loader import load_suite

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
        agent = resolve_agent(suite.target)
    except ConfigError as exc:
        report.problems.extend(exc.problems)
    if suite.target.system_prompt_file and not suite.resolve(suite.target.system_prompt_file).is_file():
        report.problems.append(f"{path}: target.system_prompt_file: {suite.target.system_prompt_file} not found "
                               f"(relative to the suite file)")
    graders: dict[str, Grader] = {}
    try:
        graders = build_graders(suite, None, agent)
    except ConfigError as exc:
        report.problems.extend(f"{path}: {p}" for p in exc.problems)
    dataset = suite.resolve(suite.dataset)
    try:
        count, problems = check_dataset(dataset)
        report.samples = count
        report.problems.extend(problems)
        samples = (row for _, _, row in iter_rows(dataset) if isinstance(row, Sample))
        report.problems.extend(check_rubrics(suite, samples, graders))
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
