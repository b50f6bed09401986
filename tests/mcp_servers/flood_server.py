"""A stdio MCP server whose `numbers` tool answers with one huge JSON-RPC line, written raw (no SDK on this side,
so the server itself stays small and fast and only the client's reading is measured): every other message is
passed to the demo server, run as a child. For the tests of the client's message bound.

    python flood_server.py [--bad-notification]   (the tool: numbers(count) -> {"content": [text],
        "structuredContent": {"result": [0..]}}; --bad-notification: a notification the client cannot validate
        is sent before the tool list)
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

DEMO = Path(__file__).with_name("demo_server.py")


def _flood(request_id: object, count: int) -> bytes:
    numbers = ",".join(map(str, range(count)))
    return (f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{{"content":[{{"type":"text","text":'
            f'"{count} numbers"}}],"structuredContent":{{"result":[{numbers}]}},"isError":false,'
            f'"resultType":"complete"}}}}\n').encode()


def main() -> None:
    child = subprocess.Popen([sys.executable, str(DEMO)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    out = sys.stdout.buffer
    lock = threading.Lock()

    def relay() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            with lock:
                out.write(line)
                out.flush()

    threading.Thread(target=relay, daemon=True).start()
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        params = message.get("params") or {} if isinstance(message, dict) else {}
        if message.get("method") == "tools/list" and "--bad-notification" in sys.argv:
            with lock:
                out.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"bogus":1}}\n')
                out.flush()
        if message.get("method") == "tools/call" and params.get("name") == "numbers":
            with lock:
                out.write(_flood(message.get("id"), int((params.get("arguments") or {}).get("count", 0))))
                out.flush()
            continue
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    child.wait(10)


if __name__ == "__main__":
    main()
