"""A loopback OTLP/HTTP trace receiver: an external agent (a command or an HTTP agent) exports its spans here while
it runs, and each episode takes back its spans, so its trajectory is rebuilt from what the
agent itself reported (the same reader as trace files: conversations.py).

It listens on 127.0.0.1 only, takes `POST /v1/traces` as OTLP/JSON or OTLP/protobuf (the OpenTelemetry SDK's
default, `http/protobuf`, decoded with the `opentelemetry-proto` package of the `otel` extra), and keeps each
request as OTLP/JSON (what a recording stores and replays). An episode's spans are those its processes sent (a
bound receiver, below), else those whose resource carries `evals.episode=<id>` (evals-cli sets
OTEL_RESOURCE_ATTRIBUTES) or whose trace holds a span naming the id as its session (`session.id`,
`gen_ai.conversation.id`: an HTTP agent given the id).

The agent is a program evals-cli does not control, so what it can make the run hold is bounded: each body
(otlp_body.py: its length known, MAX_BODY as sent and inflated) and everything held at once, MAX_HELD bytes of
requests kept and being read. An episode takes its spans out when it ends, so the bound is on what the episodes
running hold, not on the run's length. A request refused for any reason (too big, the bound reached, a body that
does not read) may have held an episode's spans: the episode that sent it (a bound receiver) or, where nobody can
say whose it was, every episode open when one was refused (when its start is not given, every episode ending
after it) is an error naming why (`requests_for`), never a verdict on spans the receiver dropped. Nothing of a
broken client reaches the run's output: the receiver answers or closes the connection, and counts the problem.

A receiver made with `bind=True` (a command agent's, on Linux: peers.py) binds each connection to the open episode
whose process tree holds its client socket, asked of the kernel when its request is read; what the spans are
tagged with decides nothing. Spans on it are that episode's; a request whose spans name another episode (another
`evals.episode`, or another open episode's id as their session) is refused (403) and makes the sender's own episode
an error; a connection no open episode's process holds is refused (403) and counted (`foreign`), and errors no
episode: a process outside the run can neither feed nor invalidate a sample. A refusal of a bound request for any
other reason errors its own episode alone. Elsewhere (no /proc) `bind` is ignored: spans are told apart by tag.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from http.server import ThreadingHTTPServer
from io import BufferedIOBase
from typing import Any

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.errors import ConfigError
from evals_cli.traces import peers
from evals_cli.traces.otlp import BadLine, Span, spans_of_request
from evals_cli.traces.otlp_body import MAX_BODY, Refused, body_length, decode, footprint, inflate, read_body
from evals_cli.traces.receiver_http import serve

EPISODE_ATTRIBUTE = "evals.episode"
SESSION_ATTRIBUTES = ("session.id", "gen_ai.conversation.id")
MAX_HELD = 256 * 1024 * 1024  # bytes held at once: the requests kept (their decoded form) and those being read
SETTLE_S = 5.0  # an episode's end waits this long, at most, for the requests still being received
MAX_PROBLEMS = 20  # problems kept as text; all are counted
POLL_S = 0.1  # how soon the server's loop sees `stop`

Resources = list[tuple[dict[str, Any], list[Span]]]


@dataclass
class _Held:
    """One request kept: its resources with their spans (parsed once, on arrival) and the bytes they take."""

    resources: Resources
    size: int
    episode: str | None = None  # a bound receiver: the episode whose process sent it


@dataclass
class _Lost:
    """What a bound receiver refused of one episode's requests: lost spans (too big, unreadable, the bound reached)
    and requests whose spans named another episode, each counted with the last reason."""

    lost: int = 0
    last_lost: str = ""
    forged: int = 0
    last_forged: str = ""


class _Forged(Refused):
    """A bound request whose spans name another episode than the one that sent it."""


class OtlpReceiver:
    """The run's receiver (one per target, started on first use); thread-safe, its server in a daemon thread.
    `max_held` and `max_body` default to the module's bounds (read when the receiver is made); `bind`: connections
    are bound to the episodes `expect`ed and `started` (module docstring), where the kernel can say who sent them;
    `on_foreign` is told the first connection refused for coming from outside every episode."""

    def __init__(self, port: int = 0, max_held: int | None = None, max_body: int | None = None, bind: bool = False,
                 on_foreign: Callable[[str], None] | None = None) -> None:
        self.port = port
        self.episodes = peers.EpisodeRoots() if bind and peers.available() else None
        self.on_foreign = on_foreign
        self.foreign = 0  # bound: connections refused for coming from no open episode's process
        self.max_held = MAX_HELD if max_held is None else max_held
        self.max_body = MAX_BODY if max_body is None else max_body
        self.accepted = 0  # requests kept, in the run
        self.held_bytes = 0  # what the requests kept take
        self.reserved = 0  # what the requests being read or decoded have taken of the bound
        self.peak_bytes = 0  # the most held and reserved at once
        self.refused = 0  # requests refused, in the run
        self.problems: list[str] = []  # the first MAX_PROBLEMS, as text
        self.problem_count = 0
        self._held: list[_Held] = []
        self._refusals: deque[tuple[float, str]] = deque(maxlen=100)  # (when, why), the latest; unbound only
        self._lost: dict[str, _Lost] = {}  # bound: each episode's refused requests
        self._busy: dict[str, int] = {}  # bound: each episode's requests placed and not yet done with
        self._vouched: dict[tuple[str, int], str] = {}  # client (host, port) -> episode: bridges evals-cli opened
        self._in_flight: set[int] = set()
        self._arrivals = 0
        self._decoding = threading.Lock()  # one decode at a time: its memory comes once, not once per connection
        self.changed = threading.Condition()
        self._server: ThreadingHTTPServer | None = None

    @property
    def bound(self) -> bool:
        """Connections are bound to the episodes whose processes hold them (`bind`, where /proc says so)."""
        return self.episodes is not None

    @property
    def endpoint(self) -> str:
        """The base URL an agent's OTLP exporter is pointed at (OTEL_EXPORTER_OTLP_ENDPOINT)."""
        if self._server is None:
            raise RuntimeError("the receiver is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OtlpReceiver:
        if self._server is None:
            try:
                self._server = serve(("127.0.0.1", self.port), self)
            except OSError as exc:
                raise ConfigError(f"target.otlp_port: cannot listen on 127.0.0.1:{self.port} for the agent's spans "
                                  f"({exc.strerror or exc}); free the port or choose another otlp_port") from None
            threading.Thread(target=self._server.serve_forever, args=(POLL_S,), name="otlp-receiver",
                             daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def problem(self, text: str) -> None:
        with self.changed:
            self.problem_count += 1
            if len(self.problems) < MAX_PROBLEMS:
                self.problems.append(text)
            self.changed.notify_all()

    def receive(self, headers: Message, rfile: BufferedIOBase, episode: str | None = None) -> tuple[int, str]:
        """One POST /v1/traces read, decoded and kept (`episode`: the one its connection is bound to): the status
        to answer and, for a refusal, why. The refusal is on record before the exporter is answered (an episode
        ending after that answer sees it)."""
        ticket = _Ticket(self)
        try:
            self._keep(self._read(headers, rfile, ticket, episode), ticket)
            return 200, ""
        except Refused as refusal:
            self._refuse(refusal, episode)
            return refusal.status, refusal.reason
        finally:
            with self.changed:
                self.reserved -= ticket.size
                if episode is not None:
                    left = self._busy.pop(episode, 1) - 1
                    if left:
                        self._busy[episode] = left
                    self.changed.notify_all()

    @property
    def in_flight(self) -> int:
        """Connections accepted and not yet done with."""
        with self.changed:
            return len(self._in_flight)

    def arrive(self) -> int:
        """A connection accepted (its number): until it `leave`s, an episode ending waits for it (SETTLE_S)."""
        with self.changed:
            self._arrivals += 1
            self._in_flight.add(self._arrivals)
            self.changed.notify_all()
            return self._arrivals

    def leave(self, arrival: int) -> None:
        with self.changed:
            self._in_flight.discard(arrival)
            self.changed.notify_all()

    def expect(self, tag: str) -> None:
        """An episode is about to start its process (a bound receiver; elsewhere nothing to do)."""
        if self.episodes is not None:
            self.episodes.expect(tag)

    def started(self, tag: str, pid: int) -> None:
        """A root process of the episode: its connections are those held by a root or any process below one (a
        command agent's is its reaper; a sandbox whose processes run below a monitor of their own adds that)."""
        if self.episodes is not None:
            self.episodes.started(tag, pid)

    def ended(self, tag: str) -> None:
        """The episode's processes are gone: no connection is its from now on (its spans wait for `requests_for`)."""
        if self.episodes is not None:
            self.episodes.ended(tag)

    def forget(self, tag: str) -> None:
        """An episode that reads no spans (it failed): what the receiver holds of it is let go."""
        self.ended(tag)
        if self.episodes is not None:
            with self.changed:
                self._take_out(tag, frozenset())
                self._lost.pop(tag, None)

    def vouch(self, tag: str, client: tuple[str, int]) -> None:
        """A connection evals-cli itself opened for episode `tag` from `client` (host, port): a sandbox's bridge
        (sandbox/bridge.py), whose processes reach the receiver through it alone. Its requests are that episode's,
        as a connection held by the episode's own process is; `unvouch` when it closes."""
        with self.changed:
            self._vouched[client] = tag

    def unvouch(self, client: tuple[str, int]) -> None:
        with self.changed:
            self._vouched.pop(client, None)

    def place(self, client: tuple[str, int]) -> tuple[str | None, str]:
        """The open episode whose process holds the client end of this connection (or that a bridge vouched for),
        or None; and that socket's `socket:[inode]` link (empty: the socket is gone, its client did not wait for
        the answer). A request placed is handed to `receive` with its episode, which is done with it."""
        assert self.episodes is not None and self._server is not None
        with self.changed:
            owner = self._vouched.get((client[0], client[1]))
            if owner is not None:
                self._busy[owner] = self._busy.get(owner, 0) + 1
                return owner, f"bridge of {owner}"
        inode = peers.client_inode(client, ("127.0.0.1", self._server.server_port))
        if inode is None:
            return None, ""
        link = f"socket:[{inode}]"
        owner = self.episodes.owner(link)
        if owner is not None:  # its episode's end waits for it from now on (until `receive` is done with it)
            with self.changed:
                self._busy[owner] = self._busy.get(owner, 0) + 1
        return owner, link

    def refuse_foreign(self, link: str) -> str:
        """A connection no open episode's process holds: refused and counted, no episode's verdict touched. Who
        holds it is looked for only while its problem is kept as text (a scan of every process)."""
        reason = ("the connection comes from no process of an open episode of this run (the receiver takes a "
                  "command agent's spans from the processes of its episode only)")
        with self.changed:
            self.foreign += 1
            self.refused += 1
            first, keep = self.foreign == 1, len(self.problems) < MAX_PROBLEMS
        if keep:
            who = peers.holder(link) if link else "a client that closed its socket before the answer"
            text = f"an OTLP export request was refused (403): its connection was held by {who}, outside every episode"
            self.problem(text)
            if first and self.on_foreign is not None:
                self.on_foreign(text)
        return reason

    def _read(self, headers: Message, rfile: BufferedIOBase, ticket: _Ticket, episode: str | None) -> _Held:
        length = body_length(headers)
        try:
            raw = read_body(rfile, length, self.max_body, ticket.take)
        except OSError as exc:  # the client went silent (receiver_http.READ_TIMEOUT_S) or away mid-body
            raise Refused(408, f"the body stopped arriving ({type(exc).__name__})") from None
        body = inflate(raw, headers.get("Content-Encoding", ""), self.max_body, ticket.take)
        if body is not raw:
            ticket.give(len(raw))
        del raw
        with self._decoding:
            request = decode(body, headers.get("Content-Type", "application/x-protobuf"), ticket.take)
            del body
            try:
                resources = _resources(request)
            except (BadLine, TypeError, AttributeError) as exc:
                raise Refused(400, f"an OTLP export request could not be read: {str(exc)[:200]}") from None
            if episode is not None:
                self._check_names(resources, episode)
            return _Held(resources, footprint(request, resources), episode)

    def _check_names(self, resources: Resources, episode: str) -> None:
        """_Forged when a span of a request bound to `episode` names another episode: its resource's
        evals.episode, or another open episode's id as its session."""
        others = (self.episodes.open_tags() if self.episodes is not None else set()) - {episode}
        for _, spans in resources:
            for span in spans:
                tag = _resource_tag(span)
                sessions = (str(span.attributes[k]) for k in SESSION_ATTRIBUTES if span.attributes.get(k) is not None)
                named = tag if tag is not None and tag != episode else next((s for s in sessions if s in others), None)
                if named is not None:
                    raise _Forged(403, f"span {span.name!r} names episode {named!r}, but the connection it came on "
                                       f"is held by a process of episode {episode!r}")

    def _keep(self, held: _Held, ticket: _Ticket) -> None:
        with self.changed:
            self.reserved -= ticket.size
            ticket.size = 0
            if held.resources:  # an empty export is answered, and nothing of it kept
                if self.held_bytes + self.reserved + held.size > self.max_held:
                    raise Refused(507, self._full(held.size))
                self.held_bytes += held.size
                self.peak_bytes = max(self.peak_bytes, self.held_bytes + self.reserved)
                self._held.append(held)
            self.accepted += 1
            self.changed.notify_all()

    def _take(self, size: int) -> None:
        with self.changed:
            if self.held_bytes + self.reserved + size > self.max_held:
                raise Refused(507, self._full(size))
            self.reserved += size
            self.peak_bytes = max(self.peak_bytes, self.held_bytes + self.reserved)

    def _full(self, size: int) -> str:
        return (f"the run's OTLP receiver holds {_size(self.held_bytes + self.reserved)} of its bound of "
                f"{_size(self.max_held)} (MAX_HELD); this request's {_size(size)} more is refused (the episodes "
                "running export more spans than that at once)")

    def _refuse(self, refusal: Refused, episode: str | None) -> None:
        self.problem(f"an OTLP export request was refused ({refusal.status}): {refusal.reason}")
        why = f"{refusal.status}: {refusal.reason}"
        with self.changed:
            self.refused += 1
            if episode is None:  # nobody's to know whose spans it held: every episode open then
                self._refusals.append((time.monotonic(), why))
            else:
                lost = self._lost.setdefault(episode, _Lost())
                if isinstance(refusal, _Forged):
                    lost.forged, lost.last_forged = lost.forged + 1, why
                else:
                    lost.lost, lost.last_lost = lost.lost + 1, why
            self.changed.notify_all()

    def requests_for(self, tag: str, trace_ids: frozenset[str] = frozenset(),
                     opened: float | None = None) -> list[dict[str, Any]]:
        """The export requests that hold spans of episode `tag` (or of the traces evals-cli started for it, by the
        traceparent it sent), each cut down to those spans' resources, taken out of the receiver: an episode
        reads its spans once, when it ends. First the requests still arriving are waited for (SETTLE_S at most): a
        bound receiver's, those placed to this episode alone (its processes are gone: no other can become its).
        InvalidResponse when a request was refused since the episode was `opened` (time.monotonic(); None: in
        the whole run) or one is still arriving: a refused request's spans are nobody's to know, and a trajectory
        graded without them could pass on what the agent did not report."""
        with self.changed:
            before = self._arrivals
            settled = self.changed.wait_for(lambda: not self._busy.get(tag) if self.episodes is not None else
                                            all(a > before for a in self._in_flight), SETTLE_S)
            requests = self._take_out(tag, trace_ids)
            refusals = [why for when, why in self._refusals if opened is None or when >= opened]
            count = self.refused if opened is None else len(refusals)
            lost = self._lost.pop(tag, None) if self.episodes is not None else None
        if lost is not None:
            _raise_lost(lost)
        if refusals:
            since = "during the run" if opened is None else "while this episode ran"
            raise InvalidResponse(f"the agent's telemetry is incomplete: the run's OTLP receiver refused {count} "
                                  f"export request(s) {since} (the last: {refusals[-1]}); its spans may have been "
                                  "this episode's, so its trajectory is not graded")
        if not settled:
            raise InvalidResponse(f"the agent's telemetry is incomplete: an export request was still arriving at the "
                                  f"run's OTLP receiver {SETTLE_S:g}s after the episode ended")
        return requests

    def _take_out(self, tag: str, trace_ids: frozenset[str]) -> list[dict[str, Any]]:
        """The episode's resources out of the requests held (under the lock); a request left empty is let go."""
        traces = {span.trace_id for held in self._held for _, spans in held.resources for span in spans
                  if held.episode is None and _names_session(span, tag)}
        traces |= trace_ids
        out, kept = [], []
        for held in self._held:
            mine = [rs for rs, spans in held.resources
                    if (held.episode == tag if held.episode is not None else
                        any(_resource_tag(span) == tag or span.trace_id in traces for span in spans))]
            if mine:
                out.append({"resourceSpans": mine})
                held.resources = [(rs, spans) for rs, spans in held.resources if all(rs is not m for m in mine)]
            if held.resources:
                kept.append(held)
            else:
                self.held_bytes -= held.size
        self._held = kept
        return out

    def wait_quiet(self, tag: str, quiet_s: float, bound_s: float, trace_ids: frozenset[str] = frozenset()) -> None:
        """Until spans of `tag` arrived and no request was kept for `quiet_s` (an HTTP agent's exporter sends in
        batches after its reply), at most `bound_s`. Woken by each request (a condition, not a poll)."""
        deadline = time.monotonic() + bound_s
        with self.changed:
            seen, quiet_from = self.accepted, time.monotonic()
            while True:
                now = time.monotonic()
                if self.accepted != seen:
                    seen, quiet_from = self.accepted, now
                if now >= deadline:
                    return
                quiet_left = quiet_from + quiet_s - now
                if quiet_left <= 0 and self._has(tag, trace_ids):
                    return
                self.changed.wait(min(quiet_left, deadline - now) if quiet_left > 0 else deadline - now)

    def _has(self, tag: str, trace_ids: frozenset[str]) -> bool:
        return any(_names_session(s, tag) or s.trace_id in trace_ids
                   for held in self._held for _, spans in held.resources for s in spans)


class _Ticket:
    """What one request being received has taken of the receiver's bound (given back when it is done)."""

    def __init__(self, receiver: OtlpReceiver) -> None:
        self.receiver = receiver
        self.size = 0

    def take(self, size: int) -> None:
        self.receiver._take(size)
        self.size += size

    def give(self, size: int) -> None:
        with self.receiver.changed:
            self.receiver.reserved -= size
            self.size -= size


def _raise_lost(lost: _Lost) -> None:
    """InvalidResponse naming what a bound receiver refused of one episode's own requests (nothing: no error)."""
    if lost.forged:
        raise InvalidResponse(f"the agent's telemetry named another episode: the run's OTLP receiver refused "
                              f"{lost.forged} export request(s) of this episode's processes (the last: "
                              f"{lost.last_forged}); an agent that reports spans as another sample's is not graded")
    if lost.lost:
        raise InvalidResponse(f"the agent's telemetry is incomplete: the run's OTLP receiver refused {lost.lost} "
                              f"export request(s) of this episode's processes (the last: {lost.last_lost}), so its "
                              "trajectory is not graded")


def _resources(request: dict[str, Any]) -> Resources:
    """Each resource of the request with its spans; BadLine for a request that is not OTLP/JSON."""
    if "resourceSpans" not in request:
        spans_of_request(request, "otlp receiver")  # raises, naming the shape expected
    return [(rs, spans_of_request({"resourceSpans": [rs]}, "otlp receiver"))
            for rs in request.get("resourceSpans") or []]


def _size(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def _resource_tag(span: Span) -> str | None:
    value = span.resource.get(EPISODE_ATTRIBUTE)
    return str(value) if value is not None else None


def _names_session(span: Span, tag: str) -> bool:
    return _resource_tag(span) == tag or any(str(span.attributes.get(key)) == tag for key in SESSION_ATTRIBUTES
                                             if span.attributes.get(key) is not None)
