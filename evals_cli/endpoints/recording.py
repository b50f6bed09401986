"""Record every model call to a JSONL file, at the HTTP transport, so the agent and the judge, and any API
the SDK speaks, are covered alike. Requests are keyed by a hash of their canonical JSON body and API path;
headers (and so keys) are never stored. `replay.py` serves them back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evals_cli.endpoints.context import CALL_CONTEXT, ReplayMiss
from evals_cli.endpoints.httpx_compat import httpx

__all__ = ["CALL_CONTEXT", "RecordingTransport", "ReplayMiss", "api_path", "body_key", "request_key"]


def api_path(path: str) -> str:
    """The part of a URL path that names the API call, whatever the server's prefix."""
    parts = [p for p in path.split("/") if p]
    if "v1" in parts:
        parts = parts[parts.index("v1") + 1:]
    return "/".join(parts)


def body_key(method: str, path: str, body: Any) -> str:
    """The recording key of a request: method, API path and the canonical JSON of its body."""
    canonical = body if isinstance(body, str) else json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{method} {path}\n{canonical}".encode()).hexdigest()


def request_key(request: Any) -> str:
    raw = request.content or b""
    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace")
    return body_key(request.method, api_path(request.url.path), body)


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests through and appends each exchange to the recording file."""

    def __init__(self, path: Path, inner: Any | None = None) -> None:
        self.inner = inner or httpx.AsyncHTTPTransport()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("a", encoding="utf-8")

    async def handle_async_request(self, request: Any) -> Any:
        response = await self.inner.handle_async_request(request)
        content = await response.aread()
        try:
            body: Any = json.loads(content)
        except ValueError:
            body = content.decode("utf-8", "replace")
        try:
            req_body = json.loads(request.content or b"null")
        except ValueError:
            req_body = None
        line = {"key": request_key(request), "context": CALL_CONTEXT.get(), "path": api_path(request.url.path),
                "request": req_body, "status": response.status_code, "response": body}
        self.file.write(json.dumps(line, ensure_ascii=False) + "\n")
        self.file.flush()
        return httpx.Response(status_code=response.status_code, headers=response.headers, content=content,
                              request=request)

    async def aclose(self) -> None:
        self.file.close()
        await self.inner.aclose()
