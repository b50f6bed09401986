"""Peak memory of `evals run` when the model answers with one huge reply (issue 12, item 8).

Starts a loopback server that answers with a tool call whose arguments are MB megabytes, then with an answer
of MB megabytes of text, runs `evals run` on one sample in a subprocess, and prints the child's peak RSS and
the size of its results line, beside the same run with a one-kilobyte reply (the baseline) and their ratio.
A memory figure depends on the machine's load and allocator, so it is measured here, on demand, not asserted
by a unit test (tests/test_stored_text_caps.py asserts the results line's size, which is exact).

    python bench/huge_reply_rss.py --mb 20                      # this checkout
    PYTHONPATH=/path/to/other/checkout python bench/huge_reply_rss.py --mb 20   # another one, to compare
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def serve(size: int) -> ThreadingHTTPServer:
    content = "a" * size

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            tool_step = not any(m.get("role") == "tool" for m in body.get("messages", []))
            message: dict[str, Any] = {"role": "assistant", "content": "" if tool_step else content}
            if tool_step:  # first a call with MB of arguments, then an answer of MB
                message["tool_calls"] = [{"id": "call_1", "type": "function", "function": {
                    "name": "read_file", "arguments": json.dumps({"path": content})}}]
            payload = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                  "choices": [{"index": 0, "message": message,
                                               "finish_reason": "tool_calls" if tool_step else "stop"}],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            try:
                self.wfile.write(payload)
            except ConnectionError:  # refused by the harness's response bound: that is a result too
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # a short poll interval: shutdown() waits for the next poll (0.5 s by default)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def measure(mb: float, extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one sample against a server replying `mb` MB; the child's peak RSS (MB), results line size (MB)."""
    server = serve(int(mb * 1024 * 1024))
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            (tmp / "data.jsonl").write_text(json.dumps({"id": "big", "input": "hi", "ground_truth": "a"}) + "\n")
            (tmp / "suite.yaml").write_text(json.dumps({
                "name": "huge", "dataset": "data.jsonl",
                "target": {"kind": "openai_chat", "model": "m", "api_key": "sk-x", "max_retries": 0, "timeout": 120,
                           "base_url": f"http://127.0.0.1:{server.server_address[1]}/v1", "max_steps": 3},
                "tools": {"read_file": {"description": "Read", "parameters": {"path": "Path"}, "returns": "ok"}},
                "graders": {"answer": {"kind": "tool", "function": "contains"}},
                "gate": {"kind": "weighted_average", "op": "gte", "value": 0.5}}))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
            env.update({"NO_COLOR": "1", **(extra_env or {})})
            started = time.monotonic()
            with (tmp / "stderr").open("wb") as err_file:
                child = subprocess.Popen([sys.executable, "-m", "evals_cli", "run", str(tmp / "suite.yaml"), "-o",
                                          str(tmp / "out"), "-q"], env=env, stdout=subprocess.DEVNULL,
                                         stderr=err_file)
                deadline = time.monotonic() + 600
                while True:  # reap it ourselves: wait4 gives this child's own peak RSS
                    pid, status, usage = os.wait4(child.pid, os.WNOHANG)
                    if pid:
                        break
                    if time.monotonic() > deadline:
                        child.kill()
                    time.sleep(0.05)
            child.returncode = os.waitstatus_to_exitcode(status)
            err = (tmp / "stderr").read_bytes()
            peak_kb = usage.ru_maxrss
            results = tmp / "out" / "results.jsonl"
            line = results.read_bytes() if results.exists() else b""
            return {"mb": mb, "exit": child.returncode, "peak_rss_mb": round(peak_kb / 1024, 1),
                    "results_line_mb": round(len(line) / 1024 / 1024, 2), "seconds": round(time.monotonic() - started, 1),
                    "stderr": err.decode(errors="replace")[-300:]}
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=20.0)
    args = parser.parse_args()
    baseline = measure(0.001)  # the same run with a one-kilobyte reply, measured side by side
    huge = measure(args.mb)
    print(json.dumps({"baseline": baseline, "huge": huge,
                      "peak_rss_ratio": round(huge["peak_rss_mb"] / max(baseline["peak_rss_mb"], 1e-9), 2)}))


if __name__ == "__main__":
    main()
