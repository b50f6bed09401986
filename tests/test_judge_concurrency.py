"""Every judge call goes through the run's concurrency limit, and a structured-output step-down (json_schema ->
HTTP 500 -> json_object) learnt on one call is reused by the calls after it: for `evals analyze -c N`, recorded
sessions suites and the model_judge grader alike (one cache per run, shared by both)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from evals_cli import load_suite, run_suite
from evals_cli.analyze import analyze_command
from evals_cli.endpoints.pool import ClientPool
from evals_cli.graders.judge_call import step_downs
from evals_cli.runner import RunOptions
from evals_cli.sessions.view import analyses
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, is_judge, text

pytestmark = pytest.mark.slow  # judges held open to count what is in flight: make test-slow runs them

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "datasets" / "multi_agent_sessions.jsonl"


def verdict(body: dict[str, Any]) -> dict[str, Any]:
    content = body["messages"][1]["content"]
    if "Metric: turn\n" in content:
        return text(json.dumps({"reason": "ok", "choice": "good"}))
    if "Metric: task_completion\n" in content:
        return text(json.dumps({"reason": "ok", "verdict": "pass"}))
    return text(json.dumps({"reason": "ok", "score": 8}))


class Meter:
    """Counts the judge requests in flight at once; optionally refuses json_schema like llama.cpp (HTTP 500)."""

    def __init__(self, refuse_schema: bool = False, delay: float = 0.01) -> None:
        self.lock = threading.Lock()
        self.live = self.peak = 0
        self.refuse_schema = refuse_schema
        self.delay = delay

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        with self.lock:
            self.live += 1
            self.peak = max(self.peak, self.live)
        try:
            time.sleep(self.delay)
            if self.refuse_schema and body.get("response_format", {}).get("type") == "json_schema":
                return Reply({"error": {"message": "json_schema not supported"}}, status=500)
            if not is_judge(body):
                return text("localhost")  # the agent's answer
            return verdict(body)
        finally:
            with self.lock:
                self.live -= 1


def schema_requests(server: ScriptedServer) -> int:
    return sum(1 for r in server.judge_requests() if r["body"].get("response_format", {}).get("type") == "json_schema")


@pytest.mark.parametrize("concurrency", [1, 2])
def test_analyze_never_has_more_judge_calls_in_flight_than_c(server: ScriptedServer, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             concurrency: int) -> None:
    meter = Meter()
    server.script = meter
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "scripted")
    code = analyze_command(DATASET, tmp_path / "out", judge_base_url=server.url, concurrency=concurrency, quiet=True)
    assert code in (0, 1)
    assert len(server.judge_requests()) > 50  # every session asks many questions ...
    assert meter.peak == concurrency  # ... never more than -c of them at once


def test_the_step_down_is_learnt_once_per_run_not_once_per_concurrent_call(server: ScriptedServer, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    meter = Meter(refuse_schema=True)
    server.script = meter
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "scripted")
    code = analyze_command(DATASET, tmp_path / "out", judge_base_url=server.url, concurrency=4, quiet=True)
    assert code in (0, 1)
    analysed = list(analyses(tmp_path / "out"))
    assert len(analysed) == 8 and all(a.judge.errors == [] and a.judge.calls > 0 for a in analysed)
    assert schema_requests(server) == 1
    assert meter.peak > 1  # the calls after the first still ran side by side


def test_analyze_c_1_from_the_command_line(server: ScriptedServer, tmp_path: Path) -> None:
    meter = Meter(refuse_schema=True)
    server.script = meter
    result = run_cli("analyze", str(DATASET), "-o", str(tmp_path / "out"), "-c", "1", "--judge-model", "scripted",
                     "--judge-base-url", server.url, "-q")
    assert result.returncode in (0, 1), result.stderr
    assert meter.peak == 1 and schema_requests(server) == 1


def test_model_judge_graders_learn_the_step_down_once_per_run(server: ScriptedServer, tmp_path: Path) -> None:
    meter = Meter(refuse_schema=True, delay=0.05)
    server.script = meter
    rows = [{"id": f"s{i}", "input": "db host?", "ground_truth": "localhost"} for i in range(6)]
    path = write_suite(tmp_path, rows, base_url=server.url, gate={"value": 0.5}, concurrency=4, graders={
        "judge": {"kind": "model_judge", "prompt": "Grade: {{ submission }}"},
        "second": {"kind": "model_judge", "prompt": "Again: {{ submission }}"}})
    run_suite(load_suite(path), RunOptions(output=tmp_path / "out"))
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert [line["grades"]["judge"]["score"] for line in lines] == [0.8] * 6
    assert schema_requests(server) == 1
    assert [line["grades"]["second"]["metadata"]["mode"] for line in lines] == ["json_object"] * 6


def test_each_run_learns_afresh() -> None:
    """The cache belongs to the run's pool: a server fixed between two runs is asked json_schema again."""
    first, second = ClientPool(), ClientPool()
    step_downs(first).refused(("http://x/v1", "m"), 0)
    assert step_downs(first).first(("http://x/v1", "m")) == 1
    assert step_downs(second).first(("http://x/v1", "m")) == 0
    assert step_downs(first) is step_downs(first)
