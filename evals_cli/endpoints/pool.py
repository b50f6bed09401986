"""One shared AsyncOpenAI client per endpoint (a client per sample wastes connections and CPU), and the bounds
every model call goes through, whoever makes it (agent, judge, user simulator, sessions judge):

- concurrency: one limit per server (`base_url`), the run's `-c`, so a local server that answers one request
  at a time gets one at a time from all callers together. Waiting for a slot is not part of the request's
  time: the deadline below starts once the slot is held, and retries queue again like any request.
- a total deadline per attempt: `timeout` bounds the whole request, connect to last byte. httpx's timeouts
  are per operation (a server trickling one byte a second never trips a 4 s read timeout); this transport
  reads the whole body under `asyncio.timeout` and raises httpx's ReadTimeout past it, which the SDK retries
  and reports as a timeout like any other (`max_retries`; `sample_timeout` still bounds the sample, retries
  included).
- a size bound on response bodies (`EVALS_MAX_RESPONSE_BYTES`, default 32 MiB): a runaway or hostile server
  cannot make the harness hold gigabytes; past it the call fails with a message naming the bound.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from evals_cli.endpoints.resolve import Endpoint
from evals_cli.endpoints.secrets import Redactor


class ClientPool:
    """The run's clients. `concurrency` is the limit of model calls in flight per server (base_url), shared by
    every client the pool hands out; None means no limit. Call `client(endpoint)` for an AsyncOpenAI (or, in
    replay mode, the replay client: all the model callers see of the pool, `ModelClients` in endpoints/clients.py);
    `aclose()` at the end of the run."""

    def __init__(self, record: Path | None = None, replay: Path | None = None,
                 concurrency: int | None = None, cache: Path | None = None) -> None:
        self.record = record
        self.concurrency = concurrency
        # every secret the run knows (each endpoint's, added as its client is made, and the suite's, added by
        # PreparedRun): recordings are masked with it, and replay masks requests the same way before hashing
        self.redactor = Redactor()
        self.replay = None
        if replay:
            from evals_cli.endpoints.replay import Recording, ReplayClient

            self.replay = ReplayClient(Recording(replay), self.redactor)
        self.cache = None  # --cache: recorded answers served, the rest called and recorded (see cache.py)
        if cache is not None:
            from evals_cli.endpoints.cache import ResponseCache

            self.cache = ResponseCache(cache)
        self._recorder: Any = None
        self._clients: dict[tuple[Any, ...], Any] = {}
        self._slots: dict[str | None, asyncio.Semaphore] = {}
        self._known: set[Endpoint] = set()

    def slots(self, base_url: str | None) -> asyncio.Semaphore | None:
        """The concurrency limit of one server, shared by all its clients (None: unlimited)."""
        if self.concurrency is None:
            return None
        if base_url not in self._slots:
            self._slots[base_url] = asyncio.Semaphore(self.concurrency)
        return self._slots[base_url]

    def load_sdk(self) -> None:
        """Import the openai SDK now if this pool will call live (not in replay), as the first call would: the
        `evals` process then puts it out of the collector's sight with the rest of what it prepared
        (shutdown.settle_heap), instead of walking the SDK's many thousand objects at each full collection."""
        if self.replay is None:
            import openai  # noqa: F401

    def client(self, endpoint: Endpoint) -> Any:
        if endpoint not in self._known:  # called per model call: learn each endpoint's secrets once
            self._known.add(endpoint)
            self.redactor.add(endpoint.secrets())
        if self.replay is not None:
            return self.replay
        key: tuple[Any, ...] = (endpoint.base_url, endpoint.api_key, endpoint.timeout, endpoint.max_retries)
        if self.cache is not None:  # a client per role, so the cache counts each role's hits and misses
            key += (endpoint.role,)
        if key not in self._clients:
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient
            from openai._constants import DEFAULT_CONNECTION_LIMITS

            from evals_cli.endpoints.httpx_compat import httpx
            from evals_cli.endpoints.tls import shared_context
            from evals_cli.endpoints.transport import BoundedTransport

            inner: Any
            if self.cache is not None:
                inner = self.cache.transport(endpoint.role, self.redactor)
            elif self.record is not None:
                if self._recorder is None:
                    from evals_cli.endpoints.recording import RecordingTransport

                    self._recorder = RecordingTransport(self.record, redact=self.redactor)
                inner = self._recorder
            else:
                inner = httpx.AsyncHTTPTransport(limits=DEFAULT_CONNECTION_LIMITS, verify=shared_context())
            transport = BoundedTransport(inner, endpoint.timeout, self.slots(endpoint.base_url),
                                         owns_inner=self.record is None and self.cache is None)
            http_client = DefaultAsyncHttpxClient(transport=transport, timeout=endpoint.timeout, verify=shared_context())
            self._clients[key] = AsyncOpenAI(
                base_url=endpoint.base_url, api_key=endpoint.api_key, timeout=endpoint.timeout,
                max_retries=endpoint.max_retries, http_client=http_client,
            )
        return self._clients[key]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
        if self._recorder is not None:
            await self._recorder.aclose()
            self._recorder = None
        if self.cache is not None:
            await self.cache.aclose()
