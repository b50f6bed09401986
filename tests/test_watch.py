"""`evals watch` end to end: an agent instrumented with the real OpenTelemetry SDK exports over OTLP/HTTP to a
real `evals watch` process on loopback; the agent's model and the judge are the scripted server, reached through
the real openai client; /metrics is read with Prometheus' own parser; the process is stopped with SIGTERM."""

from __future__ import annotations

import json
import re
import signal
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.watched_agent import Agent
from tests.scripted_server import ScriptedServer, agent_script, call, judge_score, text
from tests.watch_helpers import Catcher, WatchProcess, end_all, results_of, write_watch_suite

pytestmark = pytest.mark.slow  # each test starts a real watch process (about a second of interpreter start)

SCRIPT = {
    # reads the file first, then answers: tool order passes, no loop
    "read-it": [call("read_file", {"path": ".env"}), text("The database host is db.internal.")],
    # answers without reading: tool order fails
    "guess-it": [text("Probably localhost.")],
    # asks for the same read at every step until the agent's step cap: a loop
    "loop-it": [call("read_file", {"path": ".env"})],
}


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    yield
    end_all()


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    server = ScriptedServer(agent_script(SCRIPT, judge=lambda body: judge_score(0.9, "grounded"))).start()
    yield server
    server.stop()


def _agent(watch: WatchProcess, model: ScriptedServer, **kw: object) -> Agent:
    return Agent(watch.url, model.url, **kw)  # type: ignore[arg-type]


def test_live_conversations_are_graded_as_samples_named_by_their_conversation_id(tmp_path: Path,
                                                                                  model: ScriptedServer) -> None:
    watch = WatchProcess(write_watch_suite(tmp_path), tmp_path / "out")
    agent = _agent(watch, model, max_steps=4)
    try:
        agent.converse("conv-host", "Which database host? read-it")
        agent.converse("conv-guess", "Which database host? guess-it")
        agent.converse("conv-loop", "Which database host? loop-it")
        assert agent.flush()
        seen = watch.wait_metric("evals_watch_window_conversations", lambda v: v >= 3)
        from evals_cli.history.runs import scan_runs

        [live] = scan_runs(tmp_path / "out")  # what `evals view` lists: the open window, a run in flight
        assert (live.suite, live.total, live.status, live.gate) == ("live", 3, "running", "running")
    finally:
        agent.close()
        code = watch.stop()
    assert code == 0, watch.lines  # a service stopped by SIGTERM: no verdict was asked of it
    results = {r["sample_id"]: r for r in results_of(tmp_path / "out")}
    assert set(results) == {"conv-host", "conv-guess", "conv-loop"}
    assert results["conv-host"]["passed"] is True
    assert results["conv-host"]["grades"]["reads_first"]["score"] == 1.0
    assert results["conv-guess"]["grades"]["reads_first"]["score"] == 0.0
    assert results["conv-loop"]["grades"]["loops"]["score"] == 0.0
    assert all(any(t.startswith("trace:") for t in r["tags"]) and "finished:quiet" in r["tags"]
               for r in results.values())
    # the same SampleResult lines `evals run` writes: the summary of the window reads them back
    summaries = list((tmp_path / "out").rglob("summary.json"))
    assert len(summaries) == 1
    summary = json.loads(summaries[0].read_text())
    assert (summary["total"], summary["passed"], summary["failed"]) == (3, 1, 2)
    assert seen["evals_watch_conversations_sampled_total"] == 3
    assert seen["evals_watch_conversations_passed_total"] == 1
    assert seen["evals_watch_conversations_failed_total"] == 2
    assert seen['evals_watch_window_grader_avg_score{grader="reads_first"}'] == pytest.approx(2 / 3)
    state = json.loads(next((tmp_path / "out").rglob("watch.json")).read_text())
    assert state["graded"] == 3 and state["stopped_by"] == "SIGTERM"
    [closed] = scan_runs(tmp_path / "out")  # closed: its summary's verdict (1 of 3 passed, under the gate's 0.5)
    assert (closed.status, closed.gate, closed.passed, closed.failed) == ("completed", "FAILED", 1, 2)


