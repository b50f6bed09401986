"""A minimal OpenAI-compatible chat server on 127.0.0.1 for benchmarks: asyncio streams, keep-alive,
prebuilt answers, a fixed latency. Run as its own process so its CPU never counts against the client.

    python bench/server.py --port 0 --latency-ms 50     (prints the port it listens on)

Every request that carries no tool result gets a tool call when the user message contains "[tool]",
else a final answer; a request that carries a tool result always gets the final answer. Two-step samples
are the "[tool]" ones.
"""

from __future__ import annotations

import argparse
import asyncio
import json

ANSWER = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "The answer is 42."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26},
}).encode()
TOOL_CALL = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"key\": \"answer\"}"}}]},
        "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
}).encode()


def _response(body: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length) if length else b""
            if head.startswith(b"GET"):
                reply = b'{"object": "list", "data": [{"id": "bench", "object": "model"}]}'
            elif b'"role":"tool"' in body or b'"role": "tool"' in body or b"[tool]" not in body:
                reply = ANSWER
            else:
                reply = TOOL_CALL
            if latency:
                await asyncio.sleep(latency)
            writer.write(_response(reply))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(port: int, latency: float) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency), "127.0.0.1", port, backlog=1024,
                                        limit=1 << 22)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.port, args.latency_ms / 1000))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
