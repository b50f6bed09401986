"""Fault injection against the scripted loopback server: retries, timeouts, dropped connections, garbage
bodies. The run completes (or exits 3 where it must) and every sample is accounted for exactly once."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, call, completion, last_user, text


class Faults:
    """A script whose reply depends on the sample's fault name and how often that sample was seen."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()
        self.first_429_at: float | None = None
        self.retry_429_at: float | None = None

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        fault = last_user(body)
        steps = sum(1 for m in body["messages"] if m["role"] == "assistant")
        with self.lock:
            n = self.seen[fault] = self.seen.get(fault, 0) + 1
        if fault == "ok":
            return text("fine")
        if fault == "500-then-ok":
            return Reply({"error": {"message": "overloaded"}}, status=500) if n == 1 else text("fine")
        if fault == "500-always":
            return Reply({"error": {"message": "overloaded"}}, status=503)
        if fault == "429-retry-after":
            if n == 1:
                self.first_429_at = time.monotonic()
                return Reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "1"})
            self.retry_429_at = time.monotonic()
            return text("fine")
        if fault == "slow":
            return Reply(text("too late"), delay=2.5)
        if fault == "drop":
            return Reply(text("never arrives"), partial=True)
        if fault == "drop-then-ok":
            return Reply(text("x"), drop=True) if n == 1 else text("fine")
        if fault == "bad-json-body":
            return Reply(b"{this is not json", status=200)
        if fault == "no-choices":
            body_ = completion("x")
            body_["choices"] = []
            return body_
        if fault == "broken-tool-args":
            return call("read_file", '{"path": ".env",') if steps == 0 else text("fine anyway")
        return Reply({"error": {"message": f"unscripted {fault}"}}, status=400)


FAULTS = ["ok", "500-then-ok", "500-always", "429-retry-after", "slow", "drop", "drop-then-ok", "bad-json-body",
          "no-choices", "broken-tool-args"]
EXPECTED = {
    "ok": None, "500-then-ok": None, "429-retry-after": None, "drop-then-ok": None, "broken-tool-args": None,
    "500-always": "endpoint", "slow": "timeout", "drop": "endpoint", "bad-json-body": "invalid_response",
    "no-choices": "invalid_response",
}


@pytest.mark.slow  # every fault kind against a live run: seconds; make test-slow runs it
def test_fault_matrix_accounts_for_every_sample_once(server: ScriptedServer, tmp_path: Path) -> None:
    faults = Faults()
    server.script = faults
    rows = [{"id": f, "input": f, "ground_truth": "fine"} for f in FAULTS]
    # every fault in flight at once (none of them is fatal, so the order samples finish in changes nothing): the
    # run takes as long as its slowest sample, not the sum of every retry, timeout and back-off in the matrix
    suite = write_suite(tmp_path, rows, base_url=server.url, concurrency=len(FAULTS),
                        target={"max_retries": 2, "timeout": 1.0},
                        graders={"answer": {"kind": "tool", "function": "contains"}}, gate={"value": 0.5})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--max-error-rate", "0.6")
    assert "Traceback" not in result.stderr
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == sorted(FAULTS)  # each exactly once
    got = {r["sample_id"]: (r["error"] or {}).get("category") for r in lines}
    assert got == EXPECTED
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["total"] == 10 and summary["errored"] == 5 and summary["graded"] == 5
    assert summary["errors_by_category"] == {"endpoint": 2, "timeout": 1, "invalid_response": 2, "tool_args": 1}
    assert result.returncode == 0, result.stdout  # 5 graded samples all answered "fine"
    # retries: 500 then ok, 3 attempts for the always-failing one, Retry-After honoured
    assert faults.seen["500-then-ok"] == 2 and faults.seen["500-always"] == 3
    assert faults.retry_429_at is not None and faults.first_429_at is not None
    assert faults.retry_429_at - faults.first_429_at >= 0.9
    broken = next(r for r in lines if r["sample_id"] == "broken-tool-args")
    [bad_call] = broken["trajectory"]["turns"][0]["steps"][0]["tool_calls"]
    assert bad_call["arguments"] is None and bad_call["raw_arguments"] == '{"path": ".env",'
    assert "errors: endpoint 2, invalid_response 2, timeout 1, tool_args 1" in result.stdout


