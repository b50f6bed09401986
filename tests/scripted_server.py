"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for tests: the real `openai` client talks to it.

A script is a function from the request (path and JSON body) to a reply. `agent_script` builds the common
one: replies chosen by a key found in the latest user message, one reply per agent step.

The Responses API (POST /v1/responses) is served too: `response_text` / `response_call` build its replies, and
`agent_script` answers a /responses request given a chat completion (`text`, `call`) by converting it with
`as_response`, so one script can drive both APIs.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JUDGE_MARKER = "impartial evaluation judge"


@dataclass
class Reply:
    """An HTTP answer: JSON body, status, headers, optional delay; `drop` closes the socket without answering,
    `partial` sends the headers and half the body, then closes (a connection lost mid-response)."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    partial: bool = False


Script = Callable[[str, dict[str, Any]], Reply | dict[str, Any]]


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
               prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion", "created": int(time.time()),
        "model": "scripted", "choices": [{"index": 0, "message": message,
                                          "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def text(content: str) -> dict[str, Any]:
    return completion(content=content)


def call(name: str, arguments: dict[str, Any] | str | None = None, *more: tuple[str, Any]) -> dict[str, Any]:
    """A reply with one tool call (or several, for parallel calls: extra (name, arguments) pairs)."""
    pairs = [(name, arguments), *more]
    tool_calls = []
    for i, (n, args) in enumerate(pairs):
        raw = args if isinstance(args, str) else json.dumps(args or {})
        tool_calls.append({"id": f"call_{uuid.uuid4().hex[:8]}_{i}", "type": "function",
                           "function": {"name": n, "arguments": raw}})
    return completion(tool_calls=tool_calls)


SIM_MARK = "evals-sim:"
"""The start of the OpenAI `user` field of every user-simulator request (`evals-sim:SAMPLE:REPEAT`)."""


def is_simulator(body: dict[str, Any]) -> bool:
    """Is this request the user simulator's (not the agent's or the judge's)?"""
    return str(body.get("user", "")).startswith(SIM_MARK)


def is_judge(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and JUDGE_MARKER in str(messages[0].get("content", ""))


def last_user(body: dict[str, Any]) -> str:
    if isinstance(body.get("input"), str):  # Responses API, a bare string input
        return body["input"]
    for message in reversed(body.get("messages") or _input_items(body)):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def steps_since_user(body: dict[str, Any]) -> int:
    if "messages" not in body and isinstance(body.get("input"), list):
        return _response_steps_since_user(body["input"])
    count = 0
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant":
            count += 1
    return count


def _input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a Responses content list."""
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content or "")


def _response_steps_since_user(items: list[Any]) -> int:
    """Agent steps since the latest user message in Responses input: each step that called tools left one run
    of function_call items (and a final answer ends the turn, so the next step follows a user message)."""
    count, in_calls = 0, False
    for item in reversed(items):
        if not isinstance(item, dict) or item.get("role") == "user":
            break
        is_call = item.get("type") == "function_call"
        if is_call and not in_calls:
            count += 1
        in_calls = is_call
    return count


def agent_script(replies: dict[str, list[Any]], judge: Callable[[dict[str, Any]], Any] | None = None,
                 default: Any = None) -> Script:
    """Replies by a key found in the latest user message; the n-th agent step gets the n-th reply (last repeats)."""

    def script(path: str, body: dict[str, Any]) -> Any:
        if is_judge(body):
            if judge is None:
                return Reply({"error": {"message": "no judge scripted"}}, status=500)
            return judge(body)
        user = last_user(body)
        for key, steps in replies.items():
            if key in user:
                return _for_path(path, steps[min(steps_since_user(body), len(steps) - 1)])
        if default is not None:
            return _for_path(path, default)
        return Reply({"error": {"message": f"no script for user message {user[:80]!r}"}}, status=400)

    return script


def _for_path(path: str, reply: Any) -> Any:
    """A chat completion reply, converted when the request was for the Responses API."""
    if not path.rstrip("/").endswith("/responses"):
        return reply
    if isinstance(reply, Reply):
        if isinstance(reply.body, dict) and "choices" in reply.body and reply.status == 200:
            return Reply(as_response(reply.body), reply.status, reply.headers, reply.delay, reply.drop, reply.partial)
        return reply
    return as_response(reply) if isinstance(reply, dict) and "choices" in reply else reply


def response(output: list[dict[str, Any]], input_tokens: int = 10, output_tokens: int = 5,
             status: str = "completed", **extra: Any) -> dict[str, Any]:
    """A Responses API body with these output items."""
    return {
        "id": "resp_" + uuid.uuid4().hex[:12], "object": "response", "created_at": int(time.time()),
        "status": status, "model": "scripted", "output": output, "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "temperature": 1.0, "top_p": 1.0,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "total_tokens": input_tokens + output_tokens, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
        **extra,
    }


def message_item(content: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_" + uuid.uuid4().hex[:12], "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": content, "annotations": []}]}


def function_call_item(name: str, arguments: dict[str, Any] | str | None = None,
                       call_id: str | None = None) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:12], "status": "completed",
            "call_id": call_id or f"call_{uuid.uuid4().hex[:8]}", "name": name, "arguments": raw}


def response_text(content: str, **usage: int) -> dict[str, Any]:
    return response([message_item(content)], **usage)


def response_call(name: str, arguments: dict[str, Any] | str | None = None, *more: tuple[str, Any]) -> dict[str, Any]:
    """A Responses reply with one function call (or several: extra (name, arguments) pairs)."""
    return response([function_call_item(n, args, f"call_{uuid.uuid4().hex[:8]}_{i}")
                     for i, (n, args) in enumerate([(name, arguments), *more])])


def as_response(body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion body (`text`, `call`, `completion`) as the Responses API body that says the same."""
    choices = body.get("choices") or []
    usage = body.get("usage") or {}
    output: list[dict[str, Any]] = []
    if choices:
        message = choices[0].get("message") or {}
        if message.get("content"):
            output.append(message_item(message["content"]))
        for tool_call in message.get("tool_calls") or []:
            function = tool_call.get("function") or {}
            output.append(function_call_item(function.get("name"), function.get("arguments"), tool_call.get("id")))
    return response(output, usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))


def judge_score(score: float, reason: str = "scripted verdict") -> dict[str, Any]:
    return text(json.dumps({"reason": reason, "score": score}))


class ScriptedServer:
    """Serves `script` on a free port of 127.0.0.1 in a background thread; records every request."""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script or (lambda path, body: Reply({"error": {"message": "no script"}}, 500))
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out as two writes: with Nagle's algorithm on, the body waited for the client's
            # delayed ACK of the headers, some 40 ms on every reply
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(Reply({"object": "list", "data": [{"id": "scripted", "object": "model"}]}))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with server.lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "headers": {k.lower(): v for k, v in self.headers.items()}})
                try:
                    reply = server.script(self.path, body)
                except Exception as exc:  # a broken script shows up as a 500 the test can see
                    reply = Reply({"error": {"message": f"script raised {exc!r}"}}, status=500)
                self._send(reply if isinstance(reply, Reply) else Reply(reply))

            def _send(self, reply: Reply) -> None:
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    if reply.partial:
                        self.wfile.write(payload[: len(payload) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            request_queue_size = 512  # the default backlog of 5 refuses connections under load
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        # serve_forever checks for shutdown once per poll interval: its default of 0.5 s made every stop() (one
        # per test using a server) wait up to half a second
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> ScriptedServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def agent_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if not is_judge(r["body"])]

    def judge_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if is_judge(r["body"])]
