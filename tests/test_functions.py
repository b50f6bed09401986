"""Grading functions (built-ins, @grader, custom files) and the deterministic tool graders."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evals_cli.gate.kinds import reward_score
from evals_cli.graders.base import GradeContext, Grader, GraderContext
from evals_cli.graders.functions import (
    BUILTINS,
    ascii_printable_only,
    bind_extractor,
    contains,
    exact_match,
    grader,
    load_function,
    load_reward,
    regex_match,
    to_grade,
)
from evals_cli.graders.kinds.tool import ToolGrader, ToolGraderSpec
from evals_cli.graders.kinds.trajectory import ToolOrderGrader, ToolOrderSpec, ToolsAvoidedGrader, ToolsAvoidedSpec
from evals_cli.models.grader_specs.extractors import extract
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Step, ToolCall, Trajectory, Turn


def gt(value: str | list[str] | None) -> Sample:
    return Sample(input="question", ground_truth=value)


# --- contains / exact_match / regex_match --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ground_truth", "submission", "kwargs", "score"),
    [
        ("Paris", "The capital is paris.", {}, 1.0),  # case-insensitive by default
        ("Paris", "The capital is PARIS.", {}, 1.0),
        ("Paris", "The capital is Lyon.", {}, 0.0),
        ("Paris", "The capital is paris.", {"case_sensitive": True}, 0.0),
        ("Paris", "The capital is Paris.", {"case_sensitive": True}, 1.0),
        (["Lyon", "Paris"], "it is paris", {}, 1.0),  # list: any alternative
        (["Lyon", "Marseille"], "it is paris", {}, 0.0),
        ("Straße", "STRASSE", {}, 1.0),  # casefold, not just lower()
    ],
)
def test_contains(ground_truth: Any, submission: str, kwargs: dict[str, Any], score: float) -> None:
    assert contains(gt(ground_truth), submission, **kwargs).score == score


def test_contains_rationale_names_what_was_looked_for() -> None:
    assert contains(gt("Paris"), "paris!").rationale == "found 'Paris' in the submission"
    assert contains(gt(["Lyon", "Nice"]), "paris").rationale == "'Lyon' / 'Nice' not found in the submission"


@pytest.mark.parametrize(
    ("ground_truth", "submission", "kwargs", "score"),
    [
        ("42", "42", {}, 1.0),
        ("42", "  42\n", {}, 1.0),  # whitespace stripped
        (" 42 ", "42", {}, 1.0),
        ("42", "42.", {}, 0.0),
        ("42", "The answer is 42", {}, 0.0),
        ("Paris", "paris", {}, 0.0),  # case-sensitive by default
        ("Paris", "paris", {"case_sensitive": False}, 1.0),
        ("Paris", " PARIS ", {"case_sensitive": False}, 1.0),
        (["Paris", "Lyon"], "Lyon", {}, 1.0),
        (["Paris", "Lyon"], "Nice", {}, 0.0),
    ],
)
def test_exact_match(ground_truth: Any, submission: str, kwargs: dict[str, Any], score: float) -> None:
    assert exact_match(gt(ground_truth), submission, **kwargs).score == score


@pytest.mark.parametrize(
    ("ground_truth", "submission", "kwargs", "score"),
    [
        (r"port\s*=?\s*5432", "The PORT = 5432.", {}, 1.0),  # case-insensitive by default
        (r"port\s*=?\s*5432", "The PORT = 5432.", {"case_sensitive": True}, 0.0),
        (r"^\d+$", "123", {}, 1.0),
        (r"^\d+$", "123 apples", {}, 0.0),
        ([r"^yes\b", r"^no\b"], "No, it is not", {}, 1.0),
        ([r"^yes\b", r"^no\b"], "Maybe", {}, 0.0),
    ],
)
def test_regex_match(ground_truth: Any, submission: str, kwargs: dict[str, Any], score: float) -> None:
    assert regex_match(gt(ground_truth), submission, **kwargs).score == score


def test_regex_match_invalid_pattern_is_a_failed_grade_not_zero() -> None:
    grade = regex_match(gt("(unclosed"), "anything")
    assert grade.score is None
    assert grade.error is not None and "not a valid regex" in grade.error


@pytest.mark.parametrize("fn", [contains, exact_match, regex_match])
@pytest.mark.parametrize("ground_truth", [None, []])
def test_no_ground_truth_scores_one(fn: Any, ground_truth: Any) -> None:
    grade = fn(gt(ground_truth), "whatever")
    assert grade.score == 1.0
    assert "no ground truth" in grade.rationale


def test_builtins_are_loaded_by_name() -> None:
    assert BUILTINS == {"contains": contains, "exact_match": exact_match, "regex_match": regex_match,
                        "ascii_printable_only": ascii_printable_only}
    for name, fn in BUILTINS.items():
        assert load_function(name, Path(".")) is fn
        assert fn.__evals_grader__ and not fn.__evals_wants_trajectory__


def test_unknown_builtin_name_with_hint() -> None:
    with pytest.raises(ValueError, match=r"unknown function 'contain'; did you mean 'contains'\? "
                                         r"built-ins: ascii_printable_only, contains, exact_match, regex_match, or "
                                             r"'path/to/file.py:func'"):
        load_function("contain", Path("."))


def test_unknown_builtin_name_without_hint() -> None:
    with pytest.raises(ValueError) as info:
        load_function("zzz", Path("."))
    assert "did you mean" not in str(info.value)


# --- @grader ------------------------------------------------------------------------------------------------


def test_grader_accepts_two_and_three_positional_parameters() -> None:
    @grader
    def two(sample, submission):  # type: ignore[no-untyped-def]
        return 1.0

    @grader
    def three(sample, submission, trajectory):  # type: ignore[no-untyped-def]
        return 1.0

    assert two.__evals_grader__ and not two.__evals_wants_trajectory__
    assert three.__evals_grader__ and three.__evals_wants_trajectory__


def test_grader_with_optional_trajectory_wants_the_trajectory() -> None:
    @grader
    def maybe(sample, submission, trajectory=None):  # type: ignore[no-untyped-def]
        return 1.0

    assert maybe.__evals_wants_trajectory__


def test_grader_accepts_optional_keyword_parameters() -> None:
    @grader
    def tolerant(sample, submission, *, case_sensitive=False, threshold=0.5):  # type: ignore[no-untyped-def]
        return 1.0

    assert tolerant.__evals_grader__
    assert not tolerant.__evals_wants_trajectory__


def test_decorating_does_not_replace_a_builtin() -> None:
    @grader
    def contains(sample, submission):  # type: ignore[no-untyped-def]  # noqa: F811
        return 0.0

    assert load_function("contains", Path(".")) is BUILTINS["contains"]
    assert load_function("contains", Path(".")) is not contains


def _one(sample):  # type: ignore[no-untyped-def]
    return 1.0


def _four(sample, submission, trajectory, extra):  # type: ignore[no-untyped-def]
    return 1.0


def _required_kw(sample, submission, *, threshold):  # type: ignore[no-untyped-def]
    return 1.0


def _varargs(*args):  # type: ignore[no-untyped-def]
    return 1.0


def _nothing():  # type: ignore[no-untyped-def]
    return 1.0


def _four_with_default(sample, submission, trajectory, extra=None):  # type: ignore[no-untyped-def]
    return 1.0


@pytest.mark.parametrize("fn", [_one, _four, _four_with_default, _required_kw, _varargs, _nothing])
def test_grader_rejects_wrong_signatures_at_decoration_time(fn: Any) -> None:
    with pytest.raises(TypeError, match=r"@grader .*expected parameters \(sample, submission\) or "
                                        r"\(sample, submission, trajectory\)"):
        grader(fn)
    assert not getattr(fn, "__evals_grader__", False)


def test_grader_rejection_names_the_parameters_given() -> None:
    with pytest.raises(TypeError, match=r"got \(sample, submission, threshold\)"):
        grader(_required_kw)


# --- load_function for custom files --------------------------------------------------------------------------


def write_module(tmp_path: Path, body: str, name: str = "my_graders.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


CUSTOM = """\
from evals_cli import grader


