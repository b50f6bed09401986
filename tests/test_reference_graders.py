"""`kind: f1` and `kind: exact_match` (issue 44, item 3): the answer against the row's ground truth, one reference
or a list of them (the best counts), normalised as inspect_ai's `f1()` and `exact()` normalise (case, punctuation,
articles, spacing, numbers; F1 over sets of words, rounded to two places). A per-turn row grades each turn against
its own reference; a list that could mean either is refused when the dataset is read.

End to end through `evals run` / `evals validate` against the scripted loopback server (the real openai client);
unit tests pin the normalisation and the scores on cases worked out from inspect's scorer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals_cli.graders.answer_text import best_f1, exact, f1_score, normalize
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

GRADERS = {"f1": {"kind": "f1"}, "exact": {"kind": "exact_match"}}


def _run(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]],
         replies: dict[str, str]) -> tuple[dict[str, dict[str, Any]], str]:
    server.script = agent_script({key: [text(reply)] for key, reply in replies.items()})
    suite = write_suite(tmp, rows, base_url=server.url, graders=GRADERS)
    result = run_cli("run", str(suite), "-o", str(tmp / "out"))
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    return {r["sample_id"]: r for r in read_jsonl(tmp / "out" / "results.jsonl")}, said


def test_the_answer_against_one_reference_or_the_best_of_several(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "several", "input": "capital one", "ground_truth": ["Paris, France", "Paris"]},
            {"id": "one", "input": "capital two", "ground_truth": "Paris"},
            {"id": "number", "input": "how many", "ground_truth": "1000 euros"},
            {"id": "none", "input": "no truth"},
            {"id": "article-only", "input": "an article", "ground_truth": "The"}]
    replies = {"capital one": "The city of Paris.", "capital two": "paris!", "how many": "1,000 Euros.",
               "no truth": "anything", "an article": "the"}
    by_id, said = _run(tmp_path, server, rows, replies)
    several = by_id["several"]["grades"]
    assert several["f1"]["score"] == 0.5, said  # {city, of, paris} vs {paris}: p 1/3, r 1; vs "paris france" 0.4
    assert several["f1"]["metadata"]["reference"] == "Paris" and "best of 2" in several["f1"]["rationale"]
    assert several["exact"]["score"] == 0.0
    assert (by_id["one"]["grades"]["f1"]["score"], by_id["one"]["grades"]["exact"]["score"]) == (1.0, 1.0)
    assert by_id["number"]["grades"]["exact"]["score"] == 1.0  # 1,000 and 1000 are one number
    for sid in ("none", "article-only"):
        for name in GRADERS:
            grade = by_id[sid]["grades"][name]
            assert not grade["applicable"], (sid, name, grade)  # nothing to compare with: n/a, never 1.0
    assert "empty once normalised" in by_id["article-only"]["grades"]["f1"]["rationale"]


def test_a_per_turn_row_grades_each_turn_against_its_own_reference(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "turns", "input": ["first colour", "second colour"], "ground_truth": ["blue", "light green"]}]
    by_id, said = _run(tmp_path, server, rows, {"first": "Blue.", "second": "green"})
    grades = by_id["turns"]["grades"]
    assert [t["score"] for t in grades["exact"]["per_turn_grades"]] == [1.0, 0.0], said
    assert [t["score"] for t in grades["f1"]["per_turn_grades"]] == [1.0, 0.67], said
    assert [t["ground_truth"] for t in grades["f1"]["per_turn_grades"]] == ["blue", "light green"]


def test_a_ground_truth_list_that_is_neither_per_turn_nor_references_is_refused(tmp_path: Path,
                                                                               server: ScriptedServer) -> None:
    rows = [{"id": "ambiguous", "input": ["one", "two"], "ground_truth": ["a", "b", "c"]}]
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS)
    result = run_cli("validate", str(suite))
    said = result.stdout + result.stderr
    assert result.returncode == 2 and "ground_truth" in said and "data.jsonl:1" in said, said
    assert "unknown kind" not in said  # the row is the one problem: both kinds are graders of the suite
    assert "Traceback" not in said and not server.requests


def test_stop_words_are_an_option_of_f1(tmp_path: Path, server: ScriptedServer) -> None:
    suite = write_suite(tmp_path, [{"id": "r", "input": "hi"}], base_url=server.url,
                        graders={"f1": {"kind": "f1", "stop_words": ["big"]}, "exact": {"kind": "exact_match"}})
    assert run_cli("validate", str(suite)).returncode == 0
    suite = write_suite(tmp_path, [{"id": "r", "input": "hi"}], base_url=server.url,
                        graders={"f1": {"kind": "f1", "stop_words": "big"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "graders.f1.stop_words" in result.stdout + result.stderr


# --- the normalisation and the scores, as inspect's scorers give them -----------------------------------------


def test_normalisation_drops_case_punctuation_articles_and_spells_numbers_one_way() -> None:
    assert normalize("The Cat's hat-trick, (3.00).") == "cats hat trick 3.0"
    assert normalize("  A   man,\n a plan ") == "man plan"
    assert normalize("-2.5 and 1e3") == "2.5 and 1000.0"  # a hyphen splits words: inspect loses the minus too
    assert normalize("The answer: 1,000!") == normalize("answer 1000")


def test_f1_is_over_sets_of_words_and_the_best_reference_counts() -> None:
    assert round(f1_score("the cat sat on the mat", "a cat on a mat"), 2) == 0.86  # p 3/4, r 1
    assert f1_score("cat cat cat", "cat") == 1.0  # each word once, as inspect counts (SQuAD's counts say 0.5)
    assert f1_score("", "cat") == 0.0 and f1_score("dog", "cat") == 0.0
    assert best_f1("the cat sat on the mat", ["dog", "a cat on a mat"]) == (0.86, "a cat on a mat")
    assert f1_score("the big red dog", "red dog", ["big"]) == 1.0
    assert exact("The Paris.", ["london", "paris"]) == "paris" and exact("Paris, France", ["paris"]) is None
