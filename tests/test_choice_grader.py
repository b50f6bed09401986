"""`kind: choice` (issue 44, item 3): a multiple-choice row (`choices`, a `ground_truth` letter) answered with the
right option, as inspect_ai's `choice()` scores its `multiple_choice` solver's answers. The options reach the agent
after the question, lettered `A) ...`; with `shuffle: true` in an order drawn for each (sample id, repeat), the
ground-truth letter following its option; the answer's letter (`ANSWER: B`, `B`, `B) ...`, `the answer is B`) or
the option's text is the choice.

End to end through `evals run` / `evals validate` against the scripted loopback server (the real openai client),
whose agent reads the options it was shown; unit tests pin how a choice is read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from evals_cli.graders.choices import chosen, shown_order
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, last_user, text

CHOICES = ["Berlin", "Paris", "Madrid", "Rome"]
ROW = {"input": "What is the capital of France?", "choices": CHOICES, "ground_truth": "B"}


def _knows(path: str, body: dict[str, Any]) -> Any:
    """An agent that finds Paris among the options it was shown (or, asked to, always says A)."""
    user = last_user(body)
    if "guess" in user:
        return text("ANSWER: A")
    found = re.search(r"^([A-Z])\) Paris$", user, flags=re.M)
    return text(f"The answer is {found.group(1)}." if found else "I see no options")


def _run(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], graders: dict[str, Any],
         *extra: str) -> tuple[list[dict[str, Any]], str]:
    server.script = _knows
    suite = write_suite(tmp, rows, base_url=server.url, graders=graders)
    result = run_cli("run", str(suite), "-o", str(tmp / "out"), *extra)
    said = result.stdout + result.stderr
    assert "Traceback" not in said
    return read_jsonl(tmp / "out" / "results.jsonl"), said


def test_the_agent_is_shown_the_options_and_its_letter_is_graded(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "knows", **ROW}, {"id": "guesses", **ROW, "input": "guess: the capital of France?"},
            {"id": "no-choices", "input": "What is the capital of France?", "ground_truth": "B"},
            {"id": "no-truth", **{k: v for k, v in ROW.items() if k != "ground_truth"}}]
    results, said = _run(tmp_path, server, rows, {"choice": {"kind": "choice"}})
    by_id = {r["sample_id"]: r for r in results}
    assert by_id["knows"]["input"] == ("What is the capital of France?\n\nA) Berlin\nB) Paris\nC) Madrid\nD) Rome")
    sent = [last_user(request["body"]) for request in server.agent_requests()]
    assert by_id["knows"]["input"] in sent  # what the result shows is what the agent was sent
    knows = by_id["knows"]["grades"]["choice"]
    assert knows["score"] == 1.0 and knows["metadata"]["chosen"] == "B", said
    assert "chose B) Paris" in knows["rationale"] and "the answer is" in knows["rationale"]
    guesses = by_id["guesses"]["grades"]["choice"]
    assert guesses["score"] == 0.0 and "chose A) Berlin" in guesses["rationale"]
    assert "the answer is B) Paris" in guesses["rationale"]
    assert by_id["no-choices"]["input"] == "What is the capital of France?"  # nothing appended without choices
    for sid in ("no-choices", "no-truth"):
        assert not by_id[sid]["grades"]["choice"]["applicable"], sid  # n/a, never 1.0


def test_shuffled_options_change_per_repeat_and_the_ground_truth_follows(tmp_path: Path,
                                                                       server: ScriptedServer) -> None:
    rows = [{"id": "knows", **ROW}, {"id": "guesses", **ROW, "input": "guess: the capital of France?"}]
    graders = {"choice": {"kind": "choice", "shuffle": True}}
    results, said = _run(tmp_path, server, rows, graders, "--repeats", "4")
    knows = [r for r in results if r["sample_id"] == "knows"]
    assert len(knows) == 4 and {r["grades"]["choice"]["score"] for r in knows} == {1.0}, said
    inputs = {r["repeat"]: r["input"] for r in knows}
    assert len(set(inputs.values())) > 1  # the order shown differs between repeats
    for r in knows:  # the letter graded is Paris's letter in the order this repeat showed
        paris = re.search(r"^([A-Z])\) Paris$", r["input"], flags=re.M)
        assert paris is not None and r["grades"]["choice"]["metadata"]["correct"] == paris.group(1)
        order = shown_order("knows", r["repeat"], 4)
        assert r["input"].endswith("\n".join(f"{'ABCD'[i]}) {CHOICES[j]}" for i, j in enumerate(order)))
    for r in (r for r in results if r["sample_id"] == "guesses"):  # always A: right only where Paris came first
        assert r["grades"]["choice"]["score"] == (1.0 if r["input"].split("\n\n")[1].startswith("A) Paris") else 0.0)
    # the same order in every run: a second run shows each repeat what the first showed
    (tmp_path / "out").rename(tmp_path / "first")
    again, _ = _run(tmp_path, server, rows, graders, "--repeats", "4")
    assert {(r["sample_id"], r["repeat"]): r["input"] for r in again} == \
        {(r["sample_id"], r["repeat"]): r["input"] for r in results}


@pytest.mark.parametrize(("row", "named"), [
    ({"input": ["two", "messages"]}, "choices: are shown after the row's input, which must be one message"),
    ({"ground_truth": "Paris"}, "ground_truth: 'Paris' is not the letter of an option (A to D); write the letter "
                                "of the correct option ('Paris' is option B)"),
    ({"ground_truth": "E"}, "ground_truth: 'E' is not the letter of an option (A to D)"),
    ({"ground_truth": ["A", "B"]}, "ground_truth: give the letter of the one correct option"),
    ({"choices": ["Paris", "paris."]}, "choices: options A, B read the same"),
    ({"choices": ["only one"]}, "data.jsonl:1: sample 'r': choices: list should have at least 2 items"),
])
def test_a_row_the_grader_cannot_read_is_refused_naming_the_field(tmp_path: Path, server: ScriptedServer,
                                                                  row: dict[str, Any], named: str) -> None:
    suite = write_suite(tmp_path, [{"id": "r", **ROW, **row}], base_url=server.url,
                        graders={"choice": {"kind": "choice"}})
    result = run_cli("validate", str(suite))
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 2 and named in said, said
    assert "Traceback" not in said and not server.requests


def test_choice_graders_must_agree_on_shuffling_the_one_prompt(tmp_path: Path, server: ScriptedServer) -> None:
    suite = write_suite(tmp_path, [{"id": "r", **ROW}], base_url=server.url,
                        graders={"mixed": {"kind": "choice", "shuffle": True}, "plain": {"kind": "choice"}})
    result = run_cli("validate", str(suite))
    said = result.stdout + result.stderr
    assert result.returncode == 2 and "graders.plain.shuffle" in said, said
    suite = write_suite(tmp_path, [{"id": "r", **ROW}], base_url=server.url,
                        graders={"c": {"kind": "choice", "shuffle": "yes"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "graders.c.shuffle" in result.stdout + result.stderr


def test_how_a_choice_is_read() -> None:
    four = ["Berlin", "Paris", "Madrid", "Rome"]

    def read(answer: str) -> int | None:
        return chosen(answer, four).index

    assert read("Let me think.\nParis is in France.\nANSWER: B") == 1  # inspect's form, the last line
    assert read("ANSWER: a\nno wait\nANSWER: C.") == 2
    assert read("**Answer:** (d)") == 3
    assert read("B") == 1 and read(" (b). ") == 1 and read("**C**") == 2
    assert read("B) Paris, of course") == 1 and read("C. Madrid") == 2
    assert read("I am sure the answer is D because of the river.") == 3
    assert read("Paris.") == 1 and read("Answer: the Paris") == 1  # the option's text
    assert read("ANSWER: A, C") is None and chosen("ANSWER: A, C", four).letters == ("A", "C")
    assert read("ANSWER: E") is None  # no such option
    assert read("the answer is a city in France") is None  # "a" is an article here, not option A
    assert read("Probably somewhere in Europe") is None
