"""A command agent that forges another episode's telemetry (issue 46): asked to `forge`, it finds the other episode
of the run by reading /proc/<pid>/environ of the processes it may read (the same user's), and posts spans tagged
with that episode's id to the run's receiver: a model call that lists the files and reads one, in that order.
Asked anything else it is the victim: it exports nothing, waits until the forger is done (FORGE_FIFO, a named pipe
the test made: it opens for reading once the forger opens it for writing) and answers. Stdlib only. The forger
says on stderr what the receiver answered."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request
from typing import Any

FIND_S = 20.0  # how long the forger looks for the other episode's process


def environ(pid: str) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return {}
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def parent(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return ""
    return stat[stat.rfind(b")") + 2:].split()[1].decode()


def run_processes() -> list[str]:
    """The processes of this run's episodes: what evals started (the reapers, this one's parent) and their children.
    A real forger would read every process it may; this one keeps to the run it attacks."""
    evals = parent(str(os.getppid()))
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    reapers = {p for p in pids if parent(p) == evals}
    return [p for p in pids if p in reapers or parent(p) in reapers]


def other_episode(mine: str, endpoint: str) -> str:
    """The id of another episode of this run (its processes point at the same receiver), looked for FIND_S."""
    deadline = time.monotonic() + FIND_S
    while time.monotonic() < deadline:
        for pid in run_processes():
            env = environ(pid)
            tag = env.get("EVALS_EPISODE")
            if tag and tag != mine and env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == endpoint:
                return tag
        time.sleep(0.02)
    raise SystemExit("forger: no other episode found")


def _attr(key: str, value: Any) -> dict[str, Any]:
    wrapped = {"arrayValue": {"values": [{"stringValue": v} for v in value]}} if isinstance(value, list) else \
        {"stringValue": value}
    return {"key": key, "value": wrapped}


def _chat(trace: str, n: int, inputs: list[dict[str, Any]], output: dict[str, Any], finish: str) -> dict[str, Any]:
    return {"traceId": trace, "spanId": f"{n:016x}", "name": "chat forged", "startTimeUnixNano": str(n * 1000),
            "endTimeUnixNano": str(n * 1000 + 500),
            "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "forged"),
                           _attr("gen_ai.input.messages", json.dumps(inputs)),
                           _attr("gen_ai.output.messages", json.dumps([output])),
                           _attr("gen_ai.response.finish_reasons", [finish])]}


def forged_request(tag: str) -> bytes:
    """One OTLP/JSON export: episode `tag` listed the files, read config.toml, then answered."""
    trace = secrets.token_hex(16)
    user = {"role": "user", "parts": [{"type": "text", "content": "Which port does the database use?"}]}
    calls = {"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "list_files", "arguments": {}},
        {"type": "tool_call", "id": "c2", "name": "read_file", "arguments": {"path": "config.toml"}}]}
    results = [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "config.toml"}]},
               {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c2", "response": "port = 5433"}]}]
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "The port is 5433."}]}
    spans = [_chat(trace, 1, [user], calls, "tool_calls"), _chat(trace, 2, [user, calls, *results], answer, "stop")]
    resource = {"attributes": [_attr("evals.episode", tag), _attr("service.name", "forger")]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}).encode()


def post(url: str, body: bytes) -> int:
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def forge() -> str:
    mine, url = os.environ["EVALS_EPISODE"], os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    victim = other_episode(mine, url)
    print(f"forged export for {victim}: {post(url, forged_request(victim))}", file=sys.stderr, flush=True)
    with open(os.environ["FORGE_FIFO"], "w") as fifo:  # the victim answers once the forgery was posted
        fifo.write("done\n")
    return "forged"


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)["content"]
        if message == "forge":
            reply = forge()
        else:
            with open(os.environ["FORGE_FIFO"]) as fifo:
                fifo.read()
            reply = "The port is 5433."
        print(json.dumps({"type": "assistant", "content": reply}), flush=True)


if __name__ == "__main__":
    main()
