"""The HTTP client evals-cli reaches streamable-HTTP MCP servers with: the SDK's defaults (30 s to connect,
300 s between reads of a held stream, no redirects followed by the client itself) plus a bound on what one
message may take before the SDK parses it. A JSON body counts whole; an event stream counts per event (the
bytes since the last blank line), so a stream held open for the session is never cut for its length, only
for one event past the bound. Bodies are asked for uncompressed, so the bytes counted are the bytes parsed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from evals_cli.endpoints.httpx_compat import httpx
from evals_cli.endpoints.tls import shared_context
from evals_cli.mcp.stdio import Bound


class _Counted(httpx.AsyncByteStream):  # type: ignore[misc, unused-ignore]
    """A response body that raises (a ReadError, which the SDK reports as a failed request) past the bound."""

    def __init__(self, inner: Any, bound: Bound, events: bool, request: Any) -> None:
        self.inner, self.bound, self.events, self.request = inner, bound, events, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        since = 0
        async for chunk in self.inner:
            end = max(chunk.rfind(b"\n\n"), chunk.rfind(b"\r\n\r\n")) if self.events else -1
            since = len(chunk) - end if end >= 0 else since + len(chunk)
            if since > self.bound.limit:
                raise httpx.ReadError(self.bound.exceeded("an HTTP event" if self.events else "an HTTP body"),
                                      request=self.request)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):  # type: ignore[misc, unused-ignore]
    def __init__(self, bound: Bound) -> None:
        self.inner = httpx.AsyncHTTPTransport(verify=shared_context())  # the run's one CA bundle load
        self.bound = bound

    async def handle_async_request(self, request: Any) -> Any:
        response = await self.inner.handle_async_request(request)
        declared = response.headers.get("content-length", "")
        events = "text/event-stream" in response.headers.get("content-type", "")
        if not events and declared.isdigit() and int(declared) > self.bound.limit:
            await response.aclose()
            raise httpx.ReadError(self.bound.exceeded("an HTTP body"), request=request)
        response.stream = _Counted(response.stream, self.bound, events, request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_client(headers: dict[str, str], bound: Bound) -> Any:
    """An httpx AsyncClient for the SDK's streamable_http_client, its messages bounded by `bound`."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    return httpx.AsyncClient(headers={**headers, "Accept-Encoding": "identity"}, transport=BoundedTransport(bound),
                             verify=shared_context(),
                             timeout=httpx.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))
