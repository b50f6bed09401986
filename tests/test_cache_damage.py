"""A damaged `--cache` or `--replay` file: a torn last line (a run SIGKILLed while appending) is removed with a
warning and its request called again, not a file that is unusable until edited; a recorded 200 whose body is not
a JSON object is a miss (called again, or a replay miss), never served as an answer."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import ScriptedServer, agent_script, judge_score
from tests.test_cache import SCRIPT, _run, _suite, _verdicts


def _first_run(tmp_path: Path, server: ScriptedServer) -> tuple[Path, Path, int]:
    server.script = agent_script(SCRIPT, judge=lambda body: judge_score(9))
    suite, cache = _suite(tmp_path, server), tmp_path / "cache.jsonl"
    _run(suite, tmp_path / "one", cache)
    return suite, cache, len(server.requests)


def test_a_torn_last_line_is_removed_with_a_warning_and_its_request_called_again(tmp_path: Path,
                                                                               server: ScriptedServer) -> None:
    suite, cache, made = _first_run(tmp_path, server)
    lines = cache.read_bytes().splitlines(keepends=True)
    cache.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # killed mid-append
    result = run_cli("run", str(suite), "-o", str(tmp_path / "two"), "--cache", str(cache))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"--cache {cache}:{len(lines)}: torn last line removed" in result.stderr
    summary = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert summary["cache"]["misses"] == 1 and summary["cache"]["hits"] == made - 1
    assert len(server.requests) == made + 1
    assert len(read_jsonl(cache)) == made  # whole again: the torn part gone, the new answer on its own line
    assert _verdicts(tmp_path / "two") == _verdicts(tmp_path / "one")


def _break_math_answer(cache: Path) -> None:
    """The agent's answer to the math row, recorded as 200 with a list body instead of a completion."""
    entries = read_jsonl(cache)
    for entry in entries:
        if "math" in json.dumps(entry["request"].get("messages", [])[-1:]) and "choices" in entry["response"]:
            entry["response"] = ["not", "a", "completion"]
            break
    else:
        raise AssertionError("no math answer recorded")
    cache.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")


def test_a_recorded_200_that_is_not_an_object_is_a_miss_not_an_answer(tmp_path: Path,
                                                                      server: ScriptedServer) -> None:
    suite, cache, made = _first_run(tmp_path, server)
    _break_math_answer(cache)
    summary, _ = _run(suite, tmp_path / "two", cache)
    assert summary["cache"]["roles"]["agent"]["misses"] == 1 and len(server.requests) == made + 1
    assert _verdicts(tmp_path / "two") == _verdicts(tmp_path / "one")


def test_replaying_a_recorded_200_that_is_not_an_object_is_a_replay_miss(tmp_path: Path,
                                                                        server: ScriptedServer) -> None:
    suite, cache, made = _first_run(tmp_path, server)
    _break_math_answer(cache)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "two"), "--replay", str(cache))
    errors = {r["sample_id"]: r["error"] for r in read_jsonl(tmp_path / "two" / "results.jsonl")}
    assert errors["host"] is None and errors["math"]["category"] == "replay", errors
    assert "is not a JSON object" in errors["math"]["message"] and "re-record with --record" in errors["math"]["message"]
    assert result.returncode != 0 and len(server.requests) == made
