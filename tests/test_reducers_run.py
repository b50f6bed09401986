"""gate.reducer end to end: a scripted agent (the real openai client on loopback) answers each sample's three
repeats as planned, and the gate reads the samples the reducer made; the counts of runs stay as they are."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, last_user, text

# each sample's repeats in order (concurrency 1: a sample's repeats run back to back, in order)
PLAN = {"s1": ["yes", "no", "yes"], "s2": ["no", "no", "yes"], "s3": ["yes", "ERR", "no"], "s4": ["no", "no", "no"]}
ROWS = [{"id": sid, "input": f"{sid} question", "ground_truth": "yes"} for sid in PLAN]


class Planned:
    """Answers each sample's n-th request with PLAN's n-th reply; ERR is a 500 (the repeat errors: endpoint)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        sid = last_user(body).split()[0]
        with self.lock:
            answer = PLAN[sid][self.seen[sid]]
            self.seen[sid] += 1
        return Reply({"error": {"message": "scripted outage"}}, status=500) if answer == "ERR" else text(answer)


def _run(server: ScriptedServer, tmp: Path, reducer: str | None) -> tuple[int, str, dict[str, Any]]:
    server.script = Planned()
    gate: dict[str, Any] = {"aggregation": "pass_rate", "op": "gte", "value": 0.5, "pass_value": 0.5}
    if reducer is not None:
        gate["reducer"] = reducer
    folder = tmp / (reducer or "none")
    folder.mkdir()
    suite = write_suite(folder, ROWS, base_url=server.url, concurrency=1, repeats=3,
                        graders={"answer": {"kind": "match", "function": "contains"}}, gate=gate)
    result = run_cli("run", str(suite), "-o", str(folder / "out"))
    lines = read_jsonl(folder / "out" / "results.jsonl")
    assert len(lines) == 12 and sum(1 for r in lines if r["error"]) == 1  # every repeat's line, as always
    summary = json.loads((folder / "out" / "summary.json").read_text())
    # the run's own counts count runs whatever the reducer
    assert (summary["total"], summary["passed"], summary["failed"], summary["errored"]) == (12, 4, 7, 1)
    return result.returncode, result.stdout, summary


def _rows(out: str) -> dict[str, str]:
    """The table's row per sample (its first line naming the sample; the reasons under the table come after)."""
    rows: dict[str, str] = {}
    for line in out.splitlines():
        words = line.split()
        if words and words[0] in PLAN:
            rows.setdefault(words[0], line.strip())
    return rows


def test_without_a_reducer_the_gate_reads_every_run(server: ScriptedServer, tmp_path: Path) -> None:
    code, out, summary = _run(server, tmp_path, None)
    assert summary["reduced"] is None
    assert summary["gate"]["metric"] == pytest.approx(4 / 11)  # 4 of the 11 graded runs passed
    assert code == 1 and "each sample" not in summary["gate"]["message"]


def test_mean_reduces_each_sample_before_the_gate(server: ScriptedServer, tmp_path: Path) -> None:
    code, out, summary = _run(server, tmp_path, "mean")
    reduced = summary["reduced"]
    by_id = {s["sample_id"]: s for s in reduced["per_sample"]}
    # s1 2/3, s2 1/3, s3 1/2 (its errored repeat left out, never a zero), s4 0: pass at 0.5 for s1 and s3
    assert {sid: s["score"] for sid, s in by_id.items()} == pytest.approx({"s1": 2 / 3, "s2": 1 / 3, "s3": 0.5,
                                                                            "s4": 0.0})
    assert {sid: s["passed"] for sid, s in by_id.items()} == {"s1": True, "s2": False, "s3": True, "s4": False}
    assert (by_id["s3"]["repeats"], by_id["s3"]["graded"], by_id["s3"]["passes"]) == (3, 2, 1)
    assert (reduced["samples"], reduced["passed"], reduced["failed"], reduced["errored"]) == (4, 2, 2, 0)
    assert reduced["graders"]["answer"]["avg_score"] == pytest.approx((2 / 3 + 1 / 3 + 0.5 + 0) / 4)
    assert summary["gate"]["passed"] is True and summary["gate"]["metric"] == 0.5 and code == 0
    assert "(each sample: the mean of its 3 repeats)" in summary["gate"]["message"]
    rows = _rows(out)
    assert "2/3" in rows["s1"] and rows["s1"].endswith("→ ✓ mean 0.67")
    assert "1/3 (endpoint)" in rows["s3"] and rows["s3"].endswith("→ ✓ mean 0.50")
    assert "0/3" in rows["s4"] and rows["s4"].endswith("→ ✗ mean 0.00")
    assert "reduced (mean of 3 repeats): 4 samples: 2 passed, 2 failed, 0 errored" in out
    assert "12 sample runs (4 samples × 3 repeats): 4 passed, 7 failed, 1 errored" in out


