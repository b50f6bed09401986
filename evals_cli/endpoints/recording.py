"""Record every model call to a JSONL file, or serve calls from one with no network at all.

Works at the HTTP transport, so the agent and the judge, and any API the SDK speaks, are covered alike.
Requests are keyed by a hash of their canonical JSON body and API path; headers (and so keys) are never stored.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from evals_cli.endpoints.context import CALL_CONTEXT, ReplayMiss
from evals_cli.endpoints.httpx_compat import httpx

__all__ = ["CALL_CONTEXT", "RecordingTransport", "ReplayMiss", "ReplayTransport", "api_path", "request_key"]


def api_path(path: str) -> str:
    """The part of a URL path that names the API call, whatever the server's prefix."""
    parts = [p for p in path.split("/") if p]
    if "v1" in parts:
        parts = parts[parts.index("v1") + 1:]
    return "/".join(parts)


def request_key(request: Any) -> str:
    body = request.content or b""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = body.decode("utf-8", "replace")
    raw = f"{request.method} {api_path(request.url.path)}\n{canonical}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


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


class ReplayTransport(httpx.AsyncBaseTransport):
    """Answers from a recording; identical requests are served in recorded order, the last one repeating."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.served: dict[str, int] = {}
        with path.open(encoding="utf-8") as fh:
            for number, text in enumerate(fh, 1):
                if not text.strip():
                    continue
                try:
                    entry = json.loads(text)
                    self.entries.setdefault(entry["key"], []).append(entry)
                except (ValueError, KeyError, TypeError):
                    from evals_cli.errors import ConfigError

                    raise ConfigError(f"{path}:{number}: not a recording line (expected JSON with 'key')") from None

    async def handle_async_request(self, request: Any) -> Any:
        key = request_key(request)
        entries = self.entries.get(key)
        if not entries:
            raise ReplayMiss(f"{CALL_CONTEXT.get()}: no recorded response in {self.path.name} for this request "
                             f"(the suite, dataset or model changed since recording; re-record with --record)")
        index = min(self.served.get(key, 0), len(entries) - 1)
        self.served[key] = index + 1
        entry = entries[index]
        body = entry["response"]
        content = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
        return httpx.Response(status_code=entry.get("status", 200), content=content,
                              headers={"content-type": "application/json"}, request=request)
