"""Grading functions for `kind: tool`: the built-ins and the `@grader` decorator for custom ones."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals_cli import safe_regex
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample

GraderFn = Callable[..., Any]
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def grader(func: GraderFn) -> GraderFn:
    """Mark a grading function `(sample, submission[, trajectory]) -> Grade | float | bool` as one a suite may
    name (`kind: tool`, `function: path.py:func`).

    The signature is checked here, when the decorator runs, so a mistake shows at load time and not
    halfway through a run. Custom graders are looked up by file and name (`load_function`), never through a
    global table, so they never shadow a built-in.
    """
    params = list(inspect.signature(func).parameters.values())
    positional = [p for p in params if p.kind in _POSITIONAL]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    required_kw = [p.name for p in params
                   if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty]
    if len(required) > 3 or len(positional) < 2 or len(positional) > 3 or required_kw:
        raise TypeError(
            f"@grader {func.__qualname__}: expected parameters (sample, submission) or "
            f"(sample, submission, trajectory), got ({', '.join(p.name for p in params)})"
        )
    func.__evals_grader__ = True  # type: ignore[attr-defined]
    func.__evals_wants_trajectory__ = len(positional) == 3  # type: ignore[attr-defined]
    return func


def to_grade(value: Any, where: str) -> Grade:
    """Accept the convenient return types of grading functions; a score outside [0, 1] is an error."""
    grade = _coerce(value, where)
    if grade.score is not None and not 0.0 <= grade.score <= 1.0:
        return Grade.failed(f"{where} returned score {grade.score:g}, outside [0, 1]")
    return grade


def _coerce(value: Any, where: str) -> Grade:
    if isinstance(value, Grade):
        return value
    if isinstance(value, bool):
        return Grade(score=1.0 if value else 0.0, rationale="passed" if value else "failed")
    if isinstance(value, int | float):
        return Grade(score=float(value), rationale=f"score {float(value):.3g}")
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], int | float | None):
        return Grade(score=None if value[0] is None else float(value[0]), rationale=str(value[1]))
    raise TypeError(f"{where} returned {type(value).__name__}; return a Grade, a float, a bool or (score, rationale)")


def load_function(ref: str, base_dir: Path) -> GraderFn:
    """A built-in name, or 'path/to/file.py:func' (the file runs as code: only paths named in the suite)."""
    if ":" not in ref:
        if ref not in BUILTINS:
            import difflib

            hint = difflib.get_close_matches(ref, BUILTINS, n=1)
            more = f"did you mean '{hint[0]}'? " if hint else ""
            raise ValueError(f"unknown function '{ref}'; {more}built-ins: {', '.join(sorted(BUILTINS))}, "
                             "or 'path/to/file.py:func' for a custom grader")
        return BUILTINS[ref]
    file_part, _, func_name = ref.rpartition(":")
    path = Path(file_part)
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        raise ValueError(f"custom grader file {file_part} not found (relative to the suite file)")
    module_name = f"evals_custom_{abs(hash(str(path.resolve())))}"
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's code: report, never crash
            del sys.modules[module_name]
            raise ValueError(f"{file_part}: importing failed: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, func_name, None)
    if fn is None:
        raise ValueError(f"{file_part} has no function '{func_name}'")
    if not getattr(fn, "__evals_grader__", False):
        raise ValueError(f"{file_part}:{func_name} is not decorated with @evals_cli.grader")
    return fn


def _alternatives(sample: Sample) -> list[str]:
    """The ground truth's alternatives, without empty ones: "" is in (and matches) every answer, so an empty
    alternative would pass anything; a ground truth with only empty ones is n/a (`_no_ground_truth`)."""
    gt = sample.ground_truth
    if gt is None:
        return []
    values = [str(g) for g in gt] if isinstance(gt, list) else [str(gt)]
    return [v for v in values if v.strip()]


def _no_ground_truth(sample: Sample) -> Grade:
    """Nothing to check: n/a (1.0 by convention, `applicable` False), never "found '' in the submission"."""
    if sample.ground_truth is None or sample.ground_truth == []:
        return Grade.not_applicable("no ground truth: nothing to check")
    return Grade.not_applicable(f"ground truth {sample.ground_truth!r} is empty: nothing to check "
                                "(an empty string is in every answer)")


@grader
def contains(sample: Sample, submission: str, *, case_sensitive: bool = False) -> Grade:
    """Ground truth (any alternative) appears in the submission; case-insensitive by default."""
    wanted = _alternatives(sample)
    if not wanted:
        return _no_ground_truth(sample)
    hay = submission if case_sensitive else submission.casefold()
    for alt in wanted:
        if (alt if case_sensitive else alt.casefold()) in hay:
            return Grade(score=1.0, rationale=f"found {alt!r} in the submission")
    return Grade(score=0.0, rationale=f"{' / '.join(map(repr, wanted))} not found in the submission")


@grader
def exact_match(sample: Sample, submission: str, *, case_sensitive: bool = True) -> Grade:
    """Submission equals the ground truth after stripping whitespace; case-sensitive by default."""
    wanted = _alternatives(sample)
    if not wanted:
        return _no_ground_truth(sample)
    got = submission.strip() if case_sensitive else submission.strip().casefold()
    for alt in wanted:
        if got == (alt.strip() if case_sensitive else alt.strip().casefold()):
            return Grade(score=1.0, rationale=f"exact match with {alt!r}")
    return Grade(score=0.0, rationale=f"{submission.strip()[:80]!r} does not equal {' / '.join(map(repr, wanted))}")


@grader
def regex_match(sample: Sample, submission: str, *, case_sensitive: bool = False) -> Grade:
    """Ground truth is a regex searched in the submission; case-insensitive by default."""
    wanted = _alternatives(sample)
    if not wanted:
        return _no_ground_truth(sample)
    flags = 0 if case_sensitive else safe_regex.IGNORECASE
    for pattern in wanted:
        try:
            if safe_regex.search(pattern, submission, flags):
                return Grade(score=1.0, rationale=f"matches /{pattern}/")
        except safe_regex.RegexError as exc:
            return Grade.failed(f"ground truth /{pattern}/ is not a valid regex: {exc}")
        except safe_regex.RegexTimeout as exc:  # a hostile pattern: an error grade naming it, never a hang
            return Grade.failed(f"ground truth {exc}")
    return Grade(score=0.0, rationale=f"no match for {' / '.join(f'/{p}/' for p in wanted)}")


BUILTINS: dict[str, GraderFn] = {f.__name__: f for f in (contains, exact_match, regex_match)}
