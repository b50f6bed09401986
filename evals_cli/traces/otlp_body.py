"""One OTLP/HTTP export request's body, read off the wire with a bound at every step (the run's receiver:
receiver.py). An agent's exporter is a program evals-cli does not control: a body is read only when its length
is known and within MAX_BODY (a Content-Length, or chunked with each chunk counted), inflated (gzip, deflate) at
most to MAX_BODY, and decoded only when what its decoded form would take fits in what the receiver may still
hold. Each step takes its bytes from the receiver's bound (`take`) before it allocates them, so a request that
would overrun the bound is refused before it is in memory.

A refusal is `Refused`: the HTTP status the exporter gets and a reason for its log. Nothing here answers the
client or prints; the receiver does both.
"""

from __future__ import annotations

import json
import re
import sys
import zlib
from collections.abc import Callable
from email.message import Message
from io import BufferedIOBase
from typing import Any

from evals_cli.errors import ConfigError

MAX_BODY = 16 * 1024 * 1024  # one export request, as sent and as inflated; a bigger one is refused (413)
INSTALL_OTEL = "pip install 'evals-cli[otel]'"
INFLATE_STEP = 1024 * 1024  # bytes inflated (and taken from the bound) per step
_SIZE_LINE = re.compile(rb"[0-9A-Fa-f]{1,15}")  # a chunk's size: hex digits only (int() would take -1, 0x1, 1_0)
_LINE = 1024  # a chunk-size line, its extensions included
_TRAILERS = 32  # trailer lines after the last chunk
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
# what a decoded request takes in memory, estimated before it is decoded: a few hundred bytes per object (a dict
# of the OTLP/JSON form, its copy in the parsed Span) and about twice its text (strings, ids as hex)
OBJECT_COST = 600
TEXT_FACTOR = 2

Take = Callable[[int], None]  # takes n bytes of the receiver's bound, or raises Refused (507)


class Refused(Exception):
    """A request the receiver does not keep: the HTTP status the exporter is answered with, and why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def protobuf_decoder() -> Any:
    """The protobuf message class of an export request; ConfigError naming the install command without it."""
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise ConfigError(f"target.telemetry: receiving OpenTelemetry spans needs the opentelemetry-proto package; "
                          f"install it with {INSTALL_OTEL}, or set telemetry: false to grade the replies "
                          "alone") from None
    return ExportTraceServiceRequest


def body_length(headers: Message) -> int | None:
    """The body's length from its Content-Length, None for a chunked body. A body without either is refused
    (411), and so is a length that is not one count of bytes (400: `-1`, `abc`, two values): neither is read."""
    lengths = {value.strip() for value in headers.get_all("Content-Length") or []}
    codings = [value.strip().lower() for value in headers.get_all("Transfer-Encoding") or []]
    if codings:
        if lengths:
            raise Refused(400, "the request has both Content-Length and Transfer-Encoding; send one")
        if codings != ["chunked"]:
            raise Refused(501, f"Transfer-Encoding {', '.join(codings)[:60]!r} is not supported (send chunked, or a "
                               "Content-Length)")
        return None
    if not lengths:
        raise Refused(411, "Content-Length is required (or Transfer-Encoding: chunked)")
    value = lengths.pop()
    if lengths or not (value.isascii() and value.isdigit()) or len(value) > 18:
        shown = ", ".join(sorted({value, *lengths}))[:60]
        raise Refused(400, f"Content-Length {shown!r} is not one count of bytes")
    return int(value)


def read_body(rfile: BufferedIOBase, length: int | None, limit: int, take: Take) -> bytes | bytearray:
    """The body as sent: `length` bytes (taken from the bound before they are read), or its chunks."""
    if length is None:
        return _read_chunked(rfile, limit, take)
    if length > limit:
        raise Refused(413, f"the body is {length} bytes, over the receiver's bound of {limit} (MAX_BODY); export "
                           "smaller batches")
    take(length)
    raw = rfile.read(length)
    if len(raw) < length:
        raise Refused(400, f"the body ended after {len(raw)} of its {length} bytes")
    return raw


def _read_chunked(rfile: BufferedIOBase, limit: int, take: Take) -> bytearray:
    body = bytearray()
    while True:
        line = rfile.readline(_LINE + 1)
        size_text = line.split(b";", 1)[0].strip()
        if not line.endswith(b"\n") or not _SIZE_LINE.fullmatch(size_text):
            raise Refused(400, "a chunk's size line is not a hexadecimal number")
        size = int(size_text, 16)
        if size == 0:
            _skip_trailers(rfile)
            return body
        if len(body) + size > limit:
            raise Refused(413, f"the chunked body passes the receiver's bound of {limit} bytes (MAX_BODY); export "
                               "smaller batches")
        take(size)
        part = rfile.read(size)
        if len(part) < size or rfile.readline(3).strip():
            raise Refused(400, "a chunk ended before its size, or without its line end")
        body += part


def _skip_trailers(rfile: BufferedIOBase) -> None:
    for _ in range(_TRAILERS):
        line = rfile.readline(_LINE + 1)
        if not line.endswith(b"\n"):
            break
        if not line.strip():
            return
    raise Refused(400, "the chunked body's trailer does not end (or has over 32 lines)")


def inflate(raw: bytes | bytearray, encoding: str, limit: int, take: Take) -> bytes | bytearray:
    """The body as its Content-Encoding says (none, gzip, deflate), inflated a step at a time up to `limit`
    bytes: a small body that inflates past it (a zip bomb) is refused (413) after `limit`, never inflated whole;
    another encoding is refused (415)."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return raw
    wbits = _WBITS.get(name)
    if wbits is None:
        raise Refused(415, f"Content-Encoding {encoding[:40]!r} is not supported (gzip, deflate or none)")
    out = bytearray()
    data: bytes | bytearray = raw
    try:
        while True:  # a gzip body may hold several members, one after the other
            data = _inflate_member(zlib.decompressobj(wbits), data, out, limit, take)
            if wbits == zlib.MAX_WBITS or not data.startswith(b"\x1f\x8b"):
                return out
    except zlib.error as exc:
        raise Refused(400, f"the body is not valid {name} ({exc})") from None


