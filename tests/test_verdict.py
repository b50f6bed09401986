"""parse_verdict: reading a judge's reply defensively, and normalising its score to [0, 1]."""

from __future__ import annotations

import pytest

from evals_cli.graders.verdict import VerdictError, parse_verdict


def test_plain_json() -> None:
    assert parse_verdict('{"reason": "clear and correct", "score": 7}', "1-10") == (0.7, 7.0, "clear and correct")


def test_rationale_key_is_accepted_as_reason() -> None:
    assert parse_verdict('{"rationale": "fine", "score": 5}', "1-10") == (0.5, 5.0, "fine")


def test_missing_reason_is_empty() -> None:
    assert parse_verdict('{"score": 9}', "1-10") == (0.9, 9.0, "")


@pytest.mark.parametrize("fence", ["```json", "```JSON", "```"])
def test_fenced_json_block(fence: str) -> None:
    reply = f'Here is my verdict:\n{fence}\n{{"reason": "good", "score": 8}}\n```\nThanks.'
    assert parse_verdict(reply, "1-10") == (0.8, 8.0, "good")


def test_json_followed_by_prose() -> None:
    reply = '{"reason": "ok", "score": 6}\n\nI hope this helps; the agent did fine overall.'
    assert parse_verdict(reply, "1-10") == (0.6, 6.0, "ok")


def test_prose_with_a_json_object_inside() -> None:
    reply = 'After weighing it all, my verdict is {"score": 4, "reason": "missed a step"} and that is final.'
    assert parse_verdict(reply, "1-10") == (0.4, 4.0, "missed a step")


def test_objects_without_score_are_ignored() -> None:
    reply = 'Context: {"tool": "read_file"}. Verdict: {"score": 3, "reason": "wrong file"}'
    assert parse_verdict(reply, "1-10") == (0.3, 3.0, "wrong file")


def test_nested_braces_inside_the_reason() -> None:
    reply = 'Verdict: {"reason": "returned {\\"a\\": 1} as asked", "score": 10}'
    score, raw, reason = parse_verdict(reply, "1-10")
    assert (score, raw) == (1.0, 10.0)
    assert reason == 'returned {"a": 1} as asked'


@pytest.mark.parametrize(
    ("reply", "raw"),
    [
        ("The agent read the right file.\nScore: 7", 7.0),
        ("score = 3", 3.0),
        ("**Score:** 9", 9.0),
        ("**Score**: 2", 2.0),
        ("SCORE: 6.5", 6.5),
        ("Score: 7/10", 7.0),
        ("First impression score: 4\nAfter reflection, final score: 8", 8.0),  # the last score line wins
    ],
)
def test_score_line_text(reply: str, raw: float) -> None:
    score, got_raw, reason = parse_verdict(reply, "1-10")
    assert got_raw == raw
    assert score == pytest.approx(raw / 10)
    assert reason == reply.strip()  # the whole reply is the reason


@pytest.mark.parametrize(("value", "raw"), [('"7"', 7.0), ('" 8 "', 8.0), ('"6.5"', 6.5), ("7.0", 7.0)])
def test_numeric_strings_and_floats(value: str, raw: float) -> None:
    score, got_raw, _ = parse_verdict(f'{{"score": {value}}}', "1-10")
    assert got_raw == raw
    assert score == pytest.approx(raw / 10)


@pytest.mark.parametrize(("raw", "normalised"), [(1, 0.1), (7, 0.7), (10, 1.0), (5.5, 0.55)])
def test_one_to_ten_is_normalised(raw: float, normalised: float) -> None:
    score, got_raw, _ = parse_verdict(f'{{"score": {raw}}}', "1-10")
    assert score == pytest.approx(normalised)
    assert got_raw == raw


@pytest.mark.parametrize("raw", [0, 0.25, 0.5, 1])
def test_zero_to_one_scale_is_kept(raw: float) -> None:
    score, got_raw, _ = parse_verdict(f'{{"score": {raw}}}', "0-1")
    assert score == pytest.approx(raw)
    assert got_raw == raw


@pytest.mark.parametrize(
    ("reply", "scale"),
    [
        ('{"score": 11}', "1-10"),
        ('{"score": -1}', "1-10"),
        ('{"score": 0}', "1-10"),  # the 1-10 scale starts at 1
        ('{"score": 0.7}', "1-10"),  # an already-normalised score on the wrong scale is not guessed
        ('{"score": 1.5}', "0-1"),
        ('{"score": 7}', "0-1"),
        ('{"score": -0.1}', "0-1"),
        ("Score: 12", "1-10"),
        ("Score: -1", "0-1"),
        ('{"score": NaN}', "1-10"),
    ],
)
def test_out_of_range_scores_are_rejected(reply: str, scale: str) -> None:
    with pytest.raises(VerdictError, match=f"outside the {scale} scale"):
        parse_verdict(reply, scale)


@pytest.mark.parametrize("reply", ["", "   \n\t "])
def test_empty_reply(reply: str) -> None:
    with pytest.raises(VerdictError, match="empty reply"):
        parse_verdict(reply, "1-10")


@pytest.mark.parametrize("reply", ["I like turtles.", "The score is seven", '{"reason": "forgot the score"}',
                                   "The score is 7", "{not json at all}"])
def test_garbage_has_no_score(reply: str) -> None:
    with pytest.raises(VerdictError, match="no score found"):
        parse_verdict(reply, "1-10")


@pytest.mark.parametrize("value", ["true", "false"])
def test_boolean_score_is_rejected(value: str) -> None:
    with pytest.raises(VerdictError, match="boolean"):
        parse_verdict(f'{{"score": {value}, "reason": "yes"}}', "0-1")


@pytest.mark.parametrize("value", ['"seven"', "null", "[7]", '{"value": 7}'])
def test_non_numeric_score_is_rejected(value: str) -> None:
    with pytest.raises(VerdictError, match="is not a number"):
        parse_verdict(f'{{"score": {value}}}', "1-10")


def test_verdict_error_is_a_value_error() -> None:
    assert issubclass(VerdictError, ValueError)
