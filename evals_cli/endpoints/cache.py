"""`--cache FILE`: serve every request the file already holds, call (and append) the rest, so iterating on a rubric
or a grader re-runs the suite without calling the agent again, and an unchanged suite calls no model at all.

A cache file is a recording (recording.py): the same key (method, API path and the masked body, hashed) and the
same lines, so `--replay FILE` plays a cache offline and a `--record` file can seed a cache. It works at the HTTP
transport, below the SDK, so the agent, the judges and the user simulator are cached alike and a hit is parsed
by the same client code as a live answer.

What is served:
- identical requests are served the recorded entries in order, and once a key's entries are used up the next
  identical request is a miss: `--repeats 3` over a cache made with one repeat calls the model for the two new
  repeats (a repeat is a new draw, not a copy of the first), and makes the cache hold three;
- only answers worth keeping: a 2xx, or a server's refusal of a structured-output format (its 400 says what the
  server supports, not what went wrong this time). A recorded 429, 5xx, 401 or 404 is never served: the call is
  made again, so a failure of the first run does not become permanent.

Hits and misses are counted per role (agent, judge, user simulator): the run's summary says them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from evals_cli.endpoints.httpx_compat import httpx
from evals_cli.endpoints.keys import api_path, body_key, request_body
from evals_cli.endpoints.recording import RecordingTransport
from evals_cli.endpoints.secrets import Redactor, header_secrets, url_secrets
from evals_cli.errors import ConfigError


def _servable(entry: dict[str, Any]) -> bool:
    """A 2xx whose body is a JSON object (every chat and Responses answer is one): a list, a string or null is a
    damaged line, a miss rather than an answer the SDK would read as empty."""
    status = entry.get("status", 200)
    return isinstance(status, int) and 200 <= status < 300 and isinstance(entry.get("response"), dict)


class ResponseCache:
    """The answers a cache file holds, by key, and the counts of this run's hits and misses. One per client pool
    (a run, or one model of a run over several); `transport(role, redact)` gives the transport of each role."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if path.exists() and not path.is_file():
            raise ConfigError(f"--cache {path}: is a folder; give a file (created on the first run), e.g. "
                              "cache.jsonl")
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.note: str | None = None  # what the run should say about the file (a torn last line removed)
        self.refusals: dict[tuple[str, str, str], dict[str, Any]] = {}
        if path.is_file():
            from evals_cli.endpoints.replay import Recording

            try:
                recording = Recording(path, torn_ok=True)
                if recording.torn is not None:  # cut off, or the next answer appended would join the torn line
                    number, offset = recording.torn
                    with path.open("r+b") as fh:
                        fh.truncate(offset)
                    self.note = (f"--cache {path}:{number}: torn last line removed (a run was killed while "
                                 "appending it); its request is called again")
            except OSError as exc:
                raise ConfigError(f"--cache {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
            for key, entries in recording.entries.items():
                kept = [e for e in entries if _servable(e)]
                if kept:
                    self.entries[key] = kept
            self.refusals = {probe: entry for probe, entry in recording.refused_formats.items()
                             if entry.get("status") == 400}  # a 5xx is no statement about the format
        self.served: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()
        self._transports: dict[str, CachingTransport] = {}

    def take(self, key: str, path: str, body: Any) -> dict[str, Any] | None:
        """The next unused recorded answer to this request, or None (a miss: the caller calls the model)."""
        entries = self.entries.get(key, [])
        index = self.served[key]
        if index < len(entries):
            self.served[key] = index + 1
            return entries[index]
        if not entries and isinstance(body, dict):
            from evals_cli.endpoints.replay import _format_of

            probe = _format_of(path, body)
            if probe is not None and probe in self.refusals:  # see replay.Recording.next: a format refusal
                return self.refusals[probe]
        return None

    def transport(self, role: str, redact: Redactor) -> CachingTransport:
        """The transport of one role's clients (shared by every client of that role): hits and misses are counted
        under the role."""
        if role not in self._transports:
            self._transports[role] = CachingTransport(self, role, redact)
        return self._transports[role]

    async def aclose(self) -> None:
        for transport in self._transports.values():
            await transport.aclose()
        self._transports.clear()


class CachingTransport(RecordingTransport):
    """A hit is answered from the cache file without a network call; a miss goes to the server and is appended to
    the file, exactly as `--record` would write it."""

    def __init__(self, cache: ResponseCache, role: str, redact: Redactor) -> None:
        super().__init__(cache.path, redact=redact)
        self.cache = cache
        self.role = role

    async def handle_async_request(self, request: Any) -> Any:
        self.redact.add([*header_secrets(request.headers.items()), *url_secrets(str(request.url))])
        path = api_path(request.url.path)
        body = request_body(request)
        entry = self.cache.take(body_key(request.method, path, body, self.redact), path, body)
        if entry is None:
            self.cache.misses[self.role] += 1
            return await super().handle_async_request(request)
        self.cache.hits[self.role] += 1
        payload = entry["response"]
        content = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        return httpx.Response(status_code=entry.get("status", 200), headers={"content-type": "application/json"},
                              content=content, request=request)
