"""Replays a recorded OTLP/JSON trace file (one ExportTraceServiceRequest per line, as the Collector's file
exporter writes it) to an OTLP/HTTP endpoint as live traffic: each request shifted to the present (the first
span starts now, the others keep their offsets), sent as OTLP/JSON with the delays it was recorded with (at most
--max-gap seconds each). What `make eval-watch` sends `evals watch`.

    python scripts/replay_traces.py suites/demo.traces.otlp.jsonl --to http://127.0.0.1:4318
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def _spans(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for rs in request.get("resourceSpans") or [] for ss in rs.get("scopeSpans") or []
            for s in ss.get("spans") or []]


def shifted(requests: list[dict[str, Any]], now_ns: int) -> list[tuple[float, dict[str, Any]]]:
    """(seconds after the first request, the request with its times moved so that the first span starts now)."""
    starts = [int(s["startTimeUnixNano"]) for r in requests for s in _spans(r)]
    first = min(starts) if starts else now_ns
    out = []
    for request in requests:
        spans = _spans(request)
        for span in spans:
            for key in ("startTimeUnixNano", "endTimeUnixNano"):
                if span.get(key) not in (None, "", "0", 0):
                    span[key] = str(int(span[key]) - first + now_ns)
            for event in span.get("events") or []:
                event["timeUnixNano"] = str(int(event.get("timeUnixNano") or first) - first + now_ns)
        sent = max((int(s.get("endTimeUnixNano") or s["startTimeUnixNano"]) for s in spans), default=now_ns)
        out.append(((sent - now_ns) / 1e9, request))
    return sorted(out, key=lambda pair: pair[0])


def wait_ready(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"{url}/healthz did not answer within {timeout:g}s: is evals watch running?") from None
            time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--to", default="http://127.0.0.1:4318", help="the OTLP/HTTP endpoint (its base URL)")
    parser.add_argument("--max-gap", type=float, default=1.0, help="longest wait between two requests (seconds)")
    parser.add_argument("--wait", type=float, default=30.0, help="how long to wait for the endpoint to be up")
    args = parser.parse_args(argv)
    requests = [json.loads(line) for line in args.file.read_text(encoding="utf-8").splitlines() if line.strip()]
    wait_ready(args.to, args.wait)
    started = time.monotonic()
    previous = 0.0
    for at, request in shifted(requests, time.time_ns()):
        time.sleep(max(0.0, min(at - previous, args.max_gap)))
        previous = at
        body = json.dumps(request).encode()
        post = urllib.request.Request(f"{args.to}/v1/traces", data=body, method="POST",
                                      headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(post, timeout=10) as reply:
                reply.read()
        except urllib.error.HTTPError as exc:
            print(f"replay: {exc.code} {exc.read().decode(errors='replace')[:200]}", file=sys.stderr)
            return 1
    print(f"replayed {len(requests)} export requests ({sum(len(_spans(r)) for r in requests)} spans) to {args.to} "
          f"in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
