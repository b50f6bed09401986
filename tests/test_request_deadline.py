"""`timeout` bounds the whole request (connect to last byte), not each read: a server that trickles its reply
one byte at a time is cut off at the deadline, reported as a timeout and retried like one. And every model
call goes through one concurrency limit per server, whose wait does not count against the request's time."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, text

pytestmark = pytest.mark.slow  # servers that trickle or stall for real seconds: make test-slow runs them


class TrickleServer:
    """Answers every request with valid headers, then its body one byte per `interval` seconds."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.requests = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        body = json.dumps(text("slow but sure")).encode()
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                self.requests += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: %d\r\n\r\n" % len(body))
                for i in range(len(body)):  # bounded: at most len(body) bytes, then the socket closes
                    if self.stopped.is_set():
                        return
                    conn.sendall(body[i:i + 1])
                    time.sleep(self.interval)
            except OSError:
                return

    def stop(self) -> None:
        self.stopped.set()
        self.sock.close()


@pytest.fixture
def trickle() -> Iterator[TrickleServer]:
    server = TrickleServer()
    yield server
    server.stop()


def _endpoint(url: str, timeout: float, retries: int = 0) -> Endpoint:
    return Endpoint(role="agent", base_url=url, api_key="sk-test", model="m", timeout=timeout, max_retries=retries)


async def _ask(pool: ClientPool, endpoint: Endpoint) -> str:
    reply = await pool.client(endpoint).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    return reply.choices[0].message.content or ""


def test_a_trickling_reply_times_out_at_the_total_deadline(trickle: TrickleServer) -> None:
    async def main() -> float:
        pool = ClientPool()
        started = time.monotonic()
        try:
            with pytest.raises(openai.APITimeoutError):
                await _ask(pool, _endpoint(trickle.url, timeout=1.5))
            return time.monotonic() - started
        finally:
            await pool.aclose()

    assert asyncio.run(main()) < 4  # each byte arrives well within a read timeout: before, this took minutes


def test_the_deadline_is_per_attempt_and_retried(trickle: TrickleServer) -> None:
    async def main() -> float:
        pool = ClientPool()
        started = time.monotonic()
        try:
            with pytest.raises(openai.APITimeoutError):
                await _ask(pool, _endpoint(trickle.url, timeout=1.0, retries=1))
            return time.monotonic() - started
        finally:
            await pool.aclose()

    elapsed = asyncio.run(main())
    assert trickle.requests == 2 and elapsed < 6


def test_evals_run_reports_a_timeout_for_a_trickling_server(trickle: TrickleServer, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "slow", "input": "hi", "ground_truth": "sure"}], base_url=trickle.url,
                        target={"timeout": 2, "max_retries": 0})
    started = time.monotonic()
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert time.monotonic() - started < 30
    assert result.returncode == 3, result.stderr
    (line,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"]["category"] == "timeout", line["error"]


def test_one_concurrency_limit_per_server_and_its_wait_is_not_request_time(server: ScriptedServer) -> None:
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    def script(path: str, body: dict) -> Reply:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.4)
        with lock:
            in_flight -= 1
        return Reply(text("ok"))

    server.script = script

    async def main() -> list[str]:
        pool = ClientPool(concurrency=1)
        agent, judge = _endpoint(server.url, timeout=1.0), Endpoint(role="judge", base_url=server.url,
                                                                     api_key="sk-judge", model="j", timeout=1.0,
                                                                     max_retries=0)
        try:  # 6 calls of 0.4 s through one slot: 2.4 s in all, each within its own 1 s once it holds the slot
            return await asyncio.gather(*(_ask(pool, agent if i % 2 else judge) for i in range(6)))
        finally:
            await pool.aclose()

    assert asyncio.run(main()) == ["ok"] * 6
    assert peak == 1
