"""A command agent that reports one span per user message to the run's receiver as OTLP/JSON (stdlib only, so it
starts fast), waits for the receiver's answer, then echoes the message back. Each span carries PAD bytes of text
(default 4096), so a test can size the receiver's bound in requests. The receiver's status goes to stderr."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request


def export_request(tag: str, n: int, pad: int) -> bytes:
    """One OTLP/JSON export request: a span of episode `tag` (its resource attribute) with `pad` bytes of text."""
    span = {"traceId": f"{n:032x}", "spanId": f"{n:016x}", "name": "chat m", "startTimeUnixNano": "1",
            "endTimeUnixNano": "2", "attributes": [{"key": "note", "value": {"stringValue": "x" * pad}}]}
    resource = {"attributes": [{"key": "evals.episode", "value": {"stringValue": tag}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}).encode()


def main() -> None:
    tag, pad = os.environ["EVALS_EPISODE"], int(os.environ.get("PAD", "4096"))
    url = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    for n, line in enumerate(sys.stdin, 1):
        message = json.loads(line)["content"]
        request = urllib.request.Request(url, export_request(tag, n, pad), {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        print(f"export {n}: {status}", file=sys.stderr, flush=True)
        print(json.dumps({"type": "assistant", "content": f"echo: {message}"}), flush=True)


if __name__ == "__main__":
    main()
