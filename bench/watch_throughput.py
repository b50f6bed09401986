"""`evals watch` under load: conversations graded per second with deterministic graders, and the process's
memory over a long stream, against the batch baseline (the same conversations graded by `evals run` of a
`kind: traces` suite over a file of them), side by side.

    python bench/watch_throughput.py                 # 100,000 conversations live, 10,000 in the baseline
    python bench/watch_throughput.py -n 20000 --baseline 5000

The live side is a real `evals watch` subprocess on loopback; a sender posts OTLP/JSON export requests (50
conversations each: an invoke_agent root, two chat spans, one execute_tool span) and keeps at most --ahead
conversations in flight, reading /metrics, so that what is measured is grading, not shedding (anything shed or
errored is printed). The watch's RSS is read from /proc every second. Goals: >= 500 conversations/s graded;
memory flat (its peak under 150 MB, and the last quarter's mean within 10% of the second quarter's).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GRADERS = {"reads_first": {"kind": "tool_order", "expected": ["read_file"]},
           "loops": {"kind": "no_loops", "max_repeats": 2},
           "no_writes": {"kind": "forbidden_tools", "tools": ["write_file"]}}
GATE = {"kind": "weighted_average", "weights": {"reads_first": 1, "loops": 1, "no_writes": 1},
        "aggregation": "pass_rate", "op": "gte", "value": 0.5, "pass_value": 1.0}
PER_REQUEST = 50


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def conversation(n: int, now_ns: int) -> list[dict[str, Any]]:
    """One conversation's four spans: read a file, then answer (every tenth answers without reading)."""
    trace, root = f"{n + 1:032x}", f"{(n << 4) | 1:016x}"
    question = [{"role": "user", "parts": [{"type": "text", "content": f"question {n}: which host?"}]}]
    guess = n % 10 == 0
    first_out = [{"role": "assistant", "parts": [{"type": "text", "content": "localhost"}] if guess else
                  [{"type": "tool_call", "id": f"c{n}", "name": "read_file", "arguments": {"path": ".env"}}],
                  "finish_reason": "stop" if guess else "tool_calls"}]
    spans = [{"traceId": trace, "spanId": root, "name": "invoke_agent support", "startTimeUnixNano": str(now_ns),
              "endTimeUnixNano": str(now_ns + 4000), "attributes": [
                  _attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "support"),
                  _attr("gen_ai.conversation.id", f"conv-{n}")]},
             {"traceId": trace, "spanId": f"{(n << 4) | 2:016x}", "parentSpanId": root, "name": "chat m",
              "startTimeUnixNano": str(now_ns + 1), "endTimeUnixNano": str(now_ns + 1000), "attributes": [
                  _attr("gen_ai.operation.name", "chat"), _attr("gen_ai.input.messages", json.dumps(question)),
                  _attr("gen_ai.output.messages", json.dumps(first_out))]}]
    if not guess:
        tool_msg = {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{n}", "response": "db"}]}
        answer = [{"role": "assistant", "parts": [{"type": "text", "content": "db"}], "finish_reason": "stop"}]
        spans += [{"traceId": trace, "spanId": f"{(n << 4) | 3:016x}", "parentSpanId": root,
                   "name": "execute_tool read_file", "startTimeUnixNano": str(now_ns + 1001),
                   "endTimeUnixNano": str(now_ns + 1500), "attributes": [
                       _attr("gen_ai.operation.name", "execute_tool"), _attr("gen_ai.tool.name", "read_file"),
                       _attr("gen_ai.tool.call.id", f"c{n}"), _attr("gen_ai.tool.call.result", "db")]},
                  {"traceId": trace, "spanId": f"{(n << 4) | 4:016x}", "parentSpanId": root, "name": "chat m",
                   "startTimeUnixNano": str(now_ns + 2000), "endTimeUnixNano": str(now_ns + 3000), "attributes": [
                       _attr("gen_ai.operation.name", "chat"),
                       _attr("gen_ai.input.messages", json.dumps([*question, *first_out, tool_msg])),
                       _attr("gen_ai.output.messages", json.dumps(answer))]}]
    return spans


def request(first: int, count: int) -> bytes:
    now = time.time_ns()
    spans = [s for n in range(first, first + count) for s in conversation(n, now)]
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "bench")]},
                                          "scopeSpans": [{"spans": spans}]}]}).encode()


def write_suite(folder: Path, watch: dict[str, Any] | None, traces: Path | None = None) -> Path:
    import yaml

    suite: dict[str, Any] = {"name": "bench", "graders": GRADERS, "gate": GATE}
    if watch is not None:
        suite["watch"] = watch
    if traces is not None:
        suite["target"] = {"kind": "traces", "path": str(traces)}
    path = folder / ("watch.yaml" if watch is not None else "batch.yaml")
    path.write_text(yaml.safe_dump(suite))
    return path


def metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as reply:
        text = reply.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    """User and system CPU seconds the process has used (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def live(n: int, ahead: int, folder: Path) -> dict[str, Any]:
    suite = write_suite(folder, {"quiet": "20ms", "max_age": "5m", "queue": 10_000, "evaluate_every": "5s",
                                 "concurrency": 4, "rotate_results": 25_000, "window": {"last": 10_000}})
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "evals_cli", "watch", str(suite), "-o", str(folder / "out"),
                             "--listen", "127.0.0.1:0"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"at (http://\S+)/v1/traces", line)
    if match is None:
        proc.kill()
        raise SystemExit(f"evals watch did not start: {line}{proc.stderr.read()}")
    url = match.group(1)
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    cpu_ready = cpu_s(proc.pid)  # the interpreter's start and the suite's loading: not grading
    samples: list[tuple[float, int, float]] = []  # (seconds, graded, RSS MB)
    started = time.perf_counter()
    sent = done = 0
    seen: dict[str, float] = {}
    while done < n:
        if sent < n and sent - done < ahead:
            count = min(PER_REQUEST, n - sent)
            post = urllib.request.Request(f"{url}/v1/traces", data=request(sent, count), method="POST",
                                          headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(post, timeout=30) as reply:
                reply.read()
            sent += count
            continue
        seen = metrics(url)
        done = int(seen.get("evals_watch_conversations_graded_total", 0)
                   + seen.get('evals_watch_conversations_shed_total{reason="queue"}', 0)
                   + seen.get('evals_watch_conversations_shed_total{reason="max_spans"}', 0))
        now = time.perf_counter() - started
        if not samples or now - samples[-1][0] >= 1.0:
            samples.append((now, done, rss_mb(proc.pid)))
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    samples.append((elapsed, done, rss_mb(proc.pid)))
    cpu = cpu_s(proc.pid) - cpu_ready
    proc.terminate()
    proc.wait(60)
    return {"elapsed": elapsed, "metrics": seen, "samples": samples, "cpu": cpu}


def batch(n: int, folder: Path) -> tuple[float, float]:
    traces = folder / "batch.otlp.jsonl"
    with traces.open("w") as fh:
        for first in range(0, n, PER_REQUEST):
            fh.write(request(first, min(PER_REQUEST, n - first)).decode() + "\n")
    suite = write_suite(folder, None, traces)
    started = time.perf_counter()
    before = os.times()
    done = subprocess.run([sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(folder / "batch"),
                           "--concurrency", "4"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"})
    elapsed = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if done.returncode not in (0, 1):
        raise SystemExit(f"the baseline run failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="conversations sent to evals watch")
    parser.add_argument("--baseline", type=int, default=10_000, help="conversations graded by evals run")
    parser.add_argument("--ahead", type=int, default=2000, help="conversations in flight at most")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        load = os.getloadavg()[0]
        base = batch(args.baseline, folder) if args.baseline else None
        result = live(args.n, args.ahead, folder)
    m, samples = result["metrics"], result["samples"]
    graded = m.get("evals_watch_conversations_graded_total", 0)
    rate = graded / result["elapsed"]
    rss = [s[2] for s in samples]
    quarter = max(1, len(rss) // 4)
    second, last = rss[quarter:2 * quarter] or rss, rss[-quarter:]
    growth = (sum(last) / len(last)) / (sum(second) / len(second)) - 1
    print(f"{'':28} {'evals watch (live)':>20} {'evals run (batch)':>20} {'ratio':>8}")
    cpu_rate = graded / result["cpu"]
    if base is not None:
        base_rate, base_cpu_rate = args.baseline / base[0], args.baseline / base[1]
        print(f"{'conversations/s (wall)':28} {rate:20.0f} {base_rate:20.0f} {rate / base_rate:8.2f}")
        print(f"{'conversations/CPU-second':28} {cpu_rate:20.0f} {base_cpu_rate:20.0f} {cpu_rate / base_cpu_rate:8.2f}")
    else:
        print(f"{'conversations/s (wall)':28} {rate:20.0f}")
        print(f"{'conversations/CPU-second':28} {cpu_rate:20.0f}")
    print(f"{'conversations graded':28} {graded:20.0f} {args.baseline:20d}")
    shed = m.get('evals_watch_conversations_shed_total{reason="queue"}', 0)
    print(f"{'errored / shed':28} {m.get('evals_watch_conversations_errored_total', 0):9.0f} / {shed:.0f}")
    print(f"{'RSS peak (MB)':28} {max(rss):20.1f}")
    marks = [next((s[2] for s in samples if s[1] >= graded * q / 4), rss[-1]) for q in (1, 2, 3, 4)]
    print(f"{'RSS at 25/50/75/100% (MB)':28} " + " / ".join(f"{m:.1f}" for m in marks))
    print(f"{'RSS 2nd quarter -> last':28} {sum(second) / len(second):9.1f} -> {sum(last) / len(last):.1f} MB "
          f"({growth:+.1%})")
    print(f"load average at the start {load:.1f}, at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(the wall rate shares them; the CPU-second rate is what one core of the watch process did)")
    print(f"goal >= 500/s: {'met' if rate >= 500 else 'NOT met'} (wall), "
          f"{'met' if cpu_rate >= 500 else 'NOT met'} (per CPU-second); memory flat under 150 MB: "
          f"{'met' if max(rss) < 150 and growth < 0.10 else 'NOT met'}")


if __name__ == "__main__":
    main()