def test_the_judge_grades_and_a_judge_that_is_down_is_an_error_never_a_zero(tmp_path: Path,
                                                                          model: ScriptedServer) -> None:
    judge_up = {"up": True}

    def judge(body: dict[str, object]) -> object:
        if judge_up["up"]:
            return judge_score(9, "grounded in the file")
        from tests.scripted_server import Reply

        return Reply({"error": {"message": "judge overloaded"}}, status=503)

    judge_server = ScriptedServer(agent_script({}, judge=judge)).start()
    (tmp_path / "grounded.j2").write_text("Is the answer grounded in the file it read?\n\n{{ submission }}\n")
    graders = {"grounded": {"kind": "model_judge", "rubric": "grounded.j2",
                            "model": "scripted", "base_url": judge_server.url, "api_key": "k"}}
    gate = {"kind": "weighted_average", "weights": {"grounded": 1}, "aggregation": "avg_score", "op": "gte",
            "value": 0.5}
    watch = WatchProcess(write_watch_suite(tmp_path, graders=graders, gate=gate), tmp_path / "out")
    agent = _agent(watch, model)
    try:
        agent.converse("judged-1", "read-it")
        assert agent.flush()
        watch.wait_metric("evals_watch_conversations_graded_total", lambda v: v >= 1)
        judge_up["up"] = False
        agent.converse("judged-2", "read-it")
        assert agent.flush()
        seen = watch.wait_metric("evals_watch_conversations_errored_total", lambda v: v >= 1)
    finally:
        agent.close()
        watch.stop()
        judge_server.stop()
    results = {r["sample_id"]: r for r in results_of(tmp_path / "out")}
    assert results["judged-1"]["grades"]["grounded"]["score"] == pytest.approx(0.9)  # 9 on the default 1-10 scale
    down = results["judged-2"]
    assert down["grades"]["grounded"]["score"] is None and down["error"] is not None
    assert down["passed"] is None and down["score"] is None  # not a zero, not a fail
    assert seen["evals_watch_conversations_errored_total"] == 1
    assert seen["evals_watch_judge_calls_total"] >= 1


def test_sampling_by_trace_id_counts_what_is_not_graded(tmp_path: Path, model: ScriptedServer) -> None:
    from evals_cli.watch.sampler import sampled

    watch = WatchProcess(write_watch_suite(tmp_path, {"sample": 0.5}), tmp_path / "out")
    agent = _agent(watch, model)
    try:
        for n in range(12):
            agent.converse(f"s-{n}", "guess-it")
        assert agent.flush()
        seen = watch.wait_metric("evals_watch_conversations_finished_total", lambda v: v >= 12)
    finally:
        agent.close()
        watch.stop()
    results = results_of(tmp_path / "out")
    traces = [next(t[6:] for t in r["tags"] if t.startswith("trace:")) for r in results]
    assert all(sampled(t, 0.5) for t in traces)
    assert seen["evals_watch_conversations_sampled_total"] == len(results)
    assert seen["evals_watch_conversations_not_sampled_total"] == 12 - len(results)
    assert 0 < len(results) < 12  # 12 random trace ids: both sides of a half, but for 1 in 2048


