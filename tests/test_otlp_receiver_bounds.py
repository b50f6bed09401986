"""The OTLP receiver's bounds against an agent's exporter that misbehaves (evals_cli/traces/receiver.py,
otlp_body.py), over real connections on 127.0.0.1: a length that is not one is refused unread, a compression bomb
is refused at MAX_BODY, what the receiver holds stays under its bound, a broken client prints nothing, and an
episode whose spans may have been refused ends as an error, never a pass."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.traces import receiver as receiver_module
from evals_cli.traces.otlp_body import INFLATE_STEP, MAX_BODY
from evals_cli.traces.receiver import OtlpReceiver
from tests.agents.span_agent import export_request
from tests.helpers import ROOT, read_jsonl, run_cli

SPAN_AGENT = ROOT / "tests" / "agents" / "span_agent.py"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver().start()
    yield running
    running.stop()


def _exchange(receiver: OtlpReceiver, head: str, body: bytes = b"") -> int:
    """Send a request's head and body as given, the connection left open (the receiver does not get an end of
    input to stop at); the status it answers with (a read timeout when it answers nothing)."""
    with socket.create_connection(("127.0.0.1", int(receiver.endpoint.rsplit(":", 1)[1])), timeout=5) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1]) if reply else 0


def _post(receiver: OtlpReceiver, body: bytes, headers: dict[str, str] | None = None) -> int:
    port = int(receiver.endpoint.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/v1/traces", body, {"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def _settled(receiver: OtlpReceiver, refused: int) -> None:
    """Until the receiver has refused `refused` requests and is done with every connection (bounded)."""
    with receiver.changed:
        assert receiver.changed.wait_for(lambda: receiver.refused >= refused and receiver.in_flight == 0, 5)


HEAD = "POST /v1/traces HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\n"


def test_a_length_that_is_not_a_byte_count_is_refused_unread_and_silently(
        receiver: OtlpReceiver, capfd: pytest.CaptureFixture[str]) -> None:
    cases = [(HEAD + "Content-Length: -1\n", 400),  # never read to the end of input, whatever follows
             (HEAD + "Content-Length: abc\n", 400),
             (HEAD + "Content-Length: 2\nContent-Length: 3\n", 400),
             (HEAD, 411),
             (HEAD + "Content-Length: 2\nTransfer-Encoding: chunked\n", 400),
             (HEAD + "Transfer-Encoding: gzip\n", 501)]
    assert [_exchange(receiver, head, b"{}") for head, _ in cases] == [status for _, status in cases]
    _settled(receiver, len(cases))
    assert (receiver.accepted, receiver.held_bytes, receiver.reserved) == (0, 0, 0)
    assert receiver.problem_count == len(cases) and "Content-Length '-1'" in receiver.problems[0]
    assert capfd.readouterr().err == ""  # nothing from the receiver's threads on the run's stderr


def test_a_chunked_body_is_read_and_one_past_the_body_bound_is_refused() -> None:
    receiver = OtlpReceiver(max_body=8192).start()
    try:
        assert _post(receiver, iter([b"{" + b" " * 4000] * 3)) == 413  # type: ignore[arg-type]  # chunked
        _settled(receiver, 1)
        assert (receiver.held_bytes, receiver.reserved) == (0, 0) and receiver.peak_bytes <= 8192
        body, opened = export_request("ep", 1, 100), time.monotonic()
        assert _post(receiver, iter([body[:50], body[50:]])) == 200  # type: ignore[arg-type]
        assert len(receiver.requests_for("ep", opened=opened)) == 1
    finally:
        receiver.stop()


def _bomb(encoding: str, mib: int = 200) -> bytes:
    """`mib` MiB of zeros compressed to about 1 KiB per MiB: one MiB compressed after a full flush is the same
    bytes every time, so the stream is built in milliseconds (its checksum is the real one)."""
    block = bytes(1 << 20)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    unit = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    deflated = first + unit * (mib - 1) + packer.flush()
    check = 0 if encoding == "gzip" else 1
    for _ in range(mib):
        check = (zlib.crc32 if encoding == "gzip" else zlib.adler32)(block, check)
    if encoding == "gzip":
        return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + deflated + struct.pack("<II", check, (mib << 20) % 2**32)
    return b"\x78\xda" + deflated + struct.pack(">I", check)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compression_bomb_is_refused_at_the_body_bound_and_nothing_big_is_held(
        receiver: OtlpReceiver, encoding: str) -> None:
    bomb = _bomb(encoding)
    assert len(bomb) < 256 * 1024
    assert _post(receiver, bomb, {"Content-Encoding": encoding}) == 413
    _settled(receiver, 1)
    assert (receiver.accepted, receiver.held_bytes, receiver.reserved) == (0, 0, 0)
    assert receiver.peak_bytes <= len(bomb) + MAX_BODY + INFLATE_STEP  # inflated to the bound, not to 200 MiB
    assert "inflates past the receiver's bound" in receiver.problems[0]


def test_an_unknown_encoding_is_415_and_a_corrupt_one_400(receiver: OtlpReceiver) -> None:
    body = export_request("ep", 1, 10)
    assert _post(receiver, body, {"Content-Encoding": "br"}) == 415
    assert _post(receiver, zlib.compress(body)[:-6], {"Content-Encoding": "deflate"}) == 400  # cut short
    assert _post(receiver, gzip_of(body), {"Content-Encoding": "gzip"}) == 200
    assert receiver.accepted == 1 and receiver.refused == 2


def test_an_empty_export_is_answered_and_nothing_kept(receiver: OtlpReceiver) -> None:
    assert _post(receiver, b"", {"Content-Type": "application/x-protobuf"}) == 200  # protobuf's empty request
    assert (receiver.accepted, receiver.refused, receiver.held_bytes) == (1, 0, 0)


def gzip_of(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def _one_request_size() -> tuple[int, int]:
    """What one of the span agent's requests takes held, and at most while it is received (a real receiver)."""
    probe = OtlpReceiver().start()
    try:
        assert _post(probe, export_request("ep", 1, 4096)) == 200
        return probe.held_bytes, probe.peak_bytes
    finally:
        probe.stop()