@grader
def mentions_port(sample, submission):
    return ("5432" in submission, "looked for 5432")


@grader
def counts_calls(sample, submission, trajectory):
    return len(trajectory.tool_calls) / 10


def not_decorated(sample, submission):
    return 1.0
"""


def test_load_custom_function_relative_to_base_dir(tmp_path: Path) -> None:
    write_module(tmp_path, CUSTOM)
    fn = load_function("my_graders.py:mentions_port", tmp_path)
    assert fn(gt(None), "port 5432") == (True, "looked for 5432")
    assert fn.__evals_grader__


def test_load_custom_function_in_a_subfolder_and_by_absolute_path(tmp_path: Path) -> None:
    (tmp_path / "graders").mkdir()
    path = write_module(tmp_path / "graders", CUSTOM)
    assert load_function("graders/my_graders.py:counts_calls", tmp_path).__evals_wants_trajectory__
    assert load_function(f"{path}:mentions_port", tmp_path) is not None  # absolute, inside the suite's folder
    with pytest.raises(ValueError, match="resolves outside the suite's folder"):  # code runs only from there
        load_function(f"{path}:mentions_port", tmp_path / "elsewhere")


def test_load_rejects_an_undecorated_function(tmp_path: Path) -> None:
    write_module(tmp_path, CUSTOM)
    with pytest.raises(ValueError, match=r"my_graders.py:not_decorated is not decorated with @evals_cli.grader"):
        load_function("my_graders.py:not_decorated", tmp_path)


def test_load_rejects_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"custom grader file nope.py not found"):
        load_function("nope.py:anything", tmp_path)


def test_load_rejects_a_missing_function(tmp_path: Path) -> None:
    write_module(tmp_path, CUSTOM)
    with pytest.raises(ValueError, match=r"my_graders.py has no function 'absent'"):
        load_function("my_graders.py:absent", tmp_path)


def test_load_reports_import_errors(tmp_path: Path) -> None:
    write_module(tmp_path, "raise RuntimeError('boom at import')\n", name="broken.py")
    with pytest.raises(ValueError, match=r"broken.py: importing failed: RuntimeError: boom at import"):
        load_function("broken.py:g", tmp_path)


def test_load_reports_a_wrong_signature_in_the_file(tmp_path: Path) -> None:
    write_module(tmp_path, "from evals_cli import grader\n\n@grader\ndef g(sample):\n    return 1.0\n",
                 name="bad_sig.py")
    with pytest.raises(ValueError, match=r"importing failed: TypeError: @grader g"):
        load_function("bad_sig.py:g", tmp_path)


def test_custom_function_does_not_shadow_a_builtin(tmp_path: Path) -> None:
    """An earlier version registered custom functions by bare name, replacing the built-in `contains`."""
    builtin = load_function("contains", tmp_path)
    write_module(tmp_path, "from evals_cli import grader\n\n@grader\ndef contains(sample, submission):\n"
                           "    return 0.0\n", name="shadow.py")
    custom = load_function("shadow.py:contains", tmp_path)
    assert custom is not builtin
    assert custom(gt("x"), "x") == 0.0
    assert load_function("contains", tmp_path) is builtin


# --- to_grade ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "score", "rationale"),
    [
        (Grade(score=0.3, rationale="as is"), 0.3, "as is"),
        (0.75, 0.75, "score 0.75"),
        (1, 1.0, "score 1"),
        (True, 1.0, "passed"),
        (False, 0.0, "failed"),
        ((0.5, "half right"), 0.5, "half right"),
        ((1, 42), 1.0, "42"),
        ((None, "could not tell"), None, "could not tell"),
    ],
)
def test_to_grade_accepts_convenient_types(value: Any, score: float | None, rationale: str) -> None:
    grade = to_grade(value, "f")
    assert isinstance(grade, Grade)
    assert grade.score == score
    assert grade.rationale == rationale


def test_to_grade_keeps_the_same_grade_object() -> None:
    grade = Grade(score=1.0)
    assert to_grade(grade, "f") is grade


@pytest.mark.parametrize("value", ["0.5", None, [0.5, "x"], (0.5,), ("0.5", "why"), {"score": 1}])
def test_to_grade_rejects_other_types(value: Any) -> None:
    with pytest.raises(TypeError, match="my_fn returned .*; return a Grade, a float, a bool or"):
        to_grade(value, "my_fn")


# --- graders through GradeContext --------------------------------------------------------------------------------


def traj(*names: str) -> Trajectory:
    return Trajectory(turns=[Turn(user="go", steps=[
        Step(tool_calls=[ToolCall(id=f"c{i}", name=n, arguments={}, result="ok") for i, n in enumerate(names)]),
        Step(content="The port is 5432."),
    ])])


def grade(g: Grader, sample: Sample, trajectory: Trajectory) -> Grade:
    ctx = GradeContext(sample, trajectory, trajectory, None, sample.ground_truth_for(None))
    return asyncio.run(g.grade(ctx))


def test_tool_grader_with_builtin_and_case_override(tmp_path: Path) -> None:
    sample = Sample(input="q", ground_truth="PORT IS 5432")
    extract = {"extractor": "pattern", "extractor_config": {"pattern": r"The (.*)\."}}
    insensitive = ToolGrader("a", ToolGraderSpec(function="exact_match", case_sensitive=False, **extract),
                             GraderContext(tmp_path))
    default = ToolGrader("b", ToolGraderSpec(function="exact_match", **extract), GraderContext(tmp_path))

    result = grade(insensitive, sample, traj())

    assert result.score == 1.0
    assert result.submission == "port is 5432"
    assert grade(default, sample, traj()).score == 0.0  # exact_match is case-sensitive by default


def test_tool_grader_passes_the_trajectory_to_three_parameter_functions(tmp_path: Path) -> None:
    write_module(tmp_path, CUSTOM)
    g = ToolGrader("n", ToolGraderSpec(function="my_graders.py:counts_calls"), GraderContext(tmp_path))
    assert grade(g, Sample(input="q"), traj("a", "b", "c")).score == 0.3


def test_a_score_outside_0_1_is_a_grading_error_not_a_score(tmp_path: Path) -> None:
    assert to_grade(5.0, "f").score is None and "outside [0, 1]" in (to_grade(5.0, "f").error or "")
    assert to_grade(-0.1, "f").score is None
    assert to_grade(1.0, "f").score == 1.0


def test_tool_grader_passes_the_trajectory_when_it_has_a_default(tmp_path: Path) -> None:
    """An earlier version counted only parameters without defaults and never passed the trajectory."""
    write_module(tmp_path, "from evals_cli import grader\n\n@grader\n"
                           "def g(sample, submission, trajectory=None):\n"
                           "    return trajectory is not None\n", name="opt_traj.py")
    g = ToolGrader("t", ToolGraderSpec(function="opt_traj.py:g"), GraderContext(tmp_path))
    assert grade(g, Sample(input="q"), traj("a")).score == 1.0


# --- ToolOrderGrader ----------------------------------------------------------------------------------------------


def order(tmp_path: Path, **spec: Any) -> ToolOrderGrader:
    return ToolOrderGrader("order", ToolOrderSpec(**spec), GraderContext(tmp_path))


def seq(*names: str) -> Trajectory:
    """One model step per call: a sequential trajectory (calls of one step are parallel, so unordered)."""
    return Trajectory(turns=[Turn(user="go", steps=[
        *[Step(tool_calls=[ToolCall(id=f"c{i}", name=n, arguments={}, result="ok")]) for i, n in enumerate(names)],
        Step(content="done"),
    ])])


def test_tool_order_exact_sequence(tmp_path: Path) -> None:
    sample = Sample(input="q", expected_tool_order=["list_files", "read_file"])
    result = grade(order(tmp_path), sample, traj("list_files", "read_file"))
    assert result.score == 1.0
    assert result.rationale == "called list_files → read_file in order"
    assert result.metadata["matched"] == 2


def test_tool_order_allows_extra_calls(tmp_path: Path) -> None:
    sample = Sample(input="q", expected_tool_order=["list_files", "read_file"])
    called = traj("search", "list_files", "search", "read_file", "list_files")
    assert grade(order(tmp_path), sample, called).score == 1.0


def test_tool_order_wrong_order_binary_and_fraction(tmp_path: Path) -> None:
    sample = Sample(input="q", expected_tool_order=["list_files", "read_file", "summarise"])
    called = traj("read_file", "list_files", "read_file")

    binary = grade(order(tmp_path), sample, called)
    fraction = grade(order(tmp_path, score="fraction"), sample, called)

    assert binary.score == 0.0
    assert fraction.score == pytest.approx(2 / 3)
    assert "matched 2/3" in binary.rationale
    assert "missing 'summarise'" in binary.rationale
    assert binary.metadata["called"] == ["read_file", "list_files", "read_file"]


def test_tool_order_no_calls(tmp_path: Path) -> None:
    sample = Sample(input="q", expected_tool_order=["list_files"])
    result = grade(order(tmp_path, score="fraction"), sample, traj())
    assert result.score == 0.0
    assert "missing 'list_files'; no tool calls were made" in result.rationale


def test_tool_order_globs(tmp_path: Path) -> None:
    sample = Sample(input="q", expected_tool_order=["list_*", "read_?ile"])
    assert grade(order(tmp_path), sample, seq("list_dir", "read_file")).score == 1.0
    assert grade(order(tmp_path), sample, seq("read_file", "list_dir")).score == 0.0
    # fnmatchcase: globs are case-sensitive
    assert grade(order(tmp_path), sample, seq("LIST_dir", "read_file")).score == 0.0


def test_tool_order_spec_expected_overrides_the_sample(tmp_path: Path) -> None:
    sample = Sample(input="q", expected_tool_order=["read_file"])
    g = order(tmp_path, expected=["search"])
    assert grade(g, sample, traj("search")).score == 1.0
    assert grade(g, sample, traj("read_file")).score == 0.0


@pytest.mark.parametrize("expected", [None, []])
def test_tool_order_nothing_expected_is_one(tmp_path: Path, expected: list[str] | None) -> None:
    sample = Sample(input="q", expected_tool_order=expected)
    result = grade(order(tmp_path), sample, traj("anything"))
    assert result.score == 1.0
    assert "nothing to check" in result.rationale


def test_tool_order_reads_the_whole_trajectory_across_turns(tmp_path: Path) -> None:
    two_turns = Trajectory(turns=[
        Turn(user="1", steps=[Step(tool_calls=[ToolCall(name="list_files")])]),
        Turn(user="2", steps=[Step(tool_calls=[ToolCall(name="read_file")])]),
    ])
    sample = Sample(input=["1", "2"], expected_tool_order=["list_files", "read_file"])
    assert grade(order(tmp_path), sample, two_turns).score == 1.0


# --- ToolsAvoidedGrader --------------------------------------------------------------------------------------------


def avoided(tmp_path: Path, *tools: str) -> ToolsAvoidedGrader:
    return ToolsAvoidedGrader("avoided", ToolsAvoidedSpec(tools=list(tools)), GraderContext(tmp_path))


def test_tools_avoided_passes_when_none_called(tmp_path: Path) -> None:
    sample = Sample(input="q", forbidden_tools=["delete_file"])
    result = grade(avoided(tmp_path, "run_command"), sample, traj("read_file"))
    assert result.score == 1.0
    assert result.rationale == "avoided delete_file, run_command"


def test_tools_avoided_sample_forbidden_tool_called(tmp_path: Path) -> None:
    sample = Sample(input="q", forbidden_tools=["delete_file"])
    result = grade(avoided(tmp_path), sample, traj("read_file", "delete_file"))
    assert result.score == 0.0
    assert result.rationale == "called forbidden tool(s): delete_file"
    assert result.metadata["violations"] == ["delete_file"]


def test_tools_avoided_spec_tools_are_added_to_the_sample(tmp_path: Path) -> None:
    sample = Sample(input="q", forbidden_tools=["delete_file"])
    result = grade(avoided(tmp_path, "run_command"), sample, traj("run_command", "run_command"))
    assert result.score == 0.0
    assert result.rationale == "called forbidden tool(s): run_command ×2"


def test_tools_avoided_globs(tmp_path: Path) -> None:
    g = avoided(tmp_path, "delete_*", "drop_?able")
    sample = Sample(input="q")
    hit = grade(g, sample, traj("read_file", "delete_user", "drop_table", "delete_user"))
    assert hit.score == 0.0
    assert hit.rationale == "called forbidden tool(s): delete_user ×2, drop_table"
    assert grade(g, sample, traj("read_file", "undelete_user")).score == 1.0


def test_tools_avoided_nothing_forbidden(tmp_path: Path) -> None:
    result = grade(avoided(tmp_path), Sample(input="q"), traj("delete_file"))
    assert result.score == 1.0
    assert "no forbidden tools" in result.rationale


# --- ascii_printable_only (letta-evals' built-in) ------------------------------------------------------------


@pytest.mark.parametrize(("submission", "score"), [
    (" /\\_/\\\n( o.o )\r\n > ^ <", 1.0),  # line breaks are allowed: ASCII art spans lines
    ("~ all 95: !\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}", 1.0),
    ("cat 🐱", 0.0),
    ("tab\there", 0.0),  # a tab is not one of the 95 printable characters
    ("><(((º>", 0.0),  # º is not ASCII
    ("bell\x07", 0.0),
])
def test_ascii_printable_only(submission: str, score: float) -> None:
    grade = ascii_printable_only(Sample(input="draw"), submission)
    assert grade.score == score and grade.applicable


def test_ascii_printable_only_names_the_characters_and_treats_empty_as_not_checked() -> None:
    grade = ascii_printable_only(Sample(input="draw"), "a🐱b\tcº")
    assert "'\\t' (U+0009)" in grade.rationale and "U+1F431" in grade.rationale and "U+00BA" in grade.rationale
    empty = ascii_printable_only(Sample(input="draw"), "")
    assert empty.score == 1.0 and not empty.applicable  # letta-evals' 1.0, but marked as nothing checked
    assert BUILTINS["ascii_printable_only"] is ascii_printable_only


# --- custom extractors (extractor: file.py:func) -----------------------------------------------------------------


EXTRACTORS_PY = """\
def second_word(trajectory, config):
    texts = [s.content for t in trajectory.turns for s in t.steps if s.content]
    words = texts[-1].split() if texts else []
    index = config.get("index", 1)
    return words[index] if len(words) > index else ""


