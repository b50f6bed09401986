"""Record every model call to a JSONL file, at the HTTP transport, so the agent and the judge, and any API
the SDK speaks, are covered alike. `replay.py` serves them back; a line's key is keys.py's, which replay and the
cache compute the same way.

Secrets: headers are never stored, and the request and response bodies are stored masked by the run's
`Redactor` (every key, URL credential and header value the run knows, plus any string under a secret-looking
key such as `auth_token` in `extra_body`): a recording is a file people commit and share. How the key is hashed
from the masked body, and why the two maskings differ: keys.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals_cli.endpoints.context import CALL_CONTEXT, ReplayMiss
from evals_cli.endpoints.httpx_compat import httpx
from evals_cli.endpoints.keys import RECORDING_VERSION, api_path, body_key, request_body
from evals_cli.endpoints.secrets import Redactor, header_secrets, url_secrets
from evals_cli.endpoints.tls import shared_context
from evals_cli.endpoints.transport import decoded_headers, read_bounded

__all__ = ["CALL_CONTEXT", "RecordingTransport", "ReplayMiss"]


class _SharedFile:
    """One open recording file, shared by every transport that records into it: a run over several models records
    every model's calls into the one `--record` file, and each line must go out in one piece. Requests carry their
    model's name, so the keys of different models never meet."""

    _open: dict[Path, _SharedFile] = {}

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle = path.open("a", encoding="utf-8")
        self.users = 0
        self.closed = False

    @classmethod
    def acquire(cls, path: Path) -> _SharedFile:
        key = path.resolve()
        shared = cls._open.get(key)
        if shared is None or shared.closed:
            path.parent.mkdir(parents=True, exist_ok=True)
            shared = cls._open[key] = cls(path)
        shared.users += 1
        return shared

    def write(self, line: str) -> None:
        self.handle.write(line)  # one write and a flush, with no await between: lines never interleave
        self.handle.flush()

    def release(self) -> None:
        self.users -= 1
        if self.users <= 0 and not self.closed:
            self.closed = True
            self.handle.close()
            self._open.pop(self.path.resolve(), None)


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests through and appends each exchange, masked, to the recording file."""

    def __init__(self, path: Path, inner: Any | None = None, redact: Redactor | None = None) -> None:
        self.inner = inner or httpx.AsyncHTTPTransport(verify=shared_context())
        self.redact = redact if redact is not None else Redactor()
        self.file = _SharedFile.acquire(path)
        self._released = False

    async def handle_async_request(self, request: Any) -> Any:
        # whatever credential this request carries is a secret of the run, even one nobody declared
        self.redact.add([*header_secrets(request.headers.items()), *url_secrets(str(request.url))])
        response = await self.inner.handle_async_request(request)
        try:  # the body, decoded within the size bound (a gzip bomb is refused while inflating)
            raw = await read_bounded(response, request)
        finally:
            await response.aclose()
        rebuilt = httpx.Response(status_code=response.status_code, headers=decoded_headers(response.headers),
                                 content=raw,
                                 request=request, extensions=response.extensions)
        content = rebuilt.content
        try:
            body: Any = json.loads(content)
        except ValueError:
            body = content.decode("utf-8", "replace")
        raw_body = request_body(request)
        req_body = self.redact.value(raw_body)  # what is stored; the key is hashed from the same masking
        line = {"schema_version": RECORDING_VERSION,
                "key": body_key(request.method, api_path(request.url.path), raw_body, self.redact),
                "context": self.redact(CALL_CONTEXT.get()), "path": api_path(request.url.path),
                "request": req_body, "status": response.status_code, "response": self.redact.value(body)}
        self.file.write(json.dumps(line, ensure_ascii=False) + "\n")
        return rebuilt

    async def aclose(self) -> None:
        if not self._released:
            self._released = True
            self.file.release()
            await self.inner.aclose()
