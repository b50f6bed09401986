"""Grading functions for `kind: tool`: the built-ins and the `@grader` decorator for custom ones."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from evals_cli import custom_code, safe_regex
from evals_cli.code_loading import NotImported, load_object
from evals_cli.models.grader_specs.extractors import CUSTOM_EXTRACTORS, is_custom_ref
from evals_cli.models.grader_specs.letta_python import install_if_imported
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample

if TYPE_CHECKING:
    from pydantic import BaseModel

    SpecT = TypeVar("SpecT", bound=BaseModel)
else:
    SpecT = TypeVar("SpecT")

GraderFn = Callable[..., Any]
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def grader(func: GraderFn) -> GraderFn:
    """Mark a grading function `(sample, submission[, trajectory]) -> Grade | float | bool` as one a suite may
    name (`kind: tool`, `function: path.py:func`).

    The signature is checked here, when the decorator runs, so a mistake shows at load time and not
    halfway through a run. Custom graders are looked up by file and name (`load_function`), never through a
    global table, so they never shadow a built-in.
    """
    positional = _grader_positional(list(inspect.signature(func).parameters.values()), func.__qualname__)
    func.__evals_grader__ = True  # type: ignore[attr-defined]
    func.__evals_wants_trajectory__ = positional == 3  # type: ignore[attr-defined]
    return func


def _grader_positional(params: list[inspect.Parameter], name: str) -> int:
    """How many positional parameters a grading function takes (2 or 3); TypeError naming the shape otherwise.
    Shared by the decorator and `evals validate`'s reading of a file it does not run."""
    positional = [p for p in params if p.kind in _POSITIONAL]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    required_kw = [p.name for p in params
                   if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty]
    if len(required) > 3 or len(positional) < 2 or len(positional) > 3 or required_kw:
        raise TypeError(
            f"@grader {name}: expected parameters (sample, submission) or "
            f"(sample, submission, trajectory), got ({', '.join(p.name for p in params)})"
        )
    return len(positional)


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
    """A built-in name, 'path/to/file.py:func' (the file runs as code: only paths named in the suite), or
    'package.module:func' from an installed package."""
    if ":" not in ref:
        if ref not in BUILTINS:
            import difflib

            hint = difflib.get_close_matches(ref, BUILTINS, n=1)
            more = f"did you mean '{hint[0]}'? " if hint else ""
            raise ValueError(f"unknown function '{ref}'; {more}built-ins: {', '.join(sorted(BUILTINS))}, "
                             "or 'path/to/file.py:func' for a custom grader")
        return BUILTINS[ref]
    fn, _ = load_object(ref, base_dir, "custom grader", install_if_imported)
    if isinstance(fn, NotImported):  # evals validate without --import-code: read, not run; graded never
        static = fn.static
        if static is not None:  # a plain def: its decorator and signature can be read
            if "grader" not in {d.rpartition(".")[2] for d in static.decorators}:
                raise ValueError(f"{ref} is not decorated with @evals_cli.grader")
            _grader_positional(list(static.signature.parameters.values()), ref)
        return _not_imported
    if not getattr(fn, "__evals_grader__", False):
        raise ValueError(f"{ref} is not decorated with @evals_cli.grader")
    return fn


@grader
def _not_imported(sample: Sample, submission: str) -> Grade:
    """Stands in for a custom grader that was only read (never called: validate grades nothing)."""
    raise RuntimeError("this custom grader was checked without being imported (evals validate)")


EXTRACTOR_SHAPE = ("a function (trajectory, config) -> str, or (trajectory, config, agent_state) -> str as "
                   "letta-evals writes it (agent_state is None here)")


def _plain_function_params(fn: Any, name: str, shape: str) -> list[inspect.Parameter]:
    """The parameters of a custom extractor or reward, which must be a plain (not async, not a class) function
    whose signature can be read; ValueError naming it and the shape it must have otherwise. A decorated async
    function (`__wrapped__`) is async too."""
    if isinstance(fn, custom_code.StaticDef):  # read from the file, not run (evals validate)
        if fn.is_async:
            raise ValueError(f"{name} is async; it must be a plain function: {shape}")
        return list(fn.signature.parameters.values())
    if not callable(fn) or inspect.isclass(fn):
        raise ValueError(f"{name} is not a function; it must be {shape}")
    if inspect.iscoroutinefunction(getattr(fn, "__wrapped__", fn)) or inspect.iscoroutinefunction(fn):
        raise ValueError(f"{name} is async; it must be a plain function: {shape}")
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        raise ValueError(f"{name}: its signature cannot be read; it must be {shape}") from None


