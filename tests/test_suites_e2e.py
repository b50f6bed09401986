"""Every ready-made suite in suites/ runs end to end: against the scripted server, and the demo offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, text

SUITES = sorted(p.name for p in (ROOT / "suites").glob("*.yaml"))

CONFIG = {"host": "0.0.0.0", "port": 8080, "debug": False, "log_level": "info"}


def port_write(**changes: Any) -> str:
    """config.json as the agent writes it back: the declared settings with these changed (None drops a key)."""
    config = {k: v for k, v in {**CONFIG, **changes}.items() if v is not None}
    return json.dumps(config, indent=2)


MULTI_GOOD = {
    "Find the API URL": [call("read_file", {"path": ".env"}),
                         call("http_get", {"url": "https://api.example.com/v1/health"}),
                         text("The API at https://api.example.com/v1 is up and reports version 2.4.1.")],
    "What port does the database": [call("read_file", {"path": ".env"}), text("The database listens on 5432.")],
    "how many replicas": [text("It runs 3 replicas.")],
    "HTTP stand for": [text("HTTP stands for Hypertext Transfer Protocol.")],
    "that's all": [text("You're welcome, have a good day!")],
    "port to 3000": [call("read_file", {"path": "config.json"}),
                     call("write_file", {"path": "config.json", "content": port_write(port=3000)}),
                     text("Done: config.json now sets port 3000.")],
}
MULTI_BAD = {
    "Find the API URL": [call("http_get", {"url": "https://api.example.com/health"}), text("It is down.")],
    "What port does the database": [text("Probably 3306.")],
    "how many replicas": [call("read_file", {"path": "config/deploy.yaml"}),
                          call("write_file", {"path": "config/deploy.yaml", "content": "replicas: 5"}),
                          text("I set it to 5.")],
    "HTTP stand for": [call("list_files", {"directory": "."}), text("Hypertext Transfer Protocol")],
    "that's all": [call("read_file", {"path": "README.md"}), text("Bye")],
    "port to 3000": [call("read_file", {"path": "config.json"}),  # the right port, the other settings lost
                     call("write_file", {"path": "config.json", "content": '{"port": 3000}'}),
                     text("Done: the port is now 3000.")],
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
    assert len(lines) == 6 and all(r["passed"] for r in lines)
    mid = next(r for r in lines if r["sample_id"] == "mid-conversation-replicas")
    assert len(mid["trajectory"]["prefilled"]) == 5  # system prompt + the 4 pre-filled messages
    assert len(server.judge_requests()) == 6
    by_id = {r["sample_id"]: r for r in lines}
    assert by_id["update-port"]["grades"]["final_state"]["score"] == 1.0
    assert [c["target"] for c in by_id["update-port"]["trajectory"]["state_changes"]] == ["config.json"]
    # the rows without an environment keep their canned tools and have no state to grade
    assert by_id["fresh-db-port"]["trajectory"]["state_changes"] is None
    assert by_id["fresh-db-port"]["grades"]["final_state"]["applicable"] is False


def test_multi_turn_suite_fails_with_a_bad_agent(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(MULTI_BAD, judge=lambda body: judge_score(2))
    result = run_cli("run", "suites/multi_turn.yaml", "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 1
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["trivial-no-tools"]["grades"]["forbidden_tools"]["score"] == 0.0
    assert lines["mid-conversation-replicas"]["grades"]["forbidden_tools"]["score"] == 0.0
    assert lines["fresh-api-health"]["grades"]["tool_order"]["score"] == 0.0
    assert lines["fresh-db-port"]["grades"]["answer"]["score"] == 0.0
    port = lines["update-port"]
    assert port["passed"] is False and "final_state" in [f["grader"] for f in port["failed_by"]]
    assert port["grades"]["tool_order"]["score"] == 1.0  # every call was right by name: only the state tells


@pytest.mark.parametrize(("written", "wrong"), [
    (port_write(port=8080), "8080"),  # read the config, wrote the old value back
    ('{"port": 3000}', "host"),  # the right port, every other setting lost
    (port_write(port=3000, log_level=None), "log_level"),  # one setting dropped
], ids=["old-port-written-back", "other-keys-clobbered", "one-key-dropped"])
def test_update_port_fails_on_the_wrong_write(server: ScriptedServer, tmp_path: Path, written: str,
                                              wrong: str) -> None:
    server.script = agent_script({"port to 3000": [
        call("read_file", {"path": "config.json"}), call("write_file", {"path": "config.json", "content": written}),
        text("Done: the port is now 3000.")]})
    result = run_cli("run", "suites/multi_turn.yaml", "--sample-id", "update-port", "--no-judge",
                     "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 1, result.stdout + result.stderr
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    grade = line["grades"]["final_state"]
    assert line["passed"] is False and grade["score"] == 0.0 and wrong in grade["rationale"]
    assert line["grades"]["answer"]["score"] == 1.0  # the answer claims success: only the state tells otherwise
    # the agent read the file through the environment: the read returned the declared text
    read, write = line["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0], \
        line["trajectory"]["turns"][0]["steps"][1]["tool_calls"][0]
    assert '"port": 8080' in read["result"] and read["effect"]["op"] == "files.read"
    assert write["effect"]["changed"] is True


def test_update_port_stray_write_fails_no_other_changes(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"port to 3000": [
        call("read_file", {"path": "config.json"}),
        call("write_file", {"path": "config.json", "content": port_write(port=3000)}),
        call("write_file", {"path": "config.json.bak", "content": port_write()}),
        text("Done, and I kept a backup.")]})
    result = run_cli("run", "suites/multi_turn.yaml", "--sample-id", "update-port", "--no-judge",
                     "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 1, result.stdout + result.stderr
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["grades"]["final_state"]["score"] == 0.0
    assert "config.json.bak" in line["grades"]["final_state"]["rationale"]
    assert sorted(c["target"] for c in line["trajectory"]["state_changes"]) == ["config.json", "config.json.bak"]


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
    # so they fail and say why; 1 of 4 samples passing fails the pass_rate gate (exit 1), as the README says.
    # Their weighted scores count only the graders that applied (no_forbidden_tools is n/a on both): db-host 0.75
    # reaches the pass value 0.7, server-port 0.62 does not (issue 24)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert len(lines) == 4 and all(r["error"] is None for r in lines.values())
    assert all(r["grades"]["quality"]["score"] is not None for r in lines.values())
    for guess, score, failed in (("db-host", 0.75, ["tool_order"]), ("server-port", 0.625, ["tool_order", None])):
        assert lines[guess]["passed"] is False and lines[guess]["score"] == pytest.approx(score)
        assert [f["grader"] for f in lines[guess]["failed_by"]] == failed
        row = next(line for line in result.stdout.splitlines() if line.strip().startswith(guess))
        assert "✗ tool_order" in row
    graders = next(line for line in result.stdout.splitlines() if line.strip().startswith("tool_order "))
    assert graders.split()[1:5] == ["3", "of", "4", "0"] and graders.split()[5] == "0.00"  # not 0.25: n/a is no 1.0
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


ENV_GOOD = {
    "order A1001": [call("get_order", {"order_id": "A1001"}), call("issue_refund", {"order_id": "A1001", "amount": 40}),
                    text("I refunded 40 EUR for the desk lamp of order A1001.")],
    "Where is my order C3001": [call("get_order", {"order_id": "C3001"}), text("Order C3001 has shipped.")],
    "order B2001": [call("get_order", {"order_id": "B2001"}), text("Order B2001 was already refunded in full.")],
    "Refund order C3001": [call("get_order", {"order_id": "C3001"}),
                           text("Order C3001 is not yours, so I cannot refund it.")],
}
ENV_BAD = {
    "order A1001": [call("get_order", {"order_id": "A1001"}),  # the right order looked up, the wrong one refunded
                    call("issue_refund", {"order_id": "A1002", "amount": 40}), text("Refunded 40.")],
    "Where is my order C3001": [text("It has shipped.")],  # a guess: no lookup
    "order B2001": [call("get_order", {"order_id": "B2001"}),  # a second refund writes what is already there
                    call("issue_refund", {"order_id": "B2001", "amount": 180}), text("Refunded 180.")],
    "Refund order C3001": [call("get_order", {"order_id": "C3001"}),
                           call("issue_refund", {"order_id": "C3001", "amount": 250}), text("Done.")],
}


def test_environment_suite_passes_with_a_good_agent(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(ENV_GOOD)
    result = run_cli("run", "suites/environment.yaml", "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert len(lines) == 4 and all(r["passed"] for r in lines.values())
    [change] = lines["refund-right-order"]["trajectory"]["state_changes"]
    assert change["target"] == "orders/A1001" and change["after"]["status"] == "refunded"
    assert change["after"]["refunded_amount"] == 40
    assert all(lines[i]["trajectory"]["state_changes"] == [] for i in ("status-lookup", "already-refunded",
                                                                      "wrong-customer"))


def test_environment_suite_fails_each_wrong_move(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script(ENV_BAD)
    result = run_cli("run", "suites/environment.yaml", "-o", str(tmp_path / "out"), env=env_for(server))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert not any(r["passed"] for r in lines.values())
    failed = {i: [f["grader"] for f in r["failed_by"]] for i, r in lines.items()}
    assert "final_state" in failed["refund-right-order"]  # the calls' names were right; the world is not
    assert lines["refund-right-order"]["grades"]["tool_order"]["score"] == 1.0
    assert failed["status-lookup"] == ["tool_order"]  # right answer, world untouched, but never looked
    # a refund of what was already refunded leaves the state as it was: the forbidden call fails it
    assert lines["already-refunded"]["grades"]["final_state"]["score"] == 1.0
    assert failed["already-refunded"] == ["forbidden_tools"]
    assert {"final_state", "forbidden_tools"} <= set(failed["wrong-customer"])
    report = run_cli("report", str(tmp_path / "out"))
    assert "    record orders/C3001 changed" in report.stdout
    assert '      ~ status: "shipped" → "refunded"' in report.stdout


def test_environment_runs_offline_from_its_recording(tmp_path: Path) -> None:
    result = run_cli("run", "suites/environment.yaml", "--replay", "suites/environment.recording.jsonl",
                     "-o", str(tmp_path / "out"), env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    # the recorded model (Qwen2.5-Coder-1.5B) refunds at once without looking the order up, always 50.0, then
    # reads the refunded order in the tool's answer and tells the customer it was "already refunded" (README,
    # "Stateful environments"): every sample fails, and the final state says what it really did
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert len(lines) == 4 and all(r["error"] is None and r["passed"] is False for r in lines.values())
    assert all(r["trajectory"]["state_changes"] is not None for r in lines.values())
    changes = {i: [(c["target"], c["after"]) for c in r["trajectory"]["state_changes"]] for i, r in lines.items()}
    assert [t for t, _ in changes["refund-right-order"]] == ["orders/A1001"]
    assert changes["refund-right-order"][0][1]["refunded_amount"] == 50.0  # not the order's 40
    assert "refunded_amount is 50.0, expected 40" in lines["refund-right-order"]["grades"]["final_state"]["rationale"]
    assert [t for t, _ in changes["already-refunded"]] == ["orders/B2001"]  # 180 refunded before, now 50.0
    assert changes["already-refunded"][0][1]["refunded_amount"] == 50.0
    assert [t for t, _ in changes["wrong-customer"]] == ["orders/C3001"]  # carla's order, refunded for ben
    assert changes["status-lookup"] == []  # its lookup was written as text, not called: nothing ran
    for sample in ("refund-right-order", "already-refunded", "wrong-customer"):
        assert "final_state" in [f["grader"] for f in lines[sample]["failed_by"]]
        call = lines[sample]["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]
        assert call["name"] == "issue_refund" and call["effect"]["changed"] is True
    # status-lookup left the world as it was (final_state 1.00) but never looked: tool_order and the weighted score
    assert [f["grader"] or f["rule"] for f in lines["status-lookup"]["failed_by"]] == ["tool_order", "weighted"]
    assert lines["status-lookup"]["grades"]["final_state"]["score"] == 1.0
    assert "4 samples: 0 passed, 4 failed, 0 errored" in result.stdout
