"""tool_args: expected calls with arguments, per-argument matchers, per-tool defaults, rationales."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evals_cli.graders.arg_match import matchers_for, merge
from evals_cli.graders.base import GraderContext
from evals_cli.graders.kinds.tool_args import ToolArgsGrader, ToolArgsSpec
from evals_cli.models.grader_specs.fields import ArgMatch, ExpectedCall
from evals_cli.models.sample import Sample
from tests.trajectory_builders import c, run, traj


def args_grader(**spec: Any) -> ToolArgsGrader:
    return ToolArgsGrader("args", ToolArgsSpec.model_validate(spec), GraderContext(Path(".")))


def one(value: Any, matcher: dict[str, Any] | None = None, expected: Any = "__none__") -> float | None:
    """Grade a single read_file call whose `x` argument is `value` against one expected call."""
    call: dict[str, Any] = {"tool": "t"}
    if expected != "__none__":
        call["args"] = {"x": expected}
    if matcher is not None:
        call["match"] = {"x": matcher}
    return run(args_grader(calls=[call]), traj(c("t", {"x": value}))).score


# --- the basics -----------------------------------------------------------------------------------------------


def test_exact_arguments_match() -> None:
    g = args_grader(calls=[{"tool": "read_file", "args": {"path": ".env"}}])
    result = run(g, traj(c("list_files", {"directory": "."}), c("read_file", {"path": ".env"})))
    assert result.score == 1.0
    assert result.rationale == 'all 1 expected call(s) matched: read_file(path=".env") = calls[1]'
    assert result.metadata["calls"] == [{"expected": 'read_file(path=".env")', "call_index": 1, "problem": None}]


def test_rationale_names_the_first_mismatching_argument_with_expected_and_actual() -> None:
    g = args_grader(calls=[{"tool": "list_files", "args": {"directory": "config"}},
                           {"tool": "read_file", "args": {"path": "config/server.yaml", "encoding": "utf-8"}}])
    trajectory = traj(c("list_files", {"directory": "config"}), c("read_file", {"path": "config/logging.yaml"}))
    result = run(g, trajectory)
    assert result.score == 0.5
    assert result.rationale == ('1/2 expected calls matched; read_file(path="config/server.yaml", encoding="utf-8"): '
                                "nearest calls[1]: argument 'path' expected 'config/server.yaml', "
                                "got 'config/logging.yaml'")
    assert result.metadata["calls"][1]["call_index"] is None


def test_missing_argument_and_tool_never_called() -> None:
    g = args_grader(calls=[{"tool": "read_file", "args": {"path": ".env"}}, {"tool": "http_get"}])
    result = run(g, traj(c("read_file", {"file": ".env"})))
    assert result.score == 0.0
    assert "argument 'path' expected '.env', but it is missing" in result.rationale
    assert result.rationale.endswith("(+1 more)")
    assert result.metadata["calls"][1]["problem"] == "http_get(): http_get was never called"


def test_binary_score() -> None:
    g = args_grader(calls=[{"tool": "a"}, {"tool": "b"}], score="binary")
    assert run(g, traj("a")).score == 0.0
    assert run(g, traj("b", "a")).score == 1.0


def test_nothing_expected_is_one() -> None:
    result = run(args_grader(), traj("a"))
    assert (result.score, result.rationale) == (1.0, "no expected calls: nothing to check")
    assert run(args_grader(calls=[]), traj()).score == 1.0


def test_each_expected_call_needs_its_own_actual_call() -> None:
    g = args_grader(calls=[{"tool": "read_file", "args": {"path": ".env"}}] * 2)
    result = run(g, traj(c("read_file", {"path": ".env"})))
    assert result.score == 0.5
    assert "already match other expected calls" in result.rationale
    assert run(g, traj([c("read_file", {"path": ".env"}), c("read_file", {"path": ".env"})])).score == 1.0


def test_assignment_is_a_maximum_matching() -> None:
    """The loose expectation must not take the only call the strict one fits."""
    g = args_grader(calls=[{"tool": "read_*"}, {"tool": "read_file", "args": {"path": ".env"}}])
    trajectory = traj(c("read_file", {"path": ".env"}), c("read_dir", {"path": "src"}))
    assert run(g, trajectory).score == 1.0


def test_unparseable_arguments_never_match_and_are_explained() -> None:
    g = args_grader(calls=[{"tool": "read_file", "args": {"path": ".env"}}])
    result = run(g, traj(c("read_file", raw='{"path": ".env"')))
    assert result.score == 0.0
    assert "calls[0] had unparseable arguments (JSONDecodeError: bad)" in result.rationale


def test_parallel_calls_match_in_any_order() -> None:
    g = args_grader(calls=[{"tool": "read_file", "args": {"path": "b"}}, {"tool": "read_file", "args": {"path": "a"}}])
    assert run(g, traj([c("read_file", {"path": "a"}), c("read_file", {"path": "b"})])).score == 1.0


def test_unicode_tool_names_and_values() -> None:
    g = args_grader(calls=[{"tool": "検索", "args": {"q": "Zürich"}, "match": {"q": {"case_insensitive": True}}}])
    assert run(g, traj(c("検索", {"q": "ZÜRICH"}))).score == 1.0
    assert "got 'Zurich'" in run(g, traj(c("検索", {"q": "Zurich"}))).rationale


# --- matchers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "matcher", "expected", "score"),
    [
        (".env", None, ".env", 1.0),
        ("./.env", None, ".env", 0.0),
        (True, None, 1, 0.0),  # JSON-strict: true is not 1
        (1, None, True, 0.0),
        (3.0, None, 3, 1.0),  # the same JSON number
        ("anything", {"ignore": True}, ".env", 1.0),
        ("./.env", {"regex": r"^(\./)?\.env$"}, "__none__", 1.0),
        ("src/.env.bak", {"regex": r"^(\./)?\.env$"}, "__none__", 0.0),
        (".ENV", {"regex": r"^\.env$", "case_insensitive": True}, "__none__", 1.0),
        (8080, {"regex": r"^80\d\d$"}, "__none__", 1.0),  # non-strings are matched as their JSON text
        ("SELECT * FROM users", {"contains": "from users", "case_insensitive": True}, "__none__", 1.0),
        ("SELECT * FROM users", {"contains": "from users"}, "__none__", 0.0),
        (["a", "b"], {"contains": "b"}, "__none__", 1.0),  # an element of a list
        (["a", "b"], {"contains": "c"}, "__none__", 0.0),
        ("./.env", {"one_of": [".env", "./.env"]}, "__none__", 1.0),
        ("env", {"one_of": [".env", "./.env"]}, "__none__", 0.0),
        (0.305, {"tolerance": 0.01}, 0.3, 1.0),
        (0.32, {"tolerance": 0.01}, 0.3, 0.0),
        ({"a": 1, "b": {"c": [1, 2, 3], "d": 0}}, {"subset": True}, {"b": {"c": [3, 1]}}, 1.0),
        ({"a": 1}, {"subset": True}, {"a": 1, "b": 2}, 0.0),
        ({"a": 1, "b": 2}, None, {"a": 1}, 0.0),  # without subset, objects are equal or not
        ("x", {"exact": "x"}, "ignored-because-exact-wins", 1.0),
        (None, {"exact": None}, "__none__", 1.0),  # `exact: null` expects null
        ("something", {}, "__none__", 1.0),  # no comparison and no value: presence only
        ("HELLO", {"case_insensitive": True}, "hello", 1.0),
        ("Straße", {"case_insensitive": True}, "STRASSE", 1.0),  # casefold, not lower()
    ],
)
def test_matchers(value: Any, matcher: dict[str, Any] | None, expected: Any, score: float) -> None:
    assert one(value, matcher, expected) == score


def test_ignore_accepts_an_absent_argument_but_presence_only_does_not() -> None:
    ignore = args_grader(calls=[{"tool": "t", "match": {"x": {"ignore": True}}}])
    present = args_grader(calls=[{"tool": "t", "match": {"x": {}}}])
    assert run(ignore, traj(c("t", {}))).score == 1.0
    assert run(present, traj(c("t", {}))).score == 0.0
    assert "argument 'x' expected to be present, but it is missing" in run(present, traj(c("t", {}))).rationale


@pytest.mark.parametrize(
    ("matcher", "wanted"),
    [
        ({"regex": "^a$"}, "to match regex '^a$'"),
        ({"contains": "a", "case_insensitive": True}, "to contain 'a' (ignoring case)"),
        ({"one_of": ["a", 1]}, 'one of ["a", 1]'),
        ({"tolerance": 0.5}, "3 ± 0.5"),
        ({"subset": True}, "a superset of 3"),
    ],
)
def test_mismatch_describes_the_matcher(matcher: dict[str, Any], wanted: str) -> None:
    g = args_grader(calls=[{"tool": "t", "args": {"x": 3}, "match": {"x": matcher}}])
    assert f"argument 'x' expected {wanted}, got 'zzz'" in run(g, traj(c("t", {"x": "zzz"}))).rationale


def test_extra_arguments_allowed_unless_forbidden() -> None:
    call = {"tool": "read_file", "args": {"path": ".env"}}
    trajectory = traj(c("read_file", {"path": ".env", "encoding": "utf-8"}))
    assert run(args_grader(calls=[call]), trajectory).score == 1.0
    strict = run(args_grader(calls=[call], allow_extra_args=False), trajectory)
    assert strict.score == 0.0
    assert "unexpected argument 'encoding' = 'utf-8'" in strict.rationale


@pytest.mark.parametrize("matcher", [{"exact": 1, "regex": "x"}, {"contains": "a", "one_of": ["a"]},
                                     {"ignore": True, "exact": None}, {"regex": "("}, {"tolerance": -1},
                                     {"fuzzy": True}])
def test_invalid_matchers_are_rejected(matcher: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ArgMatch.model_validate(matcher)


# --- defaults and overrides -----------------------------------------------------------------------------------


def test_per_tool_defaults_apply_and_calls_override_them() -> None:
    g = args_grader(defaults={"read_file": {"path": {"case_insensitive": True}}},
                    calls=[{"tool": "read_file", "args": {"path": "README.md"}},
                           {"tool": "read_file", "args": {"path": "Makefile"},
                            "match": {"path": {"case_insensitive": False}}}])
    assert run(g, traj(c("read_file", {"path": "readme.MD"}), c("read_file", {"path": "Makefile"}))).score == 1.0
    assert run(g, traj(c("read_file", {"path": "readme.MD"}), c("read_file", {"path": "makefile"}))).score == 0.5


def test_defaults_by_glob_and_in_yaml_order() -> None:
    g = args_grader(defaults={"*": {"request_id": {"ignore": True}, "q": {"regex": "^x"}},
                              "search_*": {"q": {"contains": "needle"}}},
                    calls=[{"tool": "search_docs", "args": {"q": "a needle here", "request_id": "r-1"}}])
    assert run(g, traj(c("search_docs", {"q": "hay needle", "request_id": "r-999"}))).score == 1.0


def test_defaults_never_add_an_argument_to_check() -> None:
    g = args_grader(defaults={"read_file": {"mode": {"regex": "^r$"}}}, calls=[{"tool": "read_file", "args": {"path": "a"}}])
    assert run(g, traj(c("read_file", {"path": "a", "mode": "w"}))).score == 1.0


def test_merge_rules() -> None:
    base = ArgMatch(regex="^a", case_insensitive=True, tolerance=1)
    merged = merge(base, ArgMatch(exact="A"))
    assert merged.comparison == "exact" and merged.regex is None  # a new comparison replaces the old one
    assert merged.case_insensitive and merged.tolerance == 1  # modifiers stay unless overridden
    assert merge(base, ArgMatch(case_insensitive=False)).regex == "^a"
    call = ExpectedCall(tool="t", args={"a": 1}, match={"b": ArgMatch(ignore=True)})
    assert list(matchers_for(call, {})) == ["a", "b"]


# --- per-sample expectations ------------------------------------------------------------------------------------


def test_expected_calls_from_sample_metadata() -> None:
    sample = Sample(input="q", metadata={"expected_calls": [{"tool": "read_file", "args": {"path": ".env"},
                                                             "match": {"path": {"case_insensitive": True}}}]})
    assert run(args_grader(), traj(c("read_file", {"path": ".ENV"})), sample).score == 1.0
    # the spec's calls win over the sample's
    spec_wins = args_grader(calls=[{"tool": "list_files"}])
    assert run(spec_wins, traj(c("read_file", {"path": ".ENV"})), sample).score == 0.0


@pytest.mark.parametrize(("raw", "message"), [
    ("read_file", "sample metadata.expected_calls"),
    ([{"args": {}}], "sample metadata.expected_calls.0.tool: "),  # the field is named; the rest is pydantic's
    ([{"tool": "t", "match": {"x": {"regex": "("}}}], "is not valid"),
])
def test_invalid_sample_expectation_is_a_grading_error_not_a_zero(raw: Any, message: str) -> None:
    result = run(args_grader(), traj("t"), Sample(input="q", metadata={"expected_calls": raw}))
    assert result.score is None
    assert message in (result.error or "")


def test_check_sample_reports_a_bad_expectation_before_the_run() -> None:
    bad = Sample(id="s1", input="q", metadata={"expected_calls": [{"args": {}}]})
    (problem,) = args_grader().check_sample(bad)
    assert problem.startswith("sample 's1': metadata.expected_calls.0.tool: ")
    assert problem.endswith(", needed by grader args (tool_args)")
    assert args_grader().check_sample(Sample(input="q", metadata={"expected_calls": [{"tool": "t"}]})) == []
    assert args_grader(calls=[{"tool": "t"}]).check_sample(bad) == []  # the spec's calls are used instead
