"""The shipped JSON Schemas equal the generated ones; real output validates against analysis.schema.json; bad
session files give exit 2 with file:line messages.

Documents are checked with the project's JSON Schema check (`json_values.check_value`, on `jsonschema`: `$ref`s,
bounds and all), plus a round trip through the pydantic model. The check also reports keys the schema does not know.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals_cli.analyze import analyze_command
from evals_cli.errors import ConfigError
from evals_cli.json_values import check_value
from evals_cli.sessions.reader import check_sessions, iter_sessions
from evals_cli.sessions.results import ANALYSIS, SessionAnalysis
from evals_cli.sessions.schema import ANALYSIS_SCHEMA, SESSION_SCHEMA, analysis_schema, dumps, session_schema

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"
BRIEF_KEYS = {"overall_score", "coordination_score", "intent_drift_score", "per_agent_scores", "turn_results",
              "conversation", "session_id", "task_completion", "latency", "tool_validation", "recommendations"}


def shipped(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_shipped_schemas_equal_the_generated_ones() -> None:
    assert SESSION_SCHEMA.read_text(encoding="utf-8") == dumps(session_schema()), \
        "regenerate: python -m evals_cli.sessions.schema"
    assert ANALYSIS_SCHEMA.read_text(encoding="utf-8") == dumps(analysis_schema()), \
        "regenerate: python -m evals_cli.sessions.schema"


def test_the_analysis_schema_requires_the_documented_shape() -> None:
    schema = json.loads(ANALYSIS_SCHEMA.read_text())
    assert BRIEF_KEYS <= set(schema["required"])
    defs = schema["$defs"]
    assert {"overall", "tool_use", "reasoning", "handoff", "interactions_count", "issues", "recommendations"} <= \
        set(defs["AgentScores"]["required"])
    assert {"turn_index", "is_bad", "detection_type", "interactions"} <= set(defs["TurnResult"]["required"])
    assert {"agent_id", "score"} <= set(defs["InteractionResult"]["required"])
    assert {"total_responses", "good_responses", "bad_responses", "ccm_detections", "rdm_detections",
            "hallucination_detections"} <= set(defs["ConversationStats"]["required"])
    assert defs["TurnResult"]["properties"]["detection_type"]["enum"] == ["ccm", "rdm", "hallucination", "llm_judge",
                                                                          "none"]


def test_every_shipped_session_fits_the_session_schema() -> None:
    schema = shipped(SESSION_SCHEMA)
    lines = [json.loads(line) for line in DATASET.read_text().splitlines() if line.strip()]
    assert len(lines) >= 6
    for line in lines:
        assert check_value(line, schema, "") == [], line["id"]
    assert check_value(lines[:2], schema, "") == []  # a JSON list of sessions fits too
    broken = dict(lines[0], agents="planner")
    assert check_value(broken, schema, "")  # the check can fail


def test_results_lines_fit_the_analysis_schema_and_round_trip(tmp_path: Path) -> None:
    assert analyze_command(DATASET, tmp_path / "out", quiet=True) == 0
    schema = shipped(ANALYSIS_SCHEMA)
    results = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    lines = [r["grades"]["overall"]["metadata"][ANALYSIS] for r in results]  # each session's analysis, as written
    assert len(lines) == 8
    for line in lines:
        assert check_value(line, schema, "") == [], line["session_id"]
        assert BRIEF_KEYS <= set(line)
        assert SessionAnalysis.model_validate(line).model_dump(mode="json") == line
    wrong = dict(lines[0], overall_score="high")
    del wrong["turn_results"]
    problems = {kind for kind, _ in check_value(wrong, schema, "")}
    assert problems == {"type_mismatch", "missing_required"}
    assert check_value(dict(lines[0], coordination_score=1.5), schema) == [
        ("invalid_value", "coordination_score: 1.5 is more than the maximum 1.0")]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def first_session() -> dict[str, Any]:
    return json.loads(DATASET.read_text().splitlines()[0])


def test_json_object_and_json_list_files_are_read(tmp_path: Path) -> None:
    one = write(tmp_path, "one.json", json.dumps(first_session(), indent=2))
    assert [s.id for s in iter_sessions(one)] == ["refund-clean"]
    sessions = [json.loads(x) for x in DATASET.read_text().splitlines()[:3]]
    many = write(tmp_path, "many.json", json.dumps(sessions, indent=2))
    assert [s.id for s in iter_sessions(many)] == [s["id"] for s in sessions]


@pytest.mark.parametrize(("name", "make", "expected"), [
    ("bad.jsonl", lambda s: json.dumps(s) + "\n{not json\n", ["bad.jsonl:2: invalid JSON at column 2"]),
    ("agent.jsonl", lambda s: "\n" + json.dumps(dict(s, turns=[dict(s["turns"][0], agent_interactions=[
        dict(s["turns"][0]["agent_interactions"][1], agent_id="executr")])])) + "\n",
     ["agent.jsonl:2: session 'refund-clean'", "turns[0].agent_interactions[0].agent_id 'executr' is not one of the "
      "agents (planner, executor) (did you mean 'executor'?)"]),
    ("typo.jsonl", lambda s: json.dumps(dict(s, turn=s["turns"])) + "\n",
     ["typo.jsonl:1: session 'refund-clean': turn: unknown key 'turn'; did you mean 'turns'?"]),
    ("missing.jsonl", lambda s: json.dumps({k: v for k, v in s.items() if k != "task"}) + "\n",
     ["missing.jsonl:1: session 'refund-clean': task: required field is missing"]),
    ("dup.jsonl", lambda s: json.dumps(s) + "\n" + json.dumps(s) + "\n",
     ["dup.jsonl:2: duplicate session id 'refund-clean' (first at line 1)"]),
    ("list.json", lambda s: json.dumps([s, dict(s, id="two", agents=[])], indent=1),
     ["list.json:", "session 'two': agents: list should have at least 1 item"]),
    ("empty.jsonl", lambda s: "\n\n", ["empty.jsonl: the file holds no session"]),
    ("open.json", lambda s: "[" + json.dumps(s), ["open.json:1: invalid JSON"]),
])
def test_invalid_session_files_name_file_line_and_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        name: str, make: Any, expected: list[str]) -> None:
    path = write(tmp_path, name, make(first_session()))
    with pytest.raises(ConfigError) as exc:
        count, problems = check_sessions(path)
        if problems:
            raise ConfigError(problems)
    message = "\n".join(exc.value.problems)
    for part in expected:
        assert part in message
    assert analyze_command(path, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # invalid input: nothing written


def test_list_items_are_located_by_their_line(tmp_path: Path) -> None:
    sessions = [first_session(), dict(first_session(), id="two", task=7)]
    text = json.dumps(sessions, indent=2)
    line = [i for i, x in enumerate(text.splitlines(), 1) if x == "  {"][1]  # the second item's opening line
    assert line > 100
    _, problems = check_sessions(write(tmp_path, "s.json", text))
    assert problems and problems[0].startswith(f"{tmp_path / 's.json'}:{line}: session 'two': task:")


def test_missing_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert analyze_command(tmp_path / "nope.jsonl", tmp_path / "out") == 2
    assert "session file not found" in capsys.readouterr().err
