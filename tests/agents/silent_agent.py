"""A command agent with no telemetry: echoes each user message back, logs a line on stdout and stderr first.
With EXIT_AT=N it exits (code 3) on the N-th message without replying; with HANG_AT_END it ignores end of input;
with STUCK_AT=N it starts a child that sleeps, writes both pids to PIDS_FILE and never answers the N-th message."""

import json
import os
import subprocess
import sys
import time

for n, line in enumerate(sys.stdin, 1):
    message = json.loads(line)["content"]
    print("log: thinking", flush=True)
    print(f"working on {message!r}", file=sys.stderr, flush=True)
    if os.environ.get("EXIT_AT") == str(n):
        print("giving up: out of ideas", file=sys.stderr, flush=True)
        sys.exit(3)
    if os.environ.get("STUCK_AT") == str(n):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(os.environ["PIDS_FILE"], "w") as fh:
            fh.write(f"{os.getpid()} {child.pid}\n")
        while True:
            time.sleep(1)
    print(json.dumps({"type": "assistant", "content": f"echo: {message}"}), flush=True)
if os.environ.get("HANG_AT_END"):
    while True:
        time.sleep(1)
