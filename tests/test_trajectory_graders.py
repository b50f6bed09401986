"""tool_order in its five modes (binary and fraction), parallel steps, globs; the shared call helpers; the
new grader kinds as a suite declares them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evals_cli.graders.base import GraderContext
from evals_cli.graders.calls import canonical_args, describe_groups, label, max_matching, step_groups
from evals_cli.graders.kinds.trajectory import ToolOrderGrader, ToolOrderSpec, grouped_lcs, grouped_prefix
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory
from tests.trajectory_builders import c, run, traj, turn

MODES = ["strict", "subsequence", "unordered", "subset", "superset"]


def order(mode: str = "subsequence", score: str = "binary", expected: list[str] | None = None) -> ToolOrderGrader:
    return ToolOrderGrader("order", ToolOrderSpec(mode=mode, score=score, expected=expected), GraderContext(Path(".")))  # type: ignore[arg-type]


def scores(expected: list[str] | None, trajectory: Trajectory, score: str = "binary") -> dict[str, float | None]:
    sample = Sample(input="q", expected_tool_order=expected)
    return {mode: run(order(mode, score), trajectory, sample).score for mode in MODES}


# --- the five modes, binary ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("calls", "expected_scores"),
    [
        (["A", "B"], {"strict": 1, "subsequence": 1, "unordered": 1, "subset": 1, "superset": 1}),
        (["B", "A"], {"strict": 0, "subsequence": 0, "unordered": 1, "subset": 1, "superset": 1}),
        (["A", "X", "B"], {"strict": 0, "subsequence": 1, "unordered": 0, "subset": 0, "superset": 1}),
        (["A"], {"strict": 0, "subsequence": 0, "unordered": 0, "subset": 1, "superset": 0}),
        # agentevals matches each expected call to one call: a second B is beyond the expected list
        (["A", "B", "B"], {"strict": 0, "subsequence": 1, "unordered": 0, "subset": 0, "superset": 1}),
        ([], {"strict": 0, "subsequence": 0, "unordered": 0, "subset": 1, "superset": 0}),
    ],
)
def test_modes_binary(calls: list[str], expected_scores: dict[str, int]) -> None:
    assert scores(["A", "B"], traj(*calls)) == expected_scores


# --- fraction: each mode's documented formula -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "calls", "fractions"),
    [
        # one wrong call in the middle: the plan stops at A; LCS 2 of 3; matching 2 of 3; 2 of 3 calls inside
        (["A", "B", "C"], ["A", "X", "C"],
         {"strict": 2 / 3, "subsequence": 1 / 3, "unordered": 2 / 3, "subset": 2 / 3, "superset": 2 / 3}),
        # two extra calls: strict and unordered divide by the longer side, subsequence/superset by expected
        (["A", "B"], ["A", "B", "X", "Y"],
         {"strict": 2 / 4, "subsequence": 1.0, "unordered": 2 / 4, "subset": 2 / 4, "superset": 1.0}),
        # reversed: only A is in order (at the end); the multiset is the same
        (["A", "B", "C"], ["C", "B", "A"],
         {"strict": 1 / 3, "subsequence": 1 / 3, "unordered": 1.0, "subset": 1.0, "superset": 1.0}),
        # the first step skipped: subsequence counts the in-order prefix (0), strict the LCS (B, C)
        (["A", "B", "C"], ["B", "C"],
         {"strict": 2 / 3, "subsequence": 0.0, "unordered": 2 / 3, "subset": 1.0, "superset": 2 / 3}),
        # the prefix continues past extra calls and inside parallel steps
        (["A", "B", "C", "D"], ["X", "A", "Y", "C", "B"],
         {"strict": 2 / 5, "subsequence": 2 / 4, "unordered": 3 / 5, "subset": 3 / 5, "superset": 3 / 4}),
    ],
)
def test_modes_fraction(expected: list[str], calls: list[str], fractions: dict[str, float]) -> None:
    got = scores(expected, traj(*calls), score="fraction")
    assert got == pytest.approx(fractions)


def test_fraction_is_never_above_binary_truth() -> None:
    """A complete match is 1.0 in both scores; an incomplete one is < 1 in fraction and 0 in binary."""
    for calls in (["A", "B"], ["B", "A"], ["A"], ["A", "X", "B"]):
        binary = scores(["A", "B"], traj(*calls))
        fraction = scores(["A", "B"], traj(*calls), score="fraction")
        for mode in MODES:
            assert (binary[mode] == 1.0) == (fraction[mode] == 1.0), (mode, calls)


# --- parallel calls: one step is an unordered group ------------------------------------------------------------


def test_parallel_calls_match_in_any_order_within_the_step() -> None:
    parallel = traj(["read_file", "list_files"])
    sample = Sample(input="q", expected_tool_order=["list_files", "read_file"])
    assert run(order("strict"), parallel, sample).score == 1.0
    assert run(order("subsequence"), parallel, sample).score == 1.0
    # the same calls in two steps, in the wrong order, are wrong
    sequential = traj("read_file", "list_files")
    assert run(order("strict"), sequential, sample).score == 0.0
    assert run(order("subsequence"), sequential, sample).score == 0.0


def test_parallel_group_may_sit_anywhere_in_the_sequence() -> None:
    sample = Sample(input="q", expected_tool_order=["A", "B", "C"])
    assert run(order("strict"), traj(["B", "A"], "C"), sample).score == 1.0
    assert run(order("strict"), traj("A", ["C", "B"]), sample).score == 1.0
    assert run(order("subsequence"), traj(["A", "X"], "B", ["Y", "C"]), sample).score == 1.0


def test_parallel_group_does_not_reorder_across_steps() -> None:
    sample = Sample(input="q", expected_tool_order=["A", "B", "C"])
    strict = run(order("strict"), traj(["A", "C"], "B"), sample)
    assert strict.score == 0.0
    assert "parallel calls 1-2: expected A + B, got A + C" in strict.rationale
    # subsequence: A from the group, then B; C was in the earlier step, so the in-order prefix is A, B
    fraction = run(order("subsequence", "fraction"), traj(["A", "C"], "B"), sample)
    assert fraction.score == pytest.approx(2 / 3)


def test_grouped_prefix_takes_the_longest_stretch_per_group() -> None:
    names = ["B", "A", "C", "D"]
    assert grouped_prefix(["A", "B", "C", "D"], names, [[0, 1], [2], [3]]) == 4
    assert grouped_prefix(["A", "B", "C"], names, [[2], [0, 1]]) == 2  # C came before its turn
    assert grouped_prefix(["A"], [], []) == 0
    assert grouped_prefix([], names, [[0]]) == 0


def test_grouped_lcs_indices() -> None:
    names = ["A", "C", "B"]
    assert grouped_lcs(["A", "B", "C"], names, [[0], [1], [2]]) in ([0, 1], [0, 2])  # A, C or A, B
    assert grouped_lcs(["A", "B", "C"], names, [[0, 1, 2]]) == [0, 1, 2]  # one parallel step: any order
    assert grouped_lcs([], names, [[0], [1], [2]]) == []
    assert grouped_lcs(["A"], [], []) == []


# --- rationales say why ----------------------------------------------------------------------------------------


def test_strict_rationales_point_at_the_first_divergence() -> None:
    sample = Sample(input="q", expected_tool_order=["A", "B"])
    assert "call 2: expected B, got X" in run(order("strict"), traj("A", "X"), sample).rationale
    assert "missing 'B' after the last call" in run(order("strict"), traj("A"), sample).rationale
    extra = run(order("strict"), traj("A", "B", "Z"), sample).rationale
    assert "unexpected extra call(s) Z after the 2 expected" in extra
    assert run(order("strict"), traj("A", "B"), sample).rationale == "called exactly A → B"


def test_unordered_subset_superset_rationales() -> None:
    sample = Sample(input="q", expected_tool_order=["A", "B", "C"])
    unordered = run(order("unordered"), traj("A", "X", "B"), sample).rationale
    assert unordered == "expected A, B, C in any order; missing 'C'; unexpected X"
    assert run(order("superset"), traj("B"), sample).rationale == "matched 1/3, missing 'A', 'C'; calls: B"
    subset = run(order("subset"), traj("A", "X", "X", "Y"), sample)
    assert subset.rationale == ("called tool(s) beyond the expected A, B, C (each expected entry matches one call): "
                                "X ×2, Y")
    assert subset.metadata["matched"] == 1
    assert run(order("subset"), traj(), sample).rationale == "no tool calls, so none beyond A, B, C"


def test_subsequence_rationale_shows_the_calls_with_parallel_steps() -> None:
    sample = Sample(input="q", expected_tool_order=["A", "B", "C"])
    result = run(order("subsequence"), traj("A", ["B", "X"]), sample)
    assert result.rationale == "expected A → B → C; matched 2/3, missing 'C'; calls: A → {B, X}"
    assert result.metadata == {"called": ["A", "B", "X"], "expected": ["A", "B", "C"], "matched": 2,
                               "mode": "subsequence"}


# --- nothing to check, empty expectations ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_no_expectation_is_one_in_every_mode(mode: str) -> None:
    result = run(order(mode), traj("anything"), Sample(input="q"))
    assert result.score == 1.0
    assert result.rationale == "no expected tool order: nothing to check"


@pytest.mark.parametrize(("mode", "score_with_calls"),
                         [("strict", 0.0), ("unordered", 0.0), ("subset", 0.0), ("subsequence", 1.0), ("superset", 1.0)])
def test_an_empty_expected_list_means_no_calls_where_the_mode_limits_calls(mode: str, score_with_calls: float) -> None:
    sample = Sample(input="q", expected_tool_order=[])
    assert run(order(mode), traj("read_file"), sample).score == score_with_calls
    assert run(order(mode), traj(), sample).score == 1.0


def test_empty_expected_strict_rationales() -> None:
    sample = Sample(input="q", expected_tool_order=[])
    assert run(order("strict"), traj(), sample).rationale == "no tool calls, as expected"
    assert "unexpected extra call(s) read_file after the 0 expected" in run(order("strict"), traj("read_file"),
                                                                           sample).rationale


# --- globs, unicode, turns ---------------------------------------------------------------------------------------


def test_globs_use_a_maximum_matching_not_a_greedy_one() -> None:
    """Greedy would give `read_*` the read_file that `read_file` needs, then fail."""
    sample = Sample(input="q", expected_tool_order=["read_*", "read_file"])
    for mode in ("unordered", "superset", "strict", "subsequence"):
        assert run(order(mode), traj(["read_file", "read_dir"]), sample).score == 1.0, mode


def test_unicode_tool_names_and_globs() -> None:
    sample = Sample(input="q", expected_tool_order=["читать_*", "検索"])
    assert run(order("strict"), traj("читать_файл", "検索"), sample).score == 1.0
    wrong = run(order("strict"), traj("検索", "читать_файл"), sample)
    assert wrong.score == 0.0
    assert "call 1: expected читать_*, got 検索" in wrong.rationale


def test_strict_reads_the_whole_trajectory_across_turns() -> None:
    two_turns = Trajectory(turns=[turn("list_files", user="1"), turn("read_file", user="2")])
    sample = Sample(input=["1", "2"], expected_tool_order=["list_files", "read_file"])
    assert run(order("strict"), two_turns, sample).score == 1.0


def test_spec_expected_overrides_the_sample_in_every_mode() -> None:
    sample = Sample(input="q", expected_tool_order=["read_file"])
    for mode in MODES:
        assert run(order(mode, expected=["search"]), traj("search"), sample).score == 1.0, mode


def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValidationError, match="strict"):
        ToolOrderSpec(mode="exact")  # type: ignore[arg-type]


# --- shared call helpers -------------------------------------------------------------------------------------------


def test_canonical_args_ignores_key_order_and_keeps_raw_text() -> None:
    assert canonical_args(c("t", {"b": 1, "a": "é"})) == canonical_args(c("t", {"a": "é", "b": 1}))
    assert canonical_args(c("t", {"a": "é"})) == '{"a": "é"}'
    assert canonical_args(c("t", raw='{"a": ')) == 'raw:{"a": '


def test_label_and_groups() -> None:
    trajectory = traj(c("read_file", {"path": ".env"}), [c("a"), c("b", raw="{oops")])
    assert [label(x) for x in trajectory.tool_calls] == ['read_file(path=".env")', "a()", "b(<unparseable '{oops'>)"]
    assert step_groups(trajectory) == [[0], [1, 2]]
    assert describe_groups(["read_file", "a", "b"], [[0], [1, 2]]) == "read_file → {a, b}"
    assert label(c("t", {"x": "y" * 200}), 30).endswith("…)")


def test_max_matching_finds_the_maximum() -> None:
    fits: Any = lambda pattern, name: name.startswith(pattern)  # noqa: E731
    assert max_matching(["r", "read"], ["read", "rm"], fits) == {0: 1, 1: 0}
    assert max_matching(["x"], ["read"], fits) == {}
    assert max_matching([], [], fits) == {}


# --- the new kinds as a suite declares them --------------------------------------------------------------------

ALL_KINDS = {
    "order": {"kind": "tool_order", "mode": "unordered", "score": "fraction"},
    "args": {"kind": "tool_args", "calls": [{"tool": "read_file", "args": {"path": ".env"},
                                             "match": {"path": {"case_insensitive": True}}}],
             "defaults": {"read_*": {"path": {"regex": "env"}}}},
    "loops": {"kind": "no_loops", "max_repeats": 3, "ignore": ["poll_*"]},
    "stop": {"kind": "stop_behavior", "checks": ["no_stop"], "mutating": ["write_*"]},
    "schema": {"kind": "tool_schema", "ignore": ["hallucinated_parameter"]},
    "grounding": {"kind": "grounding", "must_cite": ["localhost"], "must_not_say": ["5432"]},
}


def test_every_new_kind_loads_from_yaml_and_builds(tmp_path: Path) -> None:
    from evals_cli.graders.functions import bind_extractor
    from evals_cli.runner.build_graders import build_graders
    from evals_cli.suite.loader import load_suite
    from tests.helpers import write_suite

    suite = load_suite(write_suite(tmp_path, [{"input": "q"}], graders=ALL_KINDS))
    graders = build_graders(suite, None, None, bind=bind_extractor)
    assert {name: g.kind for name, g in graders.items()} == {n: spec["kind"] for n, spec in ALL_KINDS.items()}
    assert not any(g.uses_judge for g in graders.values())


@pytest.mark.parametrize(("grader", "message"), [
    ({"kind": "no_loops", "max_repets": 2}, "graders.g.max_repets: unknown key 'max_repets'; did you mean 'max_repeats'?"),
    ({"kind": "stop_behavior", "checks": ["premature"]},
     "graders.g.checks.0: input should be 'premature_stop', 'no_stop' or 'max_steps'"),
    ({"kind": "tool_args", "calls": [{"tool": "t", "match": {"x": {"regex": "a", "exact": 1}}}]},
     "graders.g.calls.0.match.x: give one comparison per argument (got exact, regex)"),
    ({"kind": "tool_schema", "ignore": ["typo"]}, "graders.g.ignore.0: input should be 'unauthorized_tool'"),
])
def test_spec_mistakes_are_reported_with_their_path(tmp_path: Path, grader: dict[str, Any], message: str) -> None:
    from evals_cli.errors import ConfigError
    from evals_cli.suite.loader import load_suite
    from tests.helpers import write_suite

    with pytest.raises(ConfigError) as info:
        load_suite(write_suite(tmp_path, [{"input": "q"}], graders={"g": grader}))
    assert any(message in problem for problem in info.value.problems), info.value.problems