def test_a_restart_resumes_from_disk_without_grading_a_conversation_twice(tmp_path: Path,
                                                                          model: ScriptedServer) -> None:
    suite, out = write_watch_suite(tmp_path), tmp_path / "out"
    first = WatchProcess(suite, out)
    agent = _agent(first, model)
    agent.converse("before", "read-it")
    assert agent.flush()
    first.wait_metric("evals_watch_conversations_graded_total", lambda v: v >= 1)
    first.stop(signal.SIGKILL)  # killed: its window was never closed
    agent.close()
    assert not list(out.rglob("summary.json"))
    again = WatchProcess(suite, out)
    assert any("1 results already on disk" in line for line in again.lines)
    assert len(list(out.rglob("summary.json"))) == 1  # the window the killed process left, summarised
    # the exporter of the first process retries its batch: the same trace arrives again, and a new one
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    replay = Agent(again.url, model.url)
    first_trace = next(t[6:] for t in results_of(out)[0]["tags"] if t.startswith("trace:"))
    _send_again(OTLPSpanExporter(endpoint=f"{again.url}/v1/traces"), first_trace)
    replay.converse("after", "read-it")
    assert replay.flush()
    seen = again.wait_metric("evals_watch_conversations_graded_total", lambda v: v >= 1)
    again.wait_metric("evals_watch_conversations_already_graded_total", lambda v: v >= 1)
    replay.close()
    assert again.stop() == 0
    ids = [r["sample_id"] for r in results_of(out)]
    assert sorted(ids) == ["after", "before"], ids
    assert seen["evals_watch_conversations_graded_total"] == 1