def with_state(trajectory, config, agent_state):
    return "state=" + repr(agent_state)


def not_text(trajectory, config):
    return 42


def broken(trajectory, config):
    raise RuntimeError("no JSON in the reply")


def one_arg(trajectory):
    return ""


async def is_async(trajectory, config):
    return ""


NOT_A_FUNCTION = "x"
"""


def custom_spec(ref: str, **config: Any) -> ToolGraderSpec:
    return ToolGraderSpec(function="contains", extractor=ref, extractor_config=config)


def test_a_custom_extractor_is_bound_to_its_resolved_file_and_called(tmp_path: Path) -> None:
    write_module(tmp_path, EXTRACTORS_PY, "pick.py")
    spec = custom_spec("pick.py:second_word", index=3)
    bound = bind_extractor(spec, tmp_path)
    assert spec.extractor == "pick.py:second_word"  # the suite's spec keeps what the user wrote
    assert bound.extractor == f"{(tmp_path / 'pick.py').resolve()}:second_word"
    assert extract(bound.extractor, traj(), bound.extractor_config) == "5432."  # "The port is 5432."
    three = bind_extractor(custom_spec("pick.py:with_state"), tmp_path)
    assert extract(three.extractor, traj(), {}) == "state=None"  # letta-evals' agent_state: None here
    assert bind_extractor(custom_spec("last_assistant"), tmp_path).extractor == "last_assistant"


def test_two_suites_custom_extractors_of_the_same_name_never_meet(tmp_path: Path) -> None:
    for folder, word in (("a", "first"), ("b", "second")):
        (tmp_path / folder).mkdir()
        write_module(tmp_path / folder, f"def pick(trajectory, config):\n    return {word!r}\n", "x.py")
    a = bind_extractor(custom_spec("x.py:pick"), tmp_path / "a")
    b = bind_extractor(custom_spec("x.py:pick"), tmp_path / "b")
    assert (extract(a.extractor, traj(), {}), extract(b.extractor, traj(), {})) == ("first", "second")


@pytest.mark.parametrize(("ref", "expected"), [
    ("pick.py:one_arg", "extractor pick.py:one_arg takes (trajectory); it must be a function (trajectory, config)"),
    ("pick.py:is_async", "extractor pick.py:is_async is async"),
    ("pick.py:NOT_A_FUNCTION", "is not a function"),
    ("pick.py:missing", "pick.py has no function 'missing'"),
    ("nope.py:f", "custom extractor file nope.py not found (relative to the suite file)"),
])
def test_custom_extractor_signature_is_checked_at_load(tmp_path: Path, ref: str, expected: str) -> None:
    write_module(tmp_path, EXTRACTORS_PY, "pick.py")
    with pytest.raises(ValueError, match=re.escape(expected)):
        bind_extractor(custom_spec(ref), tmp_path)


def test_a_custom_extractor_that_raises_or_returns_no_text_is_a_grade_error(tmp_path: Path) -> None:
    write_module(tmp_path, EXTRACTORS_PY, "pick.py")
    for ref, expected in (("pick.py:not_text", "extractor pick.py:not_text returned int; an extractor returns "
                                                "the text to grade (str)"),
                          ("pick.py:broken", "no JSON in the reply")):
        bound = bind_extractor(custom_spec(ref), tmp_path)
        with pytest.raises((TypeError, RuntimeError), match=re.escape(expected)):
            extract(bound.extractor, traj(), {})


LETTA_STYLE = """\
import re

