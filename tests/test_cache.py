"""`--cache FILE` against the scripted loopback server: the first run calls and records, a second run of the
unchanged suite makes no request at all, a changed rubric calls only the judge, a failed call is never served
from the cache, and the summary (terminal and summary.json) counts hits and misses per role."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, judge_score, text

ROWS = [
    {"id": "host", "input": "db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
    {"id": "math", "input": "math: 2+2?", "ground_truth": "4"},
]
SCRIPT = {"host": [call("read_file", {"path": ".env"}), text("The host is localhost.")], "math": [text("4")]}
GRADERS = {"answer": {"kind": "tool", "function": "contains"},
           "quality": {"kind": "model_judge", "prompt": "Is {{ submission }} right? Expected {{ ground_truth }}."}}


def _suite(tmp_path: Path, server: ScriptedServer, prompt: str | None = None) -> Path:
    graders: dict[str, Any] = json.loads(json.dumps(GRADERS))
    if prompt is not None:
        graders["quality"]["prompt"] = prompt
    return write_suite(tmp_path, ROWS, base_url=server.url, graders=graders,
                       judge={"model": "judge-model", "base_url": server.url, "api_key": "sk-judge"})


def _run(suite: Path, out: Path, cache: Path, *extra: str) -> tuple[dict[str, Any], str]:
    result = run_cli("run", str(suite), "-o", str(out), "--cache", str(cache), *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads((out / "summary.json").read_text()), result.stdout


def _verdicts(out: Path) -> list[tuple[str, int, bool, dict[str, float]]]:
    return sorted((r["sample_id"], r["repeat"], r["passed"], {n: g["score"] for n, g in r["grades"].items()})
                  for r in read_jsonl(out / "results.jsonl"))


def test_a_second_run_of_an_unchanged_suite_calls_no_model(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script(SCRIPT, judge=lambda body: judge_score(9))
    suite, cache = _suite(tmp_path, server), tmp_path / "cache.jsonl"
    first, _ = _run(suite, tmp_path / "one", cache, "--repeats", "2")
    made = len(server.requests)
    agent, judge = len(server.agent_requests()), len(server.judge_requests())
    assert agent == 6 and judge == 4  # 3 agent steps and 2 judge calls per repeat
    assert first["cache"] == {"file": str(cache), "hits": 0, "misses": made,
                              "roles": {"agent": {"hits": 0, "misses": agent}, "judge": {"hits": 0, "misses": judge}}}
    assert len(read_jsonl(cache)) == made  # every call recorded, as --record writes it

    second, stdout = _run(suite, tmp_path / "two", cache, "--repeats", "2")
    assert len(server.requests) == made  # not one request reached the server
    assert second["cache"]["hits"] == made and second["cache"]["misses"] == 0
    assert second["cache"]["roles"] == {"agent": {"hits": agent, "misses": 0}, "judge": {"hits": judge, "misses": 0}}
    assert f"cache: {made} hits, 0 misses" in stdout
    assert _verdicts(tmp_path / "two") == _verdicts(tmp_path / "one")
    assert second["gate"] == first["gate"] and second["usage"] == first["usage"]
    assert len(read_jsonl(cache)) == made  # nothing new to add

    # the cache file is a recording: --replay plays it offline, to the same verdicts
    replayed = run_cli("run", str(suite), "-o", str(tmp_path / "three"), "--replay", str(cache), "--repeats", "2")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert _verdicts(tmp_path / "three") == _verdicts(tmp_path / "one") and len(server.requests) == made


def test_a_changed_rubric_calls_only_the_judge(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script(SCRIPT, judge=lambda body: judge_score(9))
    cache = tmp_path / "cache.jsonl"
    _run(_suite(tmp_path, server), tmp_path / "one", cache)
    before = len(server.requests)
    changed = _suite(tmp_path, server, prompt="Strictly now: is {{ submission }} exactly {{ ground_truth }}?")
    summary, stdout = _run(changed, tmp_path / "two", cache)
    new = server.requests[before:]
    assert len(new) == 2 and all(r in server.judge_requests() for r in new)  # one judge call per sample, no agent
    assert summary["cache"]["roles"] == {"agent": {"hits": 3, "misses": 0}, "judge": {"hits": 0, "misses": 2}}
    assert (summary["cache"]["hits"], summary["cache"]["misses"]) == (3, 2)
    assert "cache: 3 hits, 2 misses (judge 2)" in stdout
    # and the new judge answers are cached in turn: a third run calls nothing
    _run(changed, tmp_path / "three", cache)
    assert len(server.requests) == before + 2


def test_a_failed_call_is_not_served_from_the_cache(tmp_path: Path, server: ScriptedServer) -> None:
    """A 500 recorded by the first run is called again, not replayed as a permanent failure."""
    broken = {"math": [Reply({"error": {"message": "overloaded"}}, status=500)], "host": SCRIPT["host"]}
    server.script = agent_script(broken, judge=lambda body: judge_score(9))
    suite, cache = _suite(tmp_path, server), tmp_path / "cache.jsonl"
    first = run_cli("run", str(suite), "-o", str(tmp_path / "one"), "--cache", str(cache), "--max-error-rate", "1")
    errored = {r["sample_id"]: r["error"] for r in read_jsonl(tmp_path / "one" / "results.jsonl")}
    assert first.returncode in (0, 1) and errored["math"] is not None and errored["host"] is None
    assert any(line["status"] == 500 for line in read_jsonl(cache))
    server.script = agent_script(SCRIPT, judge=lambda body: judge_score(9))
    before = len(server.requests)
    summary, _ = _run(suite, tmp_path / "two", cache)
    again = server.requests[before:]
    assert [r["body"]["messages"][-1]["content"] for r in again if r in server.agent_requests()] == ["math: 2+2?"]
    assert summary["cache"]["roles"]["agent"] == {"hits": 2, "misses": 1} and summary["passed"] == 2


@pytest.mark.parametrize("other", ["--record", "--replay"])
def test_cache_with_record_or_replay_is_a_usage_error(tmp_path: Path, server: ScriptedServer, other: str) -> None:
    suite = _suite(tmp_path, server)
    (tmp_path / "rec.jsonl").write_text("", encoding="utf-8")
    result = run_cli("run", str(suite), "--cache", str(tmp_path / "c.jsonl"), other, str(tmp_path / "rec.jsonl"))
    assert result.returncode == 2 and f"--cache with {other}" in result.stderr and "Traceback" not in result.stderr
    assert server.requests == []


def test_a_cache_file_that_is_not_a_recording_names_its_line(tmp_path: Path, server: ScriptedServer) -> None:
    suite = _suite(tmp_path, server)
    cache = tmp_path / "cache.jsonl"
    cache.write_text('{"key": "k", "status": 200, "response": {}}\nnot json\n', encoding="utf-8")
    result = run_cli("run", str(suite), "--cache", str(cache))
    assert result.returncode == 2 and f"{cache}:2" in result.stderr and server.requests == []


def test_several_models_share_one_cache_file(tmp_path: Path, server: ScriptedServer) -> None:
    """Each model's requests carry its name, so one file caches every model; the side-by-side view counts each
    model's hits and misses."""
    server.script = agent_script(SCRIPT, judge=lambda body: judge_score(9))
    suite, cache = _suite(tmp_path, server), tmp_path / "cache.jsonl"
    first = run_cli("run", str(suite), "-o", str(tmp_path / "one"), "--cache", str(cache), "--model", "m1",
                    "--model", "m2")
    assert first.returncode == 0, first.stdout + first.stderr
    made = len(server.requests)
    assert {r["body"]["model"] for r in server.agent_requests()} == {"m1", "m2"}
    second = run_cli("run", str(suite), "-o", str(tmp_path / "two"), "--cache", str(cache), "--model", "m1",
                     "--model", "m2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert len(server.requests) == made
    for model in ("m1", "m2"):
        summary = json.loads((tmp_path / "two" / model / "summary.json").read_text())
        assert summary["cache"]["misses"] == 0 and summary["cache"]["hits"] == made // 2
    [row] = [line for line in second.stdout.splitlines() if "cache hits / misses" in line]
    assert row.split()[-6:] == [str(made // 2), "/", "0", str(made // 2), "/", "0"]


def test_prompts_that_differ_only_in_credential_looking_text_keep_their_own_answers(
        tmp_path: Path, server: ScriptedServer) -> None:
    """Masked before hashing, both prompts had one key, and a rerun served sample b sample a's answer (a false
    fail; found in review). The stored bodies stay masked."""
    rows = [{"id": "a", "input": "Is Bearer aaaaaaaaaa1111111111 valid?", "ground_truth": "VALID"},
            {"id": "b", "input": "Is Bearer bbbbbbbbbb2222222222 valid?", "ground_truth": "REVOKED"}]
    server.script = agent_script({"aaaa": [text("VALID")], "bbbb": [text("REVOKED")]})
    suite = write_suite(tmp_path, rows, base_url=server.url, concurrency=1,
                        graders={"answer": {"kind": "match", "function": "contains"}})
    cache = tmp_path / "cache.jsonl"
    assert run_cli("run", str(suite), "-o", str(tmp_path / "r1"), "--cache", str(cache)).returncode == 0
    before = len(server.requests)
    again = run_cli("run", str(suite), "-o", str(tmp_path / "r2"), "--cache", str(cache), "--sample-id", "b")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(server.requests) == before  # served from the cache ...
    [line] = read_jsonl(tmp_path / "r2" / "results.jsonl")
    assert line["grades"]["answer"]["submission"] == "REVOKED"  # ... with its own answer
    assert "aaaaaaaaaa1111111111" not in cache.read_text(encoding="utf-8")
