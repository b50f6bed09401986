"""The transport every model call goes through (see pool.py for why): a concurrency slot per server, a total
deadline per attempt, a bound on the response body. Its own module so that importing the pool (as `evals
validate` does) does not import the HTTP stack."""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

from evals_cli.endpoints.httpx_compat import httpx

MAX_RESPONSE_ENV = "EVALS_MAX_RESPONSE_BYTES"


def max_response_bytes() -> int:
    """The response body bound in force: EVALS_MAX_RESPONSE_BYTES, 32 MiB unless set (some hundred times the
    largest real completion, small enough that no reply can exhaust a CI runner; see evals_cli/settings.py)."""
    from evals_cli.settings import knob

    value: int = knob("max_response_bytes")
    return value


def _in_memory(response: Any) -> bool:
    try:
        _ = response.content
    except httpx.ResponseNotRead:
        return False
    return True


class ResponseTooLarge(httpx.ReadError):
    """A body past the size bound: a RequestError, so the SDK reports it as a failed call (not a crash)."""


def _too_large(max_bytes: int) -> str:
    return f"response body larger than {max_bytes} bytes ({MAX_RESPONSE_ENV})"


def _inflate(data: bytes, encoding: str, limit: int, request: Any) -> bytes:
    """One content-coding undone, stopping past `limit` bytes of output: 400 KB of gzip inflates to 400 MB, so
    a compressed body must be bounded after decoding, and decoded in steps that never hold more."""
    if encoding in ("gzip", "x-gzip"):
        decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":  # zlib-wrapped per the RFC; some servers send it raw
        decoder = zlib.decompressobj(zlib.MAX_WBITS if data[:1] == b"\x78" else -zlib.MAX_WBITS)
    else:  # identity, or a coding httpx would not decode either (br/zstd without their packages)
        return data
    try:
        out = decoder.decompress(data, limit + 1)
    except zlib.error as exc:
        raise httpx.DecodingError(f"the {encoding} response body is not valid: {exc}", request=request) from None
    if len(out) > limit or decoder.unconsumed_tail:
        raise ResponseTooLarge(_too_large(limit) + " once decompressed", request=request)
    return out


def decoded_headers(headers: Any) -> Any:
    """The response headers for a body `read_bounded` already decoded: no content-encoding, its own length."""
    plain = httpx.Headers(headers)
    for name in ("content-encoding", "content-length"):
        if name in plain:
            del plain[name]
    return plain


async def read_bounded(response: Any, request: Any, max_bytes: int | None = None) -> bytes:
    """The body of a transport response, decoded (gzip, deflate), refused (ResponseTooLarge) past `max_bytes`
    before and after decoding: up front when the server declares its length, else as soon as the bytes read
    pass it, so memory never holds more. Rebuild the response with `decoded_headers`."""
    limit = max_bytes or max_response_bytes()
    encodings = [e.strip().lower() for e in response.headers.get("content-encoding", "").split(",") if e.strip()]
    raw = await _read_raw(response, request, limit)
    for encoding in reversed(encodings):  # codings are listed in the order they were applied
        raw = _inflate(raw, encoding, limit, request)
    return raw


async def _read_raw(response: Any, request: Any, limit: int) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ResponseTooLarge(_too_large(limit), request=request)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw():
        size += len(chunk)
        if size > limit:
            raise ResponseTooLarge(_too_large(limit), request=request)
        chunks.append(chunk)
    return b"".join(chunks)


class BoundedTransport(httpx.AsyncBaseTransport):
    """Holds a concurrency slot for the attempt, then runs it (connect to last byte) under a total deadline,
    reading the body with a size bound. Returns a response whose body is already in memory."""

    def __init__(self, inner: Any, timeout: float, slots: asyncio.Semaphore | None,
                 max_bytes: int | None = None, owns_inner: bool = True) -> None:
        self.inner = inner
        self.owns_inner = owns_inner  # the recording transport is shared by all clients: the pool closes it
        self.timeout = timeout
        self.slots = slots
        self.max_bytes = max_bytes or max_response_bytes()

    async def handle_async_request(self, request: Any) -> Any:
        if self.slots is None:
            return await self._attempt(request)
        async with self.slots:  # the wait for a slot is not part of the request's time
            return await self._attempt(request)

    def _deadline(self, request: Any) -> float:
        """The request's own timeout (the SDK puts it in the request, with_options overrides included), as a
        total for the attempt; the endpoint's when the request carries none."""
        values = [v for v in (request.extensions.get("timeout") or {}).values() if isinstance(v, int | float)]
        return max(values) if values else self.timeout

    async def _attempt(self, request: Any) -> Any:
        deadline = self._deadline(request)
        try:
            async with asyncio.timeout(deadline):
                response = await self.inner.handle_async_request(request)
                if _in_memory(response):  # the recording transport below read it already (within this deadline)
                    rebuilt = response
                else:
                    try:
                        raw = await self._read(response, request)
                    finally:
                        await response.aclose()
                    rebuilt = httpx.Response(response.status_code, headers=decoded_headers(response.headers),
                                             content=raw,
                                             request=request, extensions=response.extensions)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no complete response within timeout {deadline:g}s (the whole request, "
                                    "connect to last byte)", request=request) from None
        if len(rebuilt.content) > self.max_bytes:  # a compressed body that inflates past the bound
            raise ResponseTooLarge(self._too_large(), request=request)
        return rebuilt

    async def _read(self, response: Any, request: Any) -> bytes:
        return await read_bounded(response, request, self.max_bytes)

    def _too_large(self) -> str:
        return _too_large(self.max_bytes)

    async def aclose(self) -> None:
        if self.owns_inner:
            await self.inner.aclose()