from letta_evals.decorators import extractor, grader
from letta_evals.extractors.builtin import last_assistant, pattern
from letta_evals.extractors.utils import flatten_content, get_assistant_messages
from letta_evals.models import GradeResult, Sample


@extractor
def number(trajectory, config):
    return pattern(trajectory, {"pattern": r"\\d+"}) or last_assistant(trajectory, config)


@extractor
def first_text(trajectory, config):
    return flatten_content(get_assistant_messages(trajectory)[0].content)


@grader
def has_port(sample: Sample, submission: str) -> GradeResult:
    return GradeResult(score=float(submission == sample.ground_truth), rationale="compared",
                       metadata={"seen": submission})
"""


def test_a_file_written_for_letta_evals_loads_with_the_stand_ins(tmp_path: Path) -> None:
    write_module(tmp_path, LETTA_STYLE, "letta_style.py")
    number = bind_extractor(custom_spec("letta_style.py:number"), tmp_path)
    assert extract(number.extractor, traj(), {}) == "5432"
    first = bind_extractor(custom_spec("letta_style.py:first_text"), tmp_path)
    assert extract(first.extractor, traj(), {}) == "The port is 5432."
    fn = load_function("letta_style.py:has_port", tmp_path)
    grade_ = to_grade(fn(Sample(input="q", ground_truth="5432"), "5432"), "has_port")
    assert (grade_.score, grade_.rationale, grade_.metadata) == (1.0, "compared", {"seen": "5432"})


def test_what_needs_a_letta_server_gets_a_hint_instead_of_a_bare_module_error(tmp_path: Path) -> None:
    write_module(tmp_path, "from letta_client.types import AgentState\n", "server.py")
    with pytest.raises(ValueError, match="not for what needs a Letta server; drop that import"):
        bind_extractor(custom_spec("server.py:anything"), tmp_path)
    write_module(tmp_path, "from letta_evals.models import AgentState\n", "state.py")
    with pytest.raises(ValueError, match="cannot import name 'AgentState'"):
        bind_extractor(custom_spec("state.py:anything"), tmp_path)


# --- custom rewards (reward: {kind: custom, function: file.py:func}) -------------------------------------------


REWARDS_PY = """\
def good(ctx):
    return ctx.grades["quality"].score