def _inflate_member(stream: Any, data: bytes | bytearray, out: bytearray, limit: int, take: Take) -> bytes:
    """One compressed stream inflated into `out`; what follows it in `data`."""
    while not stream.eof:
        room = min(INFLATE_STEP, limit + 1 - len(out))
        chunk = stream.decompress(data, room)
        data = stream.unconsumed_tail
        take(len(chunk))
        out += chunk
        if len(out) > limit:
            raise Refused(413, f"the body inflates past the receiver's bound of {limit} bytes (MAX_BODY); export "
                               "smaller batches")
        if not data and len(chunk) < room:  # every byte read and nothing left to inflate
            break
    if not stream.eof:
        raise Refused(400, "the compressed body ends before its stream does")
    return bytes(stream.unused_data)


def decode(raw: bytes | bytearray, content_type: str, take: Take) -> dict[str, Any]:
    """One export request as OTLP/JSON (ids in hex or base64, both read by otlp.py), its estimated decoded size
    taken from the bound before it is decoded. OTLP/JSON when the content type says json, else protobuf."""
    if "json" in content_type:
        take(TEXT_FACTOR * len(raw) + OBJECT_COST * (raw.count(b"{") + raw.count(b"[")))
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise Refused(400, f"an OTLP export request could not be read: {str(exc)[:200]}") from None
        if not isinstance(data, dict):
            raise Refused(400, "an OTLP export request could not be read: not a JSON object")
        return data
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

    try:
        message = protobuf_decoder()()
    except ConfigError as exc:
        raise Refused(415, str(exc).splitlines()[0][:200]) from None
    try:
        message.ParseFromString(raw)
    except DecodeError as exc:
        raise Refused(400, f"an OTLP export request could not be read: {str(exc)[:200]}") from None
    take(TEXT_FACTOR * len(raw) + OBJECT_COST * _objects(message))
    data = dict(MessageToDict(message))
    data.setdefault("resourceSpans", [])  # protobuf's JSON leaves an empty list out: an empty export is one
    return data


def _objects(message: Any) -> int:
    """The objects a parsed protobuf request becomes as OTLP/JSON: spans, events, links, attributes and the
    values nested in them (an array of a million numbers is a million objects, however few its bytes)."""
    count = 0
    for resource in message.resource_spans:
        count += 2 + _values(resource.resource.attributes)
        for scope in resource.scope_spans:
            count += 2 + _values(scope.scope.attributes)
            for span in scope.spans:
                count += 4 + _values(span.attributes)
                count += sum(2 + _values(item.attributes) for item in (*span.events, *span.links))
    return count


def _values(attributes: Any) -> int:
    return len(attributes) + sum(_nested(kv.value) for kv in attributes)


def _nested(value: Any) -> int:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return len(value.array_value.values) + sum(_nested(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return _values(value.kvlist_value.values)
    return 0


def footprint(*held: Any) -> int:
    """The bytes the objects take (sys.getsizeof, each container once): what the receiver counts against its
    bound for a request it holds, its OTLP/JSON form and the spans parsed from it."""
    total, seen, stack = 0, set(), list(held)
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list | tuple) or hasattr(item, "__dict__"):
            if id(item) in seen:
                continue
            seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type):
            stack.append(vars(item))
    return total