def _send_again(exporter: object, trace_id: str) -> None:
    """The root span of `trace_id` (the real SDK's, ids from a generator that gives that trace id), as an exporter
    retrying a batch sends it again."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class SameTrace(RandomIdGenerator):
        def generate_trace_id(self) -> int:
            return int(trace_id, 16)

    tracer = TracerProvider(id_generator=SameTrace()).get_tracer("retry")
    span = tracer.start_span("invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"})
    span.end()
    exporter.export([span])  # type: ignore[attr-defined]


def test_once_exits_with_the_window_gate_and_alerts_with_the_failing_ids(tmp_path: Path,
                                                                        model: ScriptedServer) -> None:
    hook, otlp = Catcher(), Catcher()
    suite = write_watch_suite(tmp_path, {"webhook": hook.url, "export": otlp.url, "window": {"min_samples": 2}})
    watch = WatchProcess(suite, tmp_path / "out", "--exit-on-fail")
    agent = _agent(watch, model)
    try:
        agent.converse("bad-1", "guess-it")
        agent.converse("bad-2", "guess-it")
        assert agent.flush()
        code = watch.wait()
        alert = json.loads(hook.wait(1)[0])
        exported = [json.loads(body) for body in otlp.wait(1)]
    finally:
        agent.close()
        hook.close()
        otlp.close()
    assert code == 1, watch.lines
    assert alert["state"] == "failed" and sorted(alert["failing"]) == ["bad-1", "bad-2"]
    assert any(re.search(r"ALERT live: the rolling gate failed.*bad-", line) for line in watch.lines)
    spans = [s for body in exported for rs in body["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    results = {r["sample_id"]: r for r in results_of(tmp_path / "out")}
    for span in spans:
        sample = next(a["value"]["stringValue"] for a in span["attributes"] if a["key"] == "evals.sample_id")
        assert f"trace:{span['traceId']}" in results[sample]["tags"]  # in the conversation's own trace
        assert "parentSpanId" in span
        events = {e["attributes"][0]["value"]["stringValue"]: e for e in span["events"]}
        assert {e["name"] for e in span["events"]} == {"gen_ai.evaluation.result"}
        order = {a["key"]: a["value"] for a in events["reads_first"]["attributes"]}
        assert order["gen_ai.evaluation.score.value"] == {"doubleValue": 0.0}
        loops = {a["key"]: a["value"] for a in events["loops"]["attributes"]}  # no tool call: n/a, not 1.0
        assert loops["gen_ai.evaluation.score.label"] == {"stringValue": "not_applicable"}
        assert "gen_ai.evaluation.score.value" not in loops


def test_once_with_too_few_conversations_has_no_verdict(tmp_path: Path) -> None:
    watch = WatchProcess(write_watch_suite(tmp_path), tmp_path / "out", "--once", "300ms")
    assert watch.wait() == 3
    assert any("pending" in line for line in watch.lines)


def test_sigterm_grades_what_had_finished_and_counts_what_had_not(tmp_path: Path, model: ScriptedServer) -> None:
    watch = WatchProcess(write_watch_suite(tmp_path, {"quiet": "1h"}), tmp_path / "out")
    agent = _agent(watch, model)
    try:
        agent.converse("ended", "read-it")  # its root span ended: finished but for the quiet period
        with agent.tracer.start_as_current_span("invoke_agent support",
                                                attributes={"gen_ai.operation.name": "invoke_agent"}):
            agent._chat([{"role": "user", "content": "guess-it"}])  # a model call of a conversation still open
            assert agent.flush()
            watch.wait_metric("evals_watch_traces_total", lambda v: v >= 2)
            code = watch.stop()
    finally:
        agent.close()
    assert code == 0
    [result] = results_of(tmp_path / "out")
    assert result["sample_id"] == "ended" and "finished:shutdown" in result["tags"]
    state = json.loads(next((tmp_path / "out").rglob("watch.json")).read_text())
    assert state["cut_at_shutdown"] == 1 and state["graded"] == 1
    summary = json.loads(next((tmp_path / "out").rglob("summary.json")).read_text())
    assert summary["status"] == "interrupted" and "1 conversation(s) were not finished" in summary["abort_reason"]


def test_tls_and_a_bearer_token(tmp_path: Path, model: ScriptedServer) -> None:
    import subprocess
    import urllib.error
    import urllib.request

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    watch = WatchProcess(write_watch_suite(tmp_path), tmp_path / "out", "--tls-cert", str(cert), "--tls-key",
                         str(key), env={"EVALS_WATCH_TOKEN": "s3cret"})
    assert watch.url.startswith("https://")
    context = ssl.create_default_context(cafile=str(cert))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(f"{watch.url}/v1/traces", data=b"{}", method="POST",
                                                      headers={"Content-Type": "application/json"}),
                               context=context, timeout=10)
    assert refused.value.code == 401

    agent = _agent(watch, model, headers={"Authorization": "Bearer s3cret"}, certificate=str(cert))
    try:
        agent.converse("over-tls", "read-it")
        assert agent.flush()
        deadline_seen = _metrics_tls(watch, context, "evals_watch_conversations_graded_total", 1)
    finally:
        agent.close()
        watch.stop()
    assert deadline_seen['evals_watch_requests_refused_total{status="401"}'] == 1
    assert [r["sample_id"] for r in results_of(tmp_path / "out")] == ["over-tls"]


def _metrics_tls(watch: WatchProcess, context: ssl.SSLContext, name: str, at_least: float) -> dict[str, float]:
    import time
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    deadline = time.monotonic() + 30
    while True:
        request = urllib.request.Request(f"{watch.url}/metrics", headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(request, context=context, timeout=10) as reply:
            text = reply.read().decode()
        seen = {(f"{s.name}{{{','.join(f'{k}={chr(34)}{v}{chr(34)}' for k, v in sorted(s.labels.items()))}}}"
                 if s.labels else s.name): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}
        if seen.get(name, 0) >= at_least or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def test_a_flood_of_spans_is_shed_and_counted_within_the_bound(tmp_path: Path) -> None:
    import gzip
    import urllib.request

    watch = WatchProcess(write_watch_suite(tmp_path, {"max_spans": 10}), tmp_path / "out")
    spans = [{"traceId": f"{n + 1:032x}", "spanId": f"{n + 1:016x}", "parentSpanId": "00000000000000ff",
              "name": "chat m", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
              "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]} for n in range(60)]
    body = gzip.compress(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode())
    post = urllib.request.Request(f"{watch.url}/v1/traces", data=body, method="POST",
                                  headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    with urllib.request.urlopen(post, timeout=10) as reply:
        assert reply.status == 200
    seen = watch.wait_metric("evals_watch_traces_total", lambda v: v >= 60)
    assert seen["evals_watch_spans_held"] <= 10
    assert seen['evals_watch_conversations_shed_total{reason="max_spans"}'] == 50
    assert watch.stop() == 0