def two(a, b):
    return 0.0


def defaults_ok(ctx, weight=0.5):
    return weight


async def later(ctx):
    return 1.0
"""


def test_load_reward_checks_one_argument(tmp_path: Path) -> None:
    write_module(tmp_path, REWARDS_PY, "rewards.py")
    assert load_reward("rewards.py:good", tmp_path).__name__ == "good"
    assert load_reward("rewards.py:defaults_ok", tmp_path).__name__ == "defaults_ok"
    with pytest.raises(ValueError, match=re.escape("rewards.py:two takes (a, b); it must take one argument")):
        load_reward("rewards.py:two", tmp_path)
    with pytest.raises(ValueError, match="is async"):
        load_reward("rewards.py:later", tmp_path)
    with pytest.raises(ValueError, match="must be 'path/to/file.py:function'"):
        load_reward("good", tmp_path)


class _Output:
    def __init__(self, score: float, metadata: dict[str, Any]) -> None:
        self.score, self.metadata = score, metadata


@pytest.mark.parametrize(("value", "expected"), [
    (0.5, (0.5, "")), (1, (1.0, "")), ((0.25, "why"), (0.25, "why")), ({"score": 0.75}, (0.75, "")),
    (_Output(0.0, {"reason": "ascii"}), (0.0, "{'reason': 'ascii'}")),
])
def test_reward_score_accepts_letta_evals_return_shapes(value: Any, expected: tuple[float, str]) -> None:
    assert reward_score(value, "r.py:f") == expected


@pytest.mark.parametrize(("value", "expected"), [
    (1.5, "reward r.py:f returned 1.5, outside [0, 1]"), (float("nan"), "returned nan, outside [0, 1]"),
    (None, "reward r.py:f returned NoneType"), (True, "returned bool"), ({"reward": 1}, "a dict without 'score'"),
    ("0.5", "returned str"),
])
def test_reward_score_refuses_what_is_not_a_score(value: Any, expected: str) -> None:
    with pytest.raises((TypeError, ValueError), match=re.escape(expected)):
        reward_score(value, "r.py:f")


def test_the_stand_in_decorators_check_what_letta_evals_checks(tmp_path: Path) -> None:
    write_module(tmp_path, "from letta_evals.decorators import grader\n\n\n@grader\ndef g(s, sub):\n"
                           "    return 1.0\n", "bad_grader.py")
    with pytest.raises(ValueError, match=re.escape("importing failed: TypeError: Grader g must have parameters "
                                                   "(sample, submission), got ['s', 'sub']")):
        load_function("bad_grader.py:g", tmp_path)
    write_module(tmp_path, "from letta_evals import reward_composer\n\n\n@reward_composer\ndef r(context):\n"
                           "    return 1.0\n", "bad_reward.py")
    with pytest.raises(ValueError, match="Reward composer r must have one parameter named ctx"):
        load_reward("bad_reward.py:r", tmp_path)
