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
    from evals_cli.endpoints.keys import body_key
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


def _malformed_replies() -> dict[str, list[object]]:
    """Replies of every shape a broken server sends, each keyed by the row whose agent step gets it."""
    base = text("fine")
    choice = base["choices"][0]
    return {
        "nochoices": [{k: v for k, v in base.items() if k != "choices"}],
        "emptychoices": [{**base, "choices": []}],
        "strchoices": [{**base, "choices": "oops"}],
        "nullmessage": [{**base, "choices": [{**choice, "message": None}]}],
        "numbercontent": [{**base, "choices": [{**choice, "message": {"role": "assistant", "content": 42}}]}],
        "strusage": [{**base, "usage": "many"}, text("x")],
        "strtokens": [{**base, "usage": {"prompt_tokens": "7", "completion_tokens": 2, "total_tokens": 9}}],
        "nofunction": [{**base, "choices": [{**choice, "message": {
            "role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]}}]}, text("x")],
        "customcall": [{**base, "choices": [{**choice, "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "custom", "custom": {"name": "read_file", "input": "x"}}]}}]}, text("x")],
        "nullargs": [call("read_file", None), text("done")],
        "plain": [call("read_file", {"path": ".env"}), text("localhost")],
    }


def test_replayed_replies_of_every_shape_read_as_the_live_ones_did(tmp_path: Path) -> None:
    """Replay reads a plain recorded reply from its JSON, without the SDK (recorded_chat.py): whatever shape a
    reply has, malformed above all, the replayed run must grade, refuse and word it as the live run did."""
    replies = _malformed_replies()
    rows = [{"id": key, "input": f"{key} please", "ground_truth": "localhost"} for key in replies]
    server = ScriptedServer(agent_script(replies)).start()
    suite = write_suite(tmp_path, rows, base_url=server.url, graders={"answer": {"kind": "tool", "function": "contains"}})
    recording = tmp_path / "rec.jsonl"
    try:
        live = run_cli("run", str(suite), "-o", str(tmp_path / "live"), "--record", str(recording), "-c", "1",
                       "--max-error-rate", "1")
    finally:
        server.stop()
    replay = run_cli("run", str(suite), "-o", str(tmp_path / "replay"), "--replay", str(recording), "-c", "1",
                     "--max-error-rate", "1")
    assert replay.returncode == live.returncode

    def essence(folder: str) -> dict[str, object]:
        out = {}
        for r in read_jsonl(tmp_path / folder / "results.jsonl"):
            steps = [{k: v for k, v in s.items() if k not in ("started", "latency_s")}
                     for t in r["trajectory"]["turns"] for s in t["steps"]]
            out[r["sample_id"]] = (steps, r["trajectory"]["stop_reason"], r["error"], r["grades"], r["score"])
        return out

    live_results, replayed = essence("live"), essence("replay")
    assert replayed == live_results
    errors = {k: v[2] for k, v in replayed.items() if v[2] is not None}
    assert {"nochoices", "emptychoices", "strchoices", "nullmessage"} <= set(errors)  # refused, not graded
    assert all(e["category"] == "invalid_response" for e in errors.values())
    assert replayed["plain"][4] == 1.0 and replayed["plain"][0][0]["tool_calls"][0]["name"] == "read_file"


def test_a_recorded_reply_read_from_its_json_gives_what_the_sdk_construct_gives(tmp_path: Path) -> None:
    """Every attribute the loops read, and any other (read from the SDK object built on demand), equals the
    SDK's; a reply of any other shape is the SDK's own object."""
    from openai.types.chat import ChatCompletion

    from evals_cli.endpoints.recorded_chat import RecordedChatCompletion
    from evals_cli.endpoints.replay import _chat_completion

    def read(r: object) -> object:
        choices = r.choices  # type: ignore[attr-defined]
        usage = r.usage  # type: ignore[attr-defined]
        return ([(c.finish_reason, c.message.content, c.message.role,
                  [(t.id, t.type, t.function.name, t.function.arguments) for t in c.message.tool_calls or []])
                 for c in choices],
                None if usage is None else (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
                r.model, r.model_dump())  # type: ignore[attr-defined]

    plain = [call("read_file", {"path": ".env"}, ("grep", None)), text("hi"), {**text("x"), "usage": None},
             {k: v for k, v in text("y").items() if k != "usage"}]
    for payload in plain:
        ours = _chat_completion(payload)
        assert isinstance(ours, RecordedChatCompletion)
        assert read(ours) == read(ChatCompletion.construct(**payload))
    for replies in _malformed_replies().values():
        payload = replies[0]
        assert isinstance(payload, dict)
        if not isinstance(_chat_completion(payload), RecordedChatCompletion):
            assert isinstance(_chat_completion(payload), ChatCompletion)
