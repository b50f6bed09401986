"""suites/failure_modes.yaml replayed offline through the real CLI: exactly which graders fail on which samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, load_script, read_jsonl, run_cli

_script = load_script("make_failure_modes_recording")  # the script that re-creates the recording
RECORDING: Path = _script.RECORDING
record = _script.record

# sample id -> the graders that must score below 1 on it (every other grader gives exactly 1.0)
EXPECTED_FAILURES: dict[str, set[str]] = {
    "ok-db-host": set(),
    "ok-workers": set(),
    "ok-parallel-ports": set(),
    "ok-trivial": set(),
    "wrong-second-move": {"args", "grounding"},  # wrong file read, the right number guessed
    "misread-result": {"answer", "grounding"},  # DB_HOST=localhost reported as 5432
    "loop-repeat": {"loops", "stop"},  # the same read three times, answer still right
    "loop-cycle-runaway": {"answer", "loops", "stop"},  # A-B-A-B until max_steps
    "premature-stop": {"answer", "order", "stop"},  # never calls http_get
    "no-stop-mutating": {"stop"},  # overwrites the file after answering was possible
    "needless-tools": {"avoided", "stop"},  # a tool for 7 + 5
    "schema-violations": {"schema"},  # unknown tool, malformed JSON, invented parameter
}
STOP_FAILED_CHECKS = {
    "loop-repeat": ["no_stop"],
    "loop-cycle-runaway": ["no_stop", "max_steps"],
    "premature-stop": ["premature_stop"],
    "no-stop-mutating": ["no_stop"],
    "needless-tools": ["no_stop"],
}


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, dict[str, Any]]]:
    out = tmp_path_factory.mktemp("failure_modes") / "out"
    result = run_cli("run", "suites/failure_modes.yaml", "--replay", str(RECORDING), "-o", str(out),
                     env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    assert result.returncode == 1, result.stdout + result.stderr  # the gate fails on purpose
    return result.stdout, {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}


def test_each_detector_fires_on_its_case_and_nowhere_else(replay: tuple[str, dict[str, dict[str, Any]]]) -> None:
    _, results = replay
    assert set(results) == set(EXPECTED_FAILURES)
    failing = {sid: {name for name, g in r["grades"].items() if g["score"] != 1.0} for sid, r in results.items()}
    assert failing == EXPECTED_FAILURES
    for sid, r in results.items():
        assert r["error"] is None, sid
        assert all(g["score"] is not None for g in r["grades"].values()), sid
        assert r["passed"] is (not EXPECTED_FAILURES[sid]), sid


def test_the_table_and_the_gate(replay: tuple[str, dict[str, dict[str, Any]]]) -> None:
    stdout, _ = replay
    assert "12 samples: 4 passed, 8 failed, 0 errored" in stdout
    assert "Gate FAILED" in stdout
    for name in ("answer", "order", "args", "loops", "stop", "schema", "grounding", "avoided"):
        assert name in stdout


def test_stop_behavior_says_which_check_failed(replay: tuple[str, dict[str, dict[str, Any]]]) -> None:
    _, results = replay
    for sid, r in results.items():
        stop = r["grades"]["stop"]
        assert stop["metadata"]["failed"] == STOP_FAILED_CHECKS.get(sid, []), sid
        for check in STOP_FAILED_CHECKS.get(sid, []):
            assert stop["rationale"].startswith("failed ") and check in stop["rationale"].split(" — ")[0]


def test_rationales_say_why(replay: tuple[str, dict[str, dict[str, Any]]]) -> None:
    _, results = replay
    grades = {sid: r["grades"] for sid, r in results.items()}
    assert "argument 'path' expected 'config/server.yaml' (ignoring case), got 'config/logging.yaml'" in \
        grades["wrong-second-move"]["args"]["rationale"]
    assert grades["wrong-second-move"]["grounding"]["rationale"] == \
        "the answer says '4' but no tool result contains it (ungrounded)"
    assert "the answer says '5432', a listed misreading; the tool said 'DB_PORT=5432'" in \
        grades["misread-result"]["grounding"]["rationale"]
    assert grades["loop-repeat"]["loops"]["rationale"].startswith('loop: read_file(path=".env") called 3 times (max 2)')
    assert "cycle list_files(directory=\"config\") → read_file(path=\"config/server.yaml\")" in \
        grades["loop-cycle-runaway"]["loops"]["rationale"]
    assert "missing 'http_get'" in grades["premature-stop"]["order"]["rationale"]
    assert "mutating: write_file" in grades["no-stop-mutating"]["stop"]["rationale"]
    violations = grades["schema-violations"]["schema"]["metadata"]["violations"]
    assert [(v["call_index"], v["tool"], v["kind"], v["severity"]) for v in violations] == [
        (0, "run_shell", "unauthorized_tool", "HIGH"),
        (1, "read_file", "malformed_arguments", "MEDIUM"),
        (2, "read_file", "hallucinated_parameter", "MEDIUM"),
    ]


def test_the_suite_has_no_judge() -> None:
    assert "model_judge" not in (ROOT / "suites" / "failure_modes.yaml").read_text(encoding="utf-8")


def test_the_recording_is_reproducible_by_its_script(tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"
    record(again)
    assert again.read_bytes() == RECORDING.read_bytes()