def test_past_the_held_bound_requests_are_refused_and_an_episode_open_then_is_not_complete() -> None:
    held, peak = _one_request_size()
    receiver = OtlpReceiver(max_held=peak + held // 2).start()  # room for one request, not two
    try:
        opened = time.monotonic()
        assert _post(receiver, export_request("ep", 1, 4096)) == 200
        assert _post(receiver, export_request("ep", 2, 4096)) == 507
        assert abs(receiver.held_bytes - held) < held // 10 and receiver.reserved == 0  # the first one alone
        assert receiver.peak_bytes <= receiver.max_held
        with pytest.raises(InvalidResponse, match=r"refused 1 export request\(s\) while this episode ran .*MAX_HELD"):
            receiver.requests_for("ep", opened=opened)
        assert receiver.held_bytes == 0  # the episode's spans were let go with it
        later = time.monotonic()
        assert _post(receiver, export_request("next", 1, 4096)) == 200  # room again
        assert len(receiver.requests_for("next", opened=later)) == 1  # opened after the refusal: complete
        with pytest.raises(InvalidResponse, match="during the run"):
            receiver.requests_for("unknown")  # no opening time: any refusal in the run counts
    finally:
        receiver.stop()


def test_a_body_cut_off_mid_way_is_waited_for_and_its_episode_not_complete(receiver: OtlpReceiver) -> None:
    port = int(receiver.endpoint.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall((HEAD + "Content-Length: 1000\n").replace("\n", "\r\n").encode() + b"\r\n" + b'{"resourceSpans"')
    with receiver.changed:
        assert receiver.changed.wait_for(lambda: receiver.in_flight == 1, 5)
    outcome: list[BaseException | list[object]] = []

    def episode_ends() -> None:
        try:
            outcome.append(list(receiver.requests_for("ep")))
        except InvalidResponse as exc:
            outcome.append(exc)

    ending = threading.Thread(target=episode_ends)
    ending.start()
    sock.close()  # the agent dies mid-request
    ending.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], InvalidResponse)
    assert "the body ended after 16 of its 1000 bytes" in str(outcome[0])


def test_a_client_that_breaks_off_gets_no_traceback_on_the_runs_stderr(
        receiver: OtlpReceiver, capfd: pytest.CaptureFixture[str]) -> None:
    port = int(receiver.endpoint.rsplit(":", 1)[1])
    for cut in (b"", b"{\"resourceSpans\": ["):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall((HEAD + "Content-Length: 100000\n").replace("\n", "\r\n").encode() + b"\r\n" + cut)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # closed with a reset
        sock.close()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")  # a TLS hello, say
        assert b"Error" in sock.recv(1000)  # http.server's own answer to a request line it cannot read
    _settled(receiver, 2)
    assert capfd.readouterr().err == ""
    assert receiver.refused == 2 and receiver.accepted == 0


def _suite(tmp: Path) -> Path:
    rows = [{"id": "one", "input": "hi", "ground_truth": "echo: hi"},
            {"id": "two", "input": ["a", "b"], "ground_truth": "echo: b"}]  # two exports: the second is refused
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "bounded", "dataset": "rows.jsonl",
             "target": {"kind": "command", "command": [sys.executable, str(SPAN_AGENT)]},
             "graders": {"answer": {"kind": "match", "function": "contains", "extractor": "last_assistant"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


def test_a_run_whose_spans_the_receiver_refused_errors_that_episode_instead_of_passing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    held, peak = _one_request_size()
    monkeypatch.setattr(receiver_module, "MAX_HELD", peak + held // 2)  # the run's receiver holds one request
    result = run_cli("run", str(_suite(tmp_path)), "-o", str(tmp_path / "out"), "-c", "1")
    rows = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert rows["one"]["error"] is None and rows["one"]["grades"]["answer"]["score"] == 1.0
    message = rows["two"]["error"]["message"]
    assert "telemetry is incomplete" in message and "MAX_HELD" in message and rows["two"]["passed"] is not True
    assert "answer" not in rows["two"]["grades"]  # the reply was right, but nothing is graded on partial spans
    assert result.returncode == 3 and "Traceback" not in result.stdout + result.stderr
