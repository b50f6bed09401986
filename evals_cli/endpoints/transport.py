"""The transport every model call goes through (see pool.py for why): a concurrency slot per server, a total
deadline per attempt, a bound on the response body. Its own module so that importing the pool (as `evals
validate` does) does not import the HTTP stack."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from evals_cli.endpoints.httpx_compat import httpx

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
MAX_RESPONSE_ENV = "EVALS_MAX_RESPONSE_BYTES"


def max_response_bytes() -> int:
    """The response body bound in force: EVALS_MAX_RESPONSE_BYTES when a positive integer, else 32 MiB (some
    hundred times the largest real completion, small enough that no reply can exhaust a CI runner)."""
    raw = os.environ.get(MAX_RESPONSE_ENV, "")
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_RESPONSE_BYTES
    return value if value > 0 else DEFAULT_MAX_RESPONSE_BYTES


def _in_memory(response: Any) -> bool:
    try:
        _ = response.content
    except httpx.ResponseNotRead:
        return False
    return True


class ResponseTooLarge(httpx.ReadError):  # type: ignore[misc,name-defined]
    """A body past the size bound: a RequestError, so the SDK reports it as a failed call (not a crash)."""


def _too_large(max_bytes: int) -> str:
    return f"response body larger than {max_bytes} bytes ({MAX_RESPONSE_ENV})"


async def read_bounded(response: Any, request: Any, max_bytes: int | None = None) -> bytes:
    """The raw body of a transport response, refused (ResponseTooLarge) past `max_bytes`: up front when the
    server declares its length, else as soon as the bytes read pass it, so memory never holds more."""
    limit = max_bytes or max_response_bytes()
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


class BoundedTransport(httpx.AsyncBaseTransport):  # type: ignore[misc,name-defined]
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
                    rebuilt = httpx.Response(response.status_code, headers=response.headers, content=raw,
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
