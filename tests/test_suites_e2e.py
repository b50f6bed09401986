"""Every ready-made suite in suites/ runs end to end: against the scripted server, and the demo offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import ROOT, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, text

SUITES = sorted(p.name for p in (ROOT / "suites").glob("*.yaml"))

MULTI_GOOD = {
    "Find the API URL": [call("read_file", {"path": ".env"}),
                         call("http_get", {"url": "https://api.example.com/v1/health"}),
                         text("The API at https://api.example.com/v1 is up and reports version 2.4.1.")],
    "What port does the database": [call("read_file", {"path": ".env"}), text("The database listens on 5432.")],
    "how many replicas": [text("It runs 3 replicas.")],
    "HTTP stand for": [text("HTTP stands for Hypertext Transfer Protocol.")],
    "that's all": [text("You're welcome, have a good day!")],
}
MULTI_BAD = {
    "Find the API URL": [call("http_get", {"url": "https://api.example.com/health"}), text("It is down.")],
    "What port does the database": [text("Probably 3306.")],
    "how many replicas": [call("read_file", {"path": "config/deploy.yaml"}),
                          call("write_file", {"path": "config/deploy.yaml", "content": "replicas: 5"}),
                          text("I set it to 5.")],
    "HTTP stand for": [call("list_files", {"directory": "."}), text("Hypertext Transfer Protocol")],
    "that's all": [call("read_file", {"path": "README.md"}), text("Bye")],
}
PER_TURN_GOOD = {
    "Which host does the database": [call("read_file", {"path": ".env"}), text("It runs on localhost.")],
    "And on which port": [text("Port 5432.")],
    "use https": [text("Yes.")],
    "able to read project files": [text("Yes, I can read them.")],
    "What is the API URL": [call("read_file", {"path": ".env"}), text("https://api.example.com/v1")],
}


def env_for(server: ScriptedServer) -> dict[str, str]:
    return {"EVAL_AGENT_BASE_URL": server.url, "EVAL_JUDGE_BASE_URL": server.url}


def test_every_suite_validates() -> None:
    assert {"demo.yaml", "multi_turn.yaml", "per_turn.yaml"} <= set(SUITES)
    for name in SUITES:
        result = run_cli("validate", f"suites/{name}")
        assert result.returncode == 0, result.stderr
        assert "ok:" in result.stdout


def test_multi_turn_suite_passes_with_a_good_agent(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(MULTI_GOOD, judge=lambda body: judge_score(9))
    result = run_cli("run", "suites/multi_turn.yaml", "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(lines) == 5 and all(r["passed"] for r in lines)
    mid = next(r for r in lines if r["sample_id"] == "mid-conversation-replicas")
    assert len(mid["trajectory"]["prefilled"]) == 5  # system prompt + the 4 pre-filled messages
    assert len(server.judge_requests()) == 5


def test_multi_turn_suite_fails_with_a_bad_agent(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(MULTI_BAD, judge=lambda body: judge_score(2))
    result = run_cli("run", "suites/multi_turn.yaml", "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 1
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["trivial-no-tools"]["grades"]["forbidden_tools"]["score"] == 0.0
    assert lines["mid-conversation-replicas"]["grades"]["forbidden_tools"]["score"] == 0.0
    assert lines["fresh-api-health"]["grades"]["tool_order"]["score"] == 0.0
    assert lines["fresh-db-port"]["grades"]["answer"]["score"] == 0.0


def test_multi_turn_fast_makes_no_judge_calls(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(MULTI_GOOD)  # a judge call would get a 500
    result = run_cli("run", "suites/multi_turn.yaml", "--no-judge", "-o", str(tmp_path / "out"),
                     env=env_for(server))
    assert result.returncode == 0, result.stdout + result.stderr
    assert server.judge_requests() == []
    assert "task_completion" not in result.stdout


def test_per_turn_suite(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(PER_TURN_GOOD, judge=lambda body: judge_score(10))
    result = run_cli("run", "suites/per_turn.yaml", "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    walk = lines["env-walkthrough"]["grades"]
    assert walk["answer"]["metadata"]["turns_total"] == 3 and walk["answer"]["metadata"]["turns_passed"] == 3
    assert walk["turn_quality"]["metadata"]["turns_total"] == 3
    assert "1.00 (3/3)" in result.stdout


def test_demo_runs_offline_from_its_recording(tmp_path: Path) -> None:
    result = run_cli("run", "suites/demo.yaml", "--replay", "suites/demo.recording.jsonl",
                     "-o", str(tmp_path / "out"), env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    # the recorded model guesses db-host and server-port without reading the files: tool_order is required,
    # so they fail and say why; 1 of 4 samples passing fails the pass_rate gate (exit 1), as the README says
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert len(lines) == 4 and all(r["error"] is None for r in lines.values())
    assert all(r["grades"]["quality"]["score"] is not None for r in lines.values())
    for guess in ("db-host", "server-port"):
        assert lines[guess]["passed"] is False
        assert [f["grader"] for f in lines[guess]["failed_by"]] == ["tool_order"]
        row = next(line for line in result.stdout.splitlines() if line.strip().startswith(guess))
        assert "✗ tool_order" in row
    assert lines["trivial-math"]["passed"] is True
    assert "4 samples: 1 passed, 3 failed, 0 errored" in result.stdout
    assert "Gate FAILED: sample pass rate (1 of 4 samples passed) = 0.250 not ≥ 0.75" in result.stdout


@pytest.mark.parametrize("name", ["demo.yaml"])
def test_demo_suite_against_the_scripted_server(server: ScriptedServer, tmp_path: Path, name: str) -> None:
    server.script = agent_script({
        ".env": [call("read_file", {"path": ".env"}), text("The database host is localhost.")],
        "config/server.yaml": [call("read_file", {"path": "config/server.yaml"}), text("Port 8080.")],
        "workers": [call("list_files", {"directory": "config"}),
                    call("read_file", {"path": "config/server.yaml"}), text("It runs 4 workers.")],
        "12 times 12": [text("144")],
    }, judge=lambda body: judge_score(10))
    result = run_cli("run", f"suites/{name}", "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 0, result.stdout + result.stderr
    assert all(r["passed"] for r in read_jsonl(tmp_path / "out" / "results.jsonl"))