def test_error_rate_past_the_limit_exits_3_and_stops_scheduling(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = Faults()
    rows = [{"id": "ok", "input": "ok"}] + [{"id": f"bad{i}", "input": "500-always"} for i in range(30)]
    suite = write_suite(tmp_path, rows, base_url=server.url, concurrency=1, target={"max_retries": 0},
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert 10 <= len(lines) < 31  # stopped once past the rate, after the minimum of 10 samples
    assert len({r["sample_id"] for r in lines}) == len(lines)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["status"] == "aborted" and "max-error-rate" in summary["abort_reason"]
    assert "stopped scheduling" in result.stderr


def test_sample_timeout_keeps_the_partial_trajectory(server: ScriptedServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The first step answers at once; the second request is held by the server until the test ends. Only once
    that second request has arrived (so the first step is recorded) does the sample's bound expire: the test
    moves the run's event-loop clock past it, so no wall-clock race decides how many steps are kept, however
    loaded the machine is (the real clock never gets near the bound)."""
    limit = 600.0
    skipped = [0.0]
    loops: list[asyncio.AbstractEventLoop] = []
    real_time = asyncio.BaseEventLoop.time

    def loop_time(self: asyncio.BaseEventLoop) -> float:
        if self not in loops:
            loops.append(self)
        return real_time(self) + skipped[0]

    monkeypatch.setattr(asyncio.BaseEventLoop, "time", loop_time)
    release = threading.Event()
    requests: list[int] = []

    def script(path: str, body: dict[str, Any]) -> Any:
        requests.append(1)
        if len(requests) == 1:
            return call("list_files", {"directory": "."})
        skipped[0] = limit  # the sample's bound is now past: wake the run's loop so that it sees so
        for loop in loops:
            if not loop.is_closed():
                loop.call_soon_threadsafe(lambda: None)
        release.wait(timeout=60)  # bounded: were the bound not enforced, the run ends here and the test says so
        return text("done")

    server.script = script
    suite = write_suite(tmp_path, [{"id": "loops", "input": "go"}], base_url=server.url,
                        target={"max_steps": 50, "timeout": 6 * limit})  # past the bound: not the one that fires
    try:
        result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--sample-timeout", f"{limit:g}",
                         "--max-error-rate", "1")
    finally:
        release.set()
    assert result.returncode == 3  # nothing graded: no verdict
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"]["category"] == "timeout" and "sample_timeout" in line["error"]["message"]
    steps = line["trajectory"]["turns"][0]["steps"]
    assert len(steps) == 1 and steps[0]["tool_calls"][0]["name"] == "list_files"
    assert line["trajectory"]["stop_reason"] == "error"
    assert len(requests) == 2  # the held second step was the last request: the bound stopped the sample there


def test_bad_key_fails_fast_naming_the_setting(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: Reply({"error": {"message": "Incorrect API key provided: sk-test"}},
                                             status=401)
    rows = [{"id": f"s{i}", "input": "x"} for i in range(8)]
    suite = write_suite(tmp_path, rows, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    assert result.stderr.count("EVAL_AGENT_API_KEY") == 1 and "401" in result.stderr
    assert len(server.requests) <= 2


def test_bad_request_before_any_success_is_fatal_with_the_settings_named(server: ScriptedServer,
                                                                         tmp_path: Path) -> None:
    server.script = lambda path, body: Reply({"error": {"message": "tool_choice not supported"}}, status=400)
    rows = [{"id": f"s{i}", "input": "x"} for i in range(8)]
    suite = write_suite(tmp_path, rows, base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    assert "tool_choice" in result.stderr and "extra_body" in result.stderr