def extractor_params(fn: Any, ref: str) -> int:
    """How many arguments a custom extractor takes (2 or 3); ValueError naming the expected shape otherwise.
    Checked when the suite is loaded, so a wrong signature never shows halfway through a run."""
    params = _plain_function_params(fn, f"extractor {ref}", EXTRACTOR_SHAPE)
    positional = [p for p in params if p.kind in _POSITIONAL]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    required_kw = [p.name for p in params
                   if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty]
    if required_kw or len(required) > 3 or len(positional) < 2:
        raise ValueError(f"extractor {ref} takes ({', '.join(p.name for p in params)}); it must be "
                         f"{EXTRACTOR_SHAPE}")
    return 3 if len(required) == 3 else 2


def bind_extractor(spec: SpecT, base_dir: Path) -> SpecT:
    """The grader's spec with a custom extractor ('path/to/file.py:func') loaded and checked, and its reference
    made unique (the resolved file) for `extract`; a built-in extractor leaves the spec as it is. The suite's
    own spec keeps the reference as written."""
    ref: str = getattr(spec, "extractor", "")
    if not is_custom_ref(ref):
        return spec
    fn, path = load_object(ref, base_dir, "custom extractor", install_if_imported)
    if isinstance(fn, NotImported):  # only read (evals validate): nothing to bind, nothing will be extracted
        if fn.static is not None:
            extractor_params(fn.static, ref)
        return spec
    takes = extractor_params(fn, ref)
    key = f"{path}:{ref.rpartition(':')[2]}"

    def call(trajectory: Any, config: dict[str, Any], *state: Any) -> Any:
        return fn(trajectory, config, *state)

    call.__evals_extractor_params__ = takes  # type: ignore[attr-defined]
    CUSTOM_EXTRACTORS[key] = (ref, call)
    return spec.model_copy(update={"extractor": key})


REWARD_SHAPE = ("a function (ctx) -> float | (score, rationale) | {'score': ...} | an object with .score, "
                "where ctx.grades maps each grader to its grade (.score, .rationale)")


def load_reward(ref: str, base_dir: Path) -> Callable[[Any], Any]:
    """A custom reward ('path/to/file.py:func', letta-evals' `reward: {kind: custom, function: ...}`), loaded and
    its signature checked: one argument, the context of one sample's grades."""
    if not is_custom_ref(ref):
        raise ValueError(f"function '{ref}' must be 'path/to/file.py:function' (a .py file relative to the suite) "
                         "or 'package.module:function' (an installed module)")
    fn, _ = load_object(ref, base_dir, "custom reward", install_if_imported)
    if isinstance(fn, NotImported) and fn.static is None:  # only read, and only running it would tell more
        return _reward_not_imported
    params = _plain_function_params(fn.static if isinstance(fn, NotImported) else fn, ref, REWARD_SHAPE)
    positional = [p for p in params if p.kind in _POSITIONAL]
    required = [p for p in params if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    if len(required) > 1 or (len(required) == 1 and required[0].kind not in _POSITIONAL) \
            or (not positional and not varargs):
        raise ValueError(f"{ref} takes ({', '.join(p.name for p in params)}); it must take one argument: "
                         f"{REWARD_SHAPE}")
    return _reward_not_imported if isinstance(fn, NotImported) else fn


def _reward_not_imported(ctx: Any) -> Any:
    """Stands in for a custom reward that was only read (never called: validate scores nothing)."""
    raise RuntimeError("this custom reward was checked without being imported (evals validate)")


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


_PRINTABLE = frozenset(chr(c) for c in range(32, 127))


@grader
def ascii_printable_only(sample: Sample, submission: str) -> Grade:
    """Every character is one of the 95 printable ASCII characters (space to '~'); line breaks (\\n, \\r) are
    allowed, as letta-evals allows them (ASCII art spans lines). Reads no ground truth. An empty submission
    is n/a (1.0 by convention, as letta-evals scores it, but marked as not checked)."""
    if not submission:
        return Grade.not_applicable("empty submission: no character to check")
    bad = sorted({ch for ch in submission if ch not in _PRINTABLE and ch not in "\r\n"})
    if bad:
        shown = ", ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        return Grade(score=0.0, rationale=f"characters outside printable ASCII: {shown}{more}")
    return Grade(score=1.0, rationale="every character is printable ASCII (line breaks allowed)")


BUILTINS: dict[str, GraderFn] = {f.__name__: f for f in (contains, exact_match, regex_match, ascii_printable_only)}
