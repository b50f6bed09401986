"""Peak memory and results line of `evals run` when an agent grows a stateful world (issue 24, item 5).

A loopback server answers with one reply of CALLS parallel `files.append` calls of CHARS characters each (then a
text answer); `evals run` runs that one sample in a subprocess, which reports its own peak RSS (VmHWM, which exec
resets). Printed beside the same run with 1,000-character appends (the baseline). Before effects stored what
changed, 44 appends of 200,000 characters wrote a 414 MB results line and took 2.3 GB at peak.

    python bench/world_growth_rss.py                        # 44 x 200,000 characters
    python bench/world_growth_rss.py --calls 100 --chars 500000
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PEAK = ("import atexit, runpy, sys\n"
        "def peak():\n"
        "    kb = next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
        "    print(f'evals-peak-kb {kb}', file=sys.stderr)\n"
        "atexit.register(peak)\n"
        "sys.argv[0] = 'evals'\n"
        "runpy.run_module('evals_cli', run_name='__main__', alter_sys=True)\n")


def serve(calls: int, chars: int) -> ThreadingHTTPServer:
    def chunk(i: int) -> str:
        return f"<{i}>" + "x" * max(0, chars - len(f"<{i}>"))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            first = not any(m.get("role") == "tool" for m in body.get("messages", []))
            message: dict[str, Any] = {"role": "assistant", "content": None if first else "done"}
            if first:
                message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {
                    "name": "append", "arguments": json.dumps({"path": "log.txt", "content": chunk(i)})}}
                    for i in range(calls)]
            payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                  "choices": [{"index": 0, "message": message,
                                               "finish_reason": "tool_calls" if first else "stop"}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def measure(calls: int, chars: int) -> dict[str, Any]:
    """One sample of `calls` appends of `chars` characters: exit code, peak RSS (MB), results line (MB)."""
    server = serve(calls, chars)
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            (tmp / "data.jsonl").write_text(json.dumps({
                "id": "log", "input": "log it", "expected_state": {"files": {"log.txt": {"regex": "x$"}}}}) + "\n")
            (tmp / "suite.yaml").write_text(json.dumps({
                "name": "world-growth", "dataset": "data.jsonl",
                "target": {"kind": "openai_chat", "model": "m", "api_key": "sk-x", "max_retries": 0, "timeout": 120,
                           "base_url": f"http://127.0.0.1:{server.server_address[1]}/v1", "max_steps": 3},
                "environment": {"files": {"README.md": "# demo"}},
                "tools": {"append": {"description": "Append to a file.", "effect": "files.append",
                                     "parameters": {"path": "File path", "content": "Text"}}},
                "graders": {"final": {"kind": "final_state"}},
                "gate": {"kind": "weighted_average", "op": "gte", "value": 0.5}}))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
            env["NO_COLOR"] = "1"
            started = time.monotonic()
            proc = subprocess.run([sys.executable, "-c", PEAK, "run", str(tmp / "suite.yaml"), "-o",
                                   str(tmp / "out"), "-q"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, timeout=600)
            found = re.search(r"evals-peak-kb (\d+)", proc.stderr)
            results = tmp / "out" / "results.jsonl"
            line = results.read_bytes() if results.exists() else b""
            return {"calls": calls, "chars": chars, "exit": proc.returncode,
                    "peak_mb": round(int(found.group(1)) / 1024, 1) if found else None,
                    "results_line_mb": round(len(line) / 1e6, 2), "seconds": round(time.monotonic() - started, 1),
                    "stderr": proc.stderr[-300:]}
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=44)
    parser.add_argument("--chars", type=int, default=200_000)
    args = parser.parse_args()
    baseline = measure(args.calls, 1000)
    grown = measure(args.calls, args.chars)
    print(json.dumps({"baseline": baseline, "grown": grown}))


if __name__ == "__main__":
    main()
