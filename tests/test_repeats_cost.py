"""Repeats with pass@k / pass^k (and a gate on them), against a scripted agent that answers correctly only
on some repeats; pricing and the max_cost spend cap."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, completion, last_user, text

ROWS = [{"id": "always", "input": "always right", "ground_truth": "yes"},
        {"id": "flaky", "input": "flaky one", "ground_truth": "yes"},
        {"id": "never", "input": "never right", "ground_truth": "yes"}]


class Flaky:
    """'always' is always answered right, 'never' never, 'flaky' right on every other attempt."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.flaky_calls = 0

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        user = last_user(body)
        if user.startswith("always"):
            return text("yes")
        if user.startswith("never"):
            return text("no")
        with self.lock:
            self.flaky_calls += 1
            return text("yes" if self.flaky_calls % 2 else "no")


def test_pass_at_k_and_pass_hat_k(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = Flaky()
    suite = write_suite(tmp_path, ROWS, base_url=server.url, concurrency=1,
                        graders={"answer": {"kind": "tool", "function": "contains"}},
                        gate={"aggregation": "pass_hat_k", "op": "gte", "value": 0.5})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--repeats", "4")
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(lines) == 12 and sorted({r["repeat"] for r in lines}) == [0, 1, 2, 3]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    reliability = summary["reliability"]
    assert reliability["repeats"] == 4 and reliability["samples"] == 3
    assert reliability["pass_at_k"] == 2 / 3  # always + flaky passed at least once
    assert reliability["pass_hat_k"] == 1 / 3  # only 'always' passed every time
    assert reliability["mean_pass_rate"] == (1 + 0.5 + 0) / 3
    assert result.returncode == 1  # pass^k 0.333 < 0.5
    assert "2/4" in result.stdout and "4/4" in result.stdout and "0/4" in result.stdout
    assert "pass^4 0.33" in result.stdout
    at_k = write_suite(tmp_path, ROWS, base_url=server.url, concurrency=1,
                       graders={"answer": {"kind": "tool", "function": "contains"}},
                       gate={"aggregation": "pass_at_k", "op": "gte", "value": 0.6}, repeats=4)
    assert run_cli("run", str(at_k), "-o", str(tmp_path / "out2")).returncode == 0  # pass@4 0.667 >= 0.6


def test_pricing_and_spend_cap(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: completion("yes", prompt_tokens=1000, completion_tokens=500)
    rows = [{"id": f"s{i}", "input": f"q{i}", "ground_truth": "yes"} for i in range(20)]
    # 1000 in at 2.0/M + 500 out at 4.0/M = 0.004 per sample; the cap of 0.01 is passed at the 3rd sample
    suite = write_suite(tmp_path, rows, base_url=server.url, concurrency=1,
                        graders={"answer": {"kind": "tool", "function": "contains"}},
                        pricing={"scripted": {"input": 2.0, "output": 4.0}}, max_cost=0.01)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 3
    lines = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(lines) == 3 and all(abs(r["cost"] - 0.004) < 1e-9 for r in lines)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert abs(summary["cost"] - 0.012) < 1e-9 and summary["status"] == "aborted"
    assert "spend cap max_cost 0.01 reached" in summary["abort_reason"] and "spend cap" in result.stderr
    assert "cost: 0.0120" in result.stdout
