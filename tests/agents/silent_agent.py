"""A command agent with no telemetry: echoes each user message back, logs a line on stdout and stderr first.
With EXIT_AT=N it exits (code 3) on the N-th message without replying; with HANG_AT_END it ignores end of input."""

import json
import os
import sys
import time

for n, line in enumerate(sys.stdin, 1):
    message = json.loads(line)["content"]
    print("log: thinking", flush=True)
    print(f"working on {message!r}", file=sys.stderr, flush=True)
    if os.environ.get("EXIT_AT") == str(n):
        print("giving up: out of ideas", file=sys.stderr, flush=True)
        sys.exit(3)
    print(json.dumps({"type": "assistant", "content": f"echo: {message}"}), flush=True)
if os.environ.get("HANG_AT_END"):
    while True:
        time.sleep(1)