def test_at_least_n_counts_passed_repeats_and_an_error_is_not_a_fail(server: ScriptedServer,
                                                                      tmp_path: Path) -> None:
    code, out, summary = _run(server, tmp_path, "at_least_2")
    by_id = {s["sample_id"]: s for s in summary["reduced"]["per_sample"]}
    assert by_id["s1"]["passed"] is True and by_id["s2"]["passed"] is False and by_id["s4"]["passed"] is False
    assert by_id["s2"]["failed_by"][0]["rule"] == "at_least"
    # s3: one repeat passed and one errored: the errored one could have been the second pass
    assert by_id["s3"]["passed"] is None and by_id["s3"]["error"]["category"] == "endpoint"
    reduced = summary["reduced"]
    assert (reduced["passed"], reduced["failed"], reduced["errored"]) == (1, 2, 1)
    assert summary["gate"]["metric"] == pytest.approx(1 / 3) and code == 1
    rows = _rows(out)
    assert rows["s3"].endswith("→ incomplete: endpoint") and rows["s1"].endswith("→ ✓ at_least_2")
    assert rows["s2"].endswith("→ ✗ at_least_2")


def test_max_passes_a_sample_on_its_best_repeat(server: ScriptedServer, tmp_path: Path) -> None:
    code, out, summary = _run(server, tmp_path, "max")
    by_id = {s["sample_id"]: s for s in summary["reduced"]["per_sample"]}
    assert {sid: s["passed"] for sid, s in by_id.items()} == {"s1": True, "s2": True, "s3": True, "s4": False}
    assert summary["gate"]["metric"] == 0.75 and code == 0


@pytest.mark.parametrize(("gate", "args", "wanted"), [
    ({"reducer": "at_least_4"}, (), "gate.reducer: at_least_4 needs 4 repeats of every sample, and repeats: 3 "
                                    "runs each sample 3 time(s)"),
    ({"reducer": "at_least_2"}, ("-r", "1"), "gate.reducer: at_least_2 needs 2 repeats of every sample, and "
                                             "--repeats 1 runs each sample 1 time(s)"),
    ({"reducer": "avg"}, (), "unknown reducer 'avg'"),
    ({"kind": "custom", "function": "reward.py:score", "aggregation": "pass_rate", "reducer": "mean"}, (),
     "cannot reduce a custom reward gate"),
    ({"kind": "logical", "operator": "and", "gates": [{"kind": "simple", "metric_key": "answer",
                                                       "reducer": "mean"}]}, (),
     "gate.gates.0.reducer: reducer is read from the top-level gate only"),
])
def test_a_reducer_that_cannot_work_is_exit_2_naming_it(tmp_path: Path, gate: dict[str, Any],
                                                        args: tuple[str, ...], wanted: str) -> None:
    (tmp_path / "reward.py").write_text("def score(ctx):\n    return 1.0\n")
    suite = write_suite(tmp_path, ROWS, repeats=3, graders={"answer": {"kind": "match", "function": "contains"}},
                        gate=gate)
    # -r is run's own option: validate checks the suite's repeats (3, enough for at_least_2)
    for command in ("run",) if args else ("validate", "run"):
        extra = (*args, "-o", str(tmp_path / "out")) if command == "run" else ()
        result = run_cli(command, str(suite), *extra)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert wanted in result.stdout + result.stderr, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
