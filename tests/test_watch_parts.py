"""The pieces of `evals watch` on their own: the assembler's finishing rule and its bound, the sampler, the budget,
the metrics text (read by Prometheus' own parser), the suite's problems (exit 2 at their line), the listen rule,
and the windows' rotation and restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals_cli.errors import ConfigError
from evals_cli.models.results import Grade, SampleResult
from evals_cli.traces.otlp import Span
from evals_cli.watch.assembler import Assembler
from evals_cli.watch.budget import Budget
from evals_cli.watch.metrics import Exposition
from evals_cli.watch.sampler import sampled
from evals_cli.watch.server import Listen, parse_listen
from evals_cli.watch.suite import load_watch_suite
from tests.helpers import run_cli
from tests.watch_helpers import write_watch_suite


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def span(trace: int, n: int, parent: int | None = None, ended: bool = True) -> Span:
    return Span(trace_id=f"{trace:032x}", span_id=f"{n:016x}", parent_id=f"{parent:016x}" if parent else None,
                name="chat m", start_ns=n, end_ns=n + 1 if ended else None, attributes={}, where="live")


def test_a_trace_is_finished_quiet_seconds_after_its_root_ended_or_at_max_age() -> None:
    clock = Clock()
    asm = Assembler(quiet=1.0, max_age=10.0, max_spans=100, keep=lambda t: True, clock=clock)
    asm.add([span(1, 2, parent=1), span(2, 3, parent=9)])  # children first, as exporters send them
    clock.now = 5.0
    assert asm.due() == []  # no root yet: not finished, however quiet
    asm.add([span(1, 1)])  # the root ends
    clock.now = 5.5
    assert asm.due() == []
    clock.now = 6.0
    [done] = asm.due()
    assert (done.trace_id, done.reason, done.root_ended, len(done.spans)) == (f"{1:032x}", "quiet", True, 2)
    clock.now = 10.0
    [cut] = asm.due()  # its root never ended: cut at max_age, and said so
    assert (cut.reason, cut.root_ended) == ("max_age", False)
    asm.add([span(1, 7, parent=1)])
    assert asm.counts.late_spans == 1 and asm.held == 0


def test_a_flood_of_spans_is_bounded_and_what_is_shed_is_counted() -> None:
    asm = Assembler(quiet=1.0, max_age=60.0, max_spans=50, keep=lambda t: True, clock=Clock())
    for trace in range(1, 1001):
        asm.add([span(trace, 2, parent=1), span(trace, 3, parent=1)])
        assert asm.held <= 50
    assert asm.counts.shed_traces == 1000 - 25 and asm.counts.shed_spans == 2 * (1000 - 25)
    assert asm.pending == 25  # the newest traces are the ones held


def test_traces_not_sampled_hold_no_spans_but_are_counted_when_they_finish() -> None:
    clock = Clock()
    asm = Assembler(quiet=0.5, max_age=60.0, max_spans=10, keep=lambda t: False, clock=clock)
    for trace in range(1, 101):
        asm.add([span(trace, 1), span(trace, 2, parent=1)])
    assert asm.held == 0 and asm.counts.shed_traces == 0
    clock.now = 1.0
    finished = asm.due()
    assert len(finished) == 100 and not any(f.sampled or f.spans for f in finished)


def test_the_sampler_chooses_by_trace_id_alone_as_opentelemetrys_ratio_sampler_does() -> None:
    from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

    oracle = TraceIdRatioBased(0.25)
    ids = [f"{(n * 0x9E3779B97F4A7C15) % (1 << 128):032x}" for n in range(1, 2001)]
    for trace in ids:
        expected = oracle.should_sample(None, int(trace, 16), "x").decision == Decision.RECORD_AND_SAMPLE
        assert sampled(trace, 0.25) is expected
    share = sum(sampled(t, 0.25) for t in ids) / len(ids)
    assert 0.2 < share < 0.3
    assert all(sampled(t, 1.0) for t in ids) and not any(sampled(t, 0.0) for t in ids)


def _judged(calls: int, cost: float | None = None) -> SampleResult:
    grade = Grade(score=1.0, metadata={"usage": {"prompt_tokens": 1}, "verdicts": [{}] * calls, "judge": "m"})
    return SampleResult(sample_id="x", grades={"j": grade}, cost=cost)


def test_the_budget_stops_grading_at_the_judge_calls_a_minute_and_the_cost_an_hour() -> None:
    clock = Clock()
    budget = Budget(calls_per_minute=3, cost_per_hour=None, clock=clock)
    budget.spent(_judged(2))
    assert budget.over() is None
    budget.spent(_judged(1))
    assert budget.over() == "judge_calls_per_minute"
    clock.now = 60.0
    assert budget.over() is None  # a minute later the calls have left the window
    spend = Budget(calls_per_minute=None, cost_per_hour=1.0, clock=clock)
    spend.spent(_judged(1, cost=0.6))
    spend.spent(_judged(1, cost=0.5))
    assert spend.over() == "cost_per_hour"
    clock.now = 60.0 + 3600.0
    assert spend.over() is None


def test_the_metrics_text_is_what_prometheus_parses() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    m = Exposition()
    m.counter("conversations_graded_total", "Graded.", 7)
    m.counter("conversations_shed_total", "Shed.", 2, reason="queue")
    m.counter("conversations_shed_total", "", 3, reason='max "spans"\n')
    m.gauge("window_pass_rate", "Pass rate.", 0.625)
    m.gauge("window_gate_passed", "No verdict yet: left out.", None)
    families = {f.name: f for f in text_string_to_metric_families(m.text())}
    assert families["evals_watch_conversations_graded"].type == "counter"
    assert families["evals_watch_conversations_graded"].samples[0].value == 7
    shed = {s.labels["reason"]: s.value for s in families["evals_watch_conversations_shed"].samples}
    assert shed == {"queue": 2, 'max "spans"\n': 3}
    assert families["evals_watch_window_pass_rate"].samples[0].value == 0.625
    assert families["evals_watch_window_gate_passed"].samples == []  # unknown is absent, never a zero


def test_a_watch_suite_needs_no_target_and_no_dataset_and_its_problems_are_at_their_line(tmp_path: Path) -> None:
    ws = load_watch_suite(write_watch_suite(tmp_path, {"sample": 0.1, "window": {"duration": "15m"}}))
    assert ws.watch.sample == 0.1 and ws.watch.quiet == 0.2 and ws.watch.window.duration == 900.0
    assert getattr(ws.suite.target, "kind", None) == "traces"
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ndataset: rows.jsonl\ngraders:\n  loops: {kind: no_loops}\nwatch:\n  quiet: soon\n")
    with pytest.raises(ConfigError) as caught:
        load_watch_suite(bad)
    text = "\n".join(caught.value.problems)
    assert f"{bad}:2: dataset: does not apply to evals watch" in text
    assert "watch.quiet: quiet: 'soon' is not a duration" in text and f"{bad}:5:" in text


def test_the_command_refuses_a_bad_suite_and_an_open_listen_with_exit_2(tmp_path: Path) -> None:
    suite = write_watch_suite(tmp_path)
    bad = run_cli("watch", str(suite), "--listen", "0.0.0.0:4318", "-o", str(tmp_path / "o"))
    assert bad.returncode == 2 and "not a loopback address" in bad.stderr and "Traceback" not in bad.stderr
    typo = run_cli("watch", str(suite), "--listen", "localhost", "-o", str(tmp_path / "o"))
    assert typo.returncode == 2 and "expected HOST:PORT" in typo.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\ngraders:\n  loops: {kind: no_loops}\nwatch:\n  samples: 0.5\n")
    result = run_cli("watch", str(broken), "-o", str(tmp_path / "o"))
    assert result.returncode == 2 and "watch.samples" in result.stderr


def test_listen_off_loopback_needs_tls_and_a_token() -> None:
    assert parse_listen("[::1]:4318") == ("::1", 4318)
    Listen("127.0.0.1", 0).check()
    Listen("::1", 0).check()
    with pytest.raises(ConfigError, match="bearer token"):
        Listen("10.0.0.5", 4318, Path("c.pem"), Path("k.pem")).check()
    Listen("10.0.0.5", 4318, Path("c.pem"), Path("k.pem"), token="t").check()
    with pytest.raises(ConfigError, match="go together"):
        Listen("127.0.0.1", 0, tls_cert=Path("c.pem")).check()


def test_windows_rotate_by_count_and_a_restart_summarises_the_open_one_and_skips_its_traces(tmp_path: Path) -> None:
    from evals_cli.endpoints.secrets import Redactor
    from evals_cli.gate.gate import Gate
    from evals_cli.models.specs import GateSpec
    from evals_cli.output.fingerprint import Fingerprint
    from evals_cli.output.manifest import Manifest
    from evals_cli.output.summary import Accumulator
    from evals_cli.watch.windows import Windows

    gate_spec = GateSpec.model_validate({"kind": "weighted_average", "weights": {"g": 1}, "aggregation": "avg_score",
                                         "op": "gte", "value": 0.5})
    gate = Gate(gate_spec, {"g": None})
    manifest = Manifest(suite="s", fingerprint=Fingerprint(suite="a", dataset="b"), graders=["g"])

    def windows() -> Windows:
        return Windows(tmp_path, manifest, lambda: Accumulator(gate, "s", ["g"]), rotate_s=3600, rotate_results=2,
                       redact=Redactor([]))

    first = windows()
    for n in range(5):
        first.write(SampleResult(sample_id=f"c{n}", tags=[f"trace:{n:032x}"], grades={"g": Grade(score=1.0)},
                                 score=1.0, passed=True))
    folders = sorted(p.parent for p in tmp_path.glob("*/results.jsonl"))
    assert [len(f.joinpath("results.jsonl").read_text().splitlines()) for f in folders] == [2, 2, 1]
    assert [f.joinpath("summary.json").exists() for f in folders] == [True, True, False]  # the last is open
    again = windows()  # the first process was killed: its open window has no summary
    assert again.resume() == 5
    assert all(f"{n:032x}" in again.graded_traces for n in range(5)) and f"{9:032x}" not in again.graded_traces
    summary = json.loads(folders[-1].joinpath("summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["total"] == 1


@pytest.mark.parametrize(("k", "n"), [(0, 4), (4, 4), (3, 10), (1, 1), (50, 100), (123, 457), (9000, 10000),
                                      (5000, 10000), (1, 10000)])
def test_the_pass_rate_interval_is_clopper_pearsons_as_scipy_computes_it(k: int, n: int) -> None:
    from scipy import stats as scipy_stats

    from evals_cli.stats import clopper_pearson

    low, high = clopper_pearson(k, n)
    assert low == pytest.approx(scipy_stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0, abs=1e-8)
    assert high == pytest.approx(scipy_stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0, abs=1e-8)


def test_the_rolling_gate_is_the_suites_gate_over_the_window_with_its_interval() -> None:
    from evals_cli.gate.gate import Gate
    from evals_cli.models.specs import GateSpec
    from evals_cli.output.summary import Accumulator
    from evals_cli.watch.rolling import RollingGate
    from evals_cli.watch.spec import GateWindow

    spec = GateSpec.model_validate({"kind": "weighted_average", "weights": {"g": 1}, "aggregation": "pass_rate",
                                    "op": "gte", "value": 0.75, "pass_value": 1.0})
    gate = Gate(spec, {"g": None})
    clock = Clock()
    rolling = RollingGate(GateWindow(duration=60.0, last=10, min_samples=4), lambda: Accumulator(gate, "s", ["g"]),
                          clock=clock)

    def add(n: int, passed: bool) -> None:
        score = 1.0 if passed else 0.0
        rolling.add(SampleResult(sample_id=f"c{n}", grades={"g": Grade(score=score)}, score=score, passed=passed))

    for n in range(3):
        add(n, True)
    assert rolling.decide().state == "pending"  # 3 graded, fewer than min_samples: no verdict either way
    add(3, True)
    verdict = rolling.decide()
    assert verdict.state == "passed" and verdict.interval == pytest.approx((0.3976, 1.0), abs=1e-4)
    clock.now = 30.0
    for n in range(4, 8):
        add(n, False)
    verdict = rolling.decide()
    assert verdict.state == "failed" and verdict.failing == ["c7", "c6", "c5", "c4"]
    clock.now = 61.0  # the first four left the window
    verdict = rolling.decide()
    assert verdict.samples == 4 and verdict.summary.passed == 0
    errored = SampleResult(sample_id="e", error={"category": "judge", "message": "down"})
    for _ in range(4):
        rolling.add(errored)
    assert rolling.decide().state == "no_verdict"  # half errored (a judge down): no verdict, never a pass


def test_windows_of_two_replicas_merge_into_one_run_and_one_verdict(tmp_path: Path) -> None:
    from evals_cli.endpoints.secrets import Redactor
    from evals_cli.gate.gate import Gate
    from evals_cli.models.specs import GateSpec
    from evals_cli.output.fingerprint import Fingerprint
    from evals_cli.output.manifest import Manifest
    from evals_cli.output.summary import Accumulator
    from evals_cli.watch.windows import Windows

    gate_json = {"kind": "weighted_average", "weights": {"g": 1}, "aggregation": "pass_rate", "op": "gte",
                 "value": 0.5, "pass_value": 1.0}
    gate = Gate(GateSpec.model_validate(gate_json), {"g": None})
    manifest = Manifest(suite="s", fingerprint=Fingerprint(suite="a", dataset="live-otlp"), graders=["g"],
                        gate=gate_json)
    for replica, passes in (("pod-a", [True, True, False]), ("pod-b", [False, False])):
        windows = Windows(tmp_path / replica, manifest, lambda: Accumulator(gate, "s", ["g"]), rotate_s=3600,
                          rotate_results=2, redact=Redactor([]))
        for n, passed in enumerate(passes):
            score = 1.0 if passed else 0.0
            windows.write(SampleResult(sample_id=f"{replica}-{n}", tags=[f"trace:{replica}{n}"], score=score,
                                       grades={"g": Grade(score=score)}, passed=passed))
        windows.close()
    folders = sorted(str(p.parent) for p in tmp_path.glob("*/*/results.jsonl"))
    assert len(folders) == 3  # pod-a rotated after 2 results
    merged = run_cli("merge", *folders, "-o", str(tmp_path / "merged"))
    assert merged.returncode == 1, merged.stdout + merged.stderr  # 2 of 5 passed: under the gate's 0.5
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert (summary["total"], summary["passed"], summary["failed"]) == (5, 2, 3)


def test_what_the_rolling_gate_keeps_of_a_result_folds_to_the_same_summary_as_the_result() -> None:
    from evals_cli.gate.gate import Gate
    from evals_cli.models.results import ErrorInfo
    from evals_cli.models.specs import GateSpec
    from evals_cli.output.summary import Accumulator
    from evals_cli.watch.rolling import Kept

    spec = GateSpec.model_validate({"kind": "weighted_average", "weights": {"a": 1, "j": 2}, "aggregation": "avg_score",
                                    "op": "gte", "value": 0.5})
    gate = Gate(spec, {"a": None, "j": None})
    results = [
        SampleResult(sample_id="ok", score=0.8, passed=True, latency_s=1.5, cost=0.01,
                     grades={"a": Grade(score=1.0), "j": Grade(score=0.7, metadata={"judge": "m", "usage": {}})}),
        SampleResult(sample_id="na", score=0.4, passed=False, latency_s=0.5,
                     grades={"a": Grade.not_applicable("nothing"), "j": Grade(score=0.4, metadata={"judge": "m"})}),
        SampleResult(sample_id="down", error=ErrorInfo(category="judge", message="judge down"),
                     grades={"a": Grade(score=1.0), "j": Grade.failed("judge error", judge="m")}),
        SampleResult(sample_id="unchecked", score_note="nothing applied", grades={"a": Grade.not_applicable("x")}),
    ]
    whole, kept = Accumulator(gate, "s", ["a", "j"]), Accumulator(gate, "s", ["a", "j"])
    for result in results:
        whole.add(result)
        kept.add(Kept.of(result, 0.0).result())
    assert kept.summary().model_dump() == whole.summary().model_dump()
