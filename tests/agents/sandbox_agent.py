"""A command agent for sandbox tests (stdlib only: it runs under the sandbox's own python3). Per user message it
acts on its working folder and probes its walls, then replies with what it saw, one `key: value` per line:

- `write NAME TEXT`: writes NAME; `delete NAME`: removes it; `link NAME TARGET`: a symlink NAME -> TARGET;
- `probe`: tries to read $HOST_FILE, to connect to 127.0.0.1:$HOST_PORT and to 1.1.1.1:53, and exports one span
  (OTLP/JSON) to $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, saying for each whether it worked;
- `hang`: ignores SIGTERM, writes its pid to pid.txt and sleeps forever."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
import urllib.request


def probe() -> list[str]:
    said = []
    try:
        with open(os.environ.get("HOST_FILE", "/nonexistent"), encoding="utf-8") as fh:
            said.append(f"host-file: read {fh.read()[:20]!r}")
    except OSError as exc:
        said.append(f"host-file: unreadable ({type(exc).__name__})")
    for host, port in (("127.0.0.1", int(os.environ.get("HOST_PORT", "9"))), ("1.1.1.1", 53)):
        try:
            socket.create_connection((host, port), timeout=2).close()
            said.append(f"net {host}: reached")
        except OSError as exc:
            said.append(f"net {host}: unreachable ({type(exc).__name__})")
    url = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if url:
        span = {"traceId": "1" * 32, "spanId": "2" * 16, "name": "probe", "startTimeUnixNano": "1",
                "endTimeUnixNano": "2", "attributes": []}
        resource = {"attributes": [{"key": "evals.episode", "value": {"stringValue": os.environ["EVALS_EPISODE"]}}]}
        body = json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}).encode()
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                said.append(f"export: {response.status}")
        except OSError as exc:
            said.append(f"export: failed ({exc})")
    return said


def act(message: str) -> list[str]:
    words = message.split(" ", 2)
    if words[0] == "write":
        with open(words[1], "w", encoding="utf-8") as fh:
            fh.write(words[2])
        return [f"wrote: {words[1]}"]
    if words[0] == "delete":
        os.remove(words[1])
        return [f"deleted: {words[1]}"]
    if words[0] == "link":
        os.symlink(words[2], words[1])
        return [f"linked: {words[1]}"]
    if words[0] == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open("pid.txt", "w", encoding="utf-8") as fh:
            fh.write(str(os.getpid()))
        while True:
            time.sleep(1)
    return probe() if words[0] == "probe" else [f"echo: {message}"]


for line in sys.stdin:
    reply = "\n".join(act(json.loads(line)["content"]))
    print(json.dumps({"type": "assistant", "content": reply}), flush=True)
