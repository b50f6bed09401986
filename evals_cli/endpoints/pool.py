"""One shared AsyncOpenAI client per endpoint (a client per sample wastes connections and CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals_cli.endpoints.resolve import Endpoint


class ClientPool:
    def __init__(self, record: Path | None = None, replay: Path | None = None) -> None:
        self.record = record
        self.replay = None
        if replay:
            from evals_cli.endpoints.replay import Recording, ReplayClient

            self.replay = ReplayClient(Recording(replay))
        self._recorder: Any = None
        self._clients: dict[tuple[Any, ...], Any] = {}

    def client(self, endpoint: Endpoint) -> Any:
        if self.replay is not None:
            return self.replay
        key = (endpoint.base_url, endpoint.api_key, endpoint.timeout, endpoint.max_retries)
        if key not in self._clients:
            from openai import AsyncOpenAI

            from evals_cli.endpoints.httpx_compat import httpx

            http_client = None
            if self.record is not None:
                if self._recorder is None:
                    from evals_cli.endpoints.recording import RecordingTransport

                    self._recorder = RecordingTransport(self.record)
                http_client = httpx.AsyncClient(transport=self._recorder, timeout=endpoint.timeout)
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
            self._recorder.file.close()
