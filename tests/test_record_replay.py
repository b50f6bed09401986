"""--record stores every model call (agent and judge); --replay serves them with no network at all."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, text

ROWS = [
    {"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
    {"id": "math", "input": "math: 2+2?", "ground_truth": "4"},
]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}, "order": {"kind": "tool_order"},
           "judge": {"kind": "model_judge", "prompt": "Grade {{ submission }} against {{ ground_truth }}."}}


def _essence(path: Path) -> dict[str, tuple]:
    out = {}
    for r in read_jsonl(path):
        calls = [(c["name"], c["result"]) for t in r["trajectory"]["turns"] for s in t["steps"]
                 for c in s["tool_calls"]]
        out[r["sample_id"]] = (calls, r["trajectory"]["turns"][-1]["steps"][-1]["content"],
                               {k: g["score"] for k, g in r["grades"].items()}, r["score"])
    return out


def test_round_trip_gives_identical_results_offline(tmp_path: Path) -> None:
    server = ScriptedServer(agent_script(
        {"host": [call("read_file", {"path": ".env"}), text("localhost")], "math": [text("4")]},
        judge=lambda body: judge_score(7))).start()
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=GRADERS)
    recording = tmp_path / "rec.jsonl"
    try:
        live = run_cli("run", str(suite), "-o", str(tmp_path / "live"), "--record", str(recording))
    finally:
        server.stop()
    assert live.returncode == 0, live.stderr
    entries = read_jsonl(recording)
    assert len(entries) == len(server.requests) == 5  # 3 agent calls + 2 judge calls
    assert all("authorization" not in json.dumps(e).lower() for e in entries)
    assert {e["context"].split(",")[0] for e in entries} == {"sample host", "sample math"}
    # the server is gone: replay must not need it
    replay = run_cli("run", str(suite), "-o", str(tmp_path / "replay"), "--replay", str(recording))
    assert replay.returncode == 0, replay.stderr
    assert _essence(tmp_path / "replay" / "results.jsonl") == _essence(tmp_path / "live" / "results.jsonl")


def test_replay_miss_names_the_sample_and_step(tmp_path: Path) -> None:
    server = ScriptedServer(agent_script({"host": [call("read_file", {"path": ".env"}), text("localhost")],
                                          "math": [text("4")]},
                                         judge=lambda body: judge_score(7))).start()
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders=GRADERS)
    recording = tmp_path / "rec.jsonl"
    try:
        assert run_cli("run", str(suite), "-o", str(tmp_path / "live"), "--record", str(recording)).returncode == 0
    finally:
        server.stop()
    changed = [ROWS[0], {**ROWS[1], "input": "math: 3+3?"}]
    suite = write_suite(tmp_path, changed, base_url="http://127.0.0.1:9/v1", graders=GRADERS)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "replay"), "--replay", str(recording),
                     "--max-error-rate", "0.5")
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "replay" / "results.jsonl")}
    assert lines["host"]["error"] is None
    error = lines["math"]["error"]
    assert error["category"] == "replay"
    assert "sample math, turn 1, step 1" in error["message"] and "--record" in error["message"]
    assert result.returncode == 0  # 1 of 2 errored is within --max-error-rate 0.5; the other sample passed


def test_replay_file_that_is_not_a_recording_is_exit_2(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS)
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text("not json\n")
    result = run_cli("run", str(suite), "--replay", str(bogus))
    assert result.returncode == 2 and "bogus.jsonl:1" in result.stderr and "Traceback" not in result.stderr
    missing = run_cli("run", str(suite), "--replay", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and "recording not found" in missing.stderr


def _entry(sample: str, fmt: str, status: int, response: object) -> dict[str, object]:
    from evals_cli.endpoints.recording import body_key
    from evals_cli.endpoints.secrets import Redactor

    request = {"model": "judge", "messages": [{"role": "user", "content": f"grade {sample}"}],
               "response_format": {"type": fmt}}
    return {"key": body_key("POST", "chat/completions", request, Redactor()), "path": "chat/completions",
            "request": request, "status": status, "response": response}


def test_a_structured_output_probe_the_server_refused_is_refused_again_from_any_sample(tmp_path: Path) -> None:
    """Under concurrency the judge call that probes json_schema first is whichever gets there first; replay must not
    miss because another sample probed this time. Only the refusal carries over: answers stay keyed by request."""
    import asyncio

    import openai
    import pytest

    from evals_cli.endpoints.context import ReplayMiss
    from evals_cli.endpoints.replay import Recording, ReplayClient

    path = tmp_path / "rec.jsonl"
    lines = [_entry("a", "json_schema", 500, {"error": {"message": "json_schema is not supported"}}),
             _entry("b", "json_object", 200, {"id": "x", "object": "chat.completion", "created": 0, "model": "judge",
                                               "choices": []})]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    client = ReplayClient(Recording(path))

    def ask(sample: str, fmt: str) -> object:
        return asyncio.run(client.create(model="judge", messages=[{"role": "user", "content": f"grade {sample}"}],
                                         response_format={"type": fmt}))

    with pytest.raises(openai.InternalServerError, match="json_schema is not supported"):
        ask("b", "json_schema")  # b never probed at recording; the server's refusal of the format is served
    assert ask("b", "json_object").model == "judge"  # b's recorded answer, as recorded
    with pytest.raises(ReplayMiss):
        ask("c", "json_object")  # an answer is never invented: only a refusal of a format carries over
