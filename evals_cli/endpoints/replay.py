"""Serve model calls from a recording with no network at all.

Chat completions and Responses API calls are answered straight from the recording, without building HTTP
requests: the key is the one the recording transport computed from the same JSON body and API path, and a
replay run then measures the harness, not the HTTP stack. Identical requests are served in recorded order,
the last one repeating.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from evals_cli.endpoints.context import CALL_CONTEXT, ReplayMiss
from evals_cli.endpoints.keys import RECORDING_VERSION, body_key
from evals_cli.endpoints.recorded_chat import RecordedChatCompletion, plain_chat_completion
from evals_cli.endpoints.secrets import Redactor
from evals_cli.errors import ConfigError, refuse_newer

_REQUEST_ONLY = {"extra_headers", "extra_query", "extra_body", "timeout"}


class Recording:
    """The exchanges of a recording file, by key."""

    def __init__(self, path: Path, *, torn_ok: bool = False) -> None:
        """`torn_ok`: a last line that is not whole JSON and has no newline (a run killed while appending it) is
        left out and noted in `torn` (its line number and byte offset) instead of refusing the file."""
        self.path = path
        self.entries: dict[str, list[dict[str, Any]]] = {}
        self.served: dict[str, int] = {}
        self.parsed: dict[tuple[str, int], Any] = {}
        self.refused_formats: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.torn: tuple[int, int] | None = None
        offset = 0
        with path.open("rb") as fh:
            for number, raw in enumerate(fh, 1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                try:
                    self._add(json.loads(raw.decode("utf-8")), f"{path}:{number}")
                except (ValueError, KeyError, TypeError):
                    if torn_ok and not raw.endswith(b"\n") and _not_json(raw):
                        self.torn = (number, start)
                        break
                    raise ConfigError(f"{path}:{number}: not a recording line (expected JSON with 'key')") from None

    def _add(self, entry: Any, where: str) -> None:
        refuse_newer(entry, RECORDING_VERSION, where, "recording line")
        self.entries.setdefault(entry["key"], []).append(entry)
        refused = _refused_format(entry)
        if refused is not None:
            self.refused_formats.setdefault(refused, entry)

    def next(self, key: str, path: str = "", body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        entries = self.entries.get(key)
        if not entries and body is not None:
            probe = _format_of(path, body)
            if probe is not None and probe in self.refused_formats:
                # which judge call probes the server's structured output first depends on timing (the others wait
                # for its answer), so under concurrency a replay may probe from another sample than the recording
                # did; the recording shows the server refuses this response_format for this model, and a server
                # that refuses a format refuses it whatever the messages: the probe gets that recorded refusal
                return 0, self.refused_formats[probe]
        if not entries:
            raise ReplayMiss(f"{CALL_CONTEXT.get()}: no recorded response in {self.path.name} for this request "
                             "(the suite, dataset or model changed since recording; re-record with --record)")
        index = min(self.served.get(key, 0), len(entries) - 1)
        self.served[key] = index + 1
        return index, entries[index]


def _not_json(raw: bytes) -> bool:
    try:
        json.loads(raw.decode("utf-8"))
    except ValueError:
        return True
    return False


def _format_of(path: str, body: dict[str, Any]) -> tuple[str, str, str] | None:
    """(API path, model, response_format type) of a request asking for a structured output, else None."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("type"), str) and fmt["type"] != "text":
        return path, str(body.get("model")), fmt["type"]
    return None


def _refused_format(entry: dict[str, Any]) -> tuple[str, str, str] | None:
    """The structured-output request a recorded entry shows the server refusing (HTTP 400 or 5xx), else None."""
    request, status = entry.get("request"), entry.get("status", 200)
    if not isinstance(request, dict) or not (status == 400 or (isinstance(status, int) and status >= 500)):
        return None
    return _format_of(str(entry.get("path", "")), request)


def _status_error(status: int, body: Any, path: str = "chat/completions") -> Exception:
    import openai

    from evals_cli.endpoints.httpx_compat import httpx

    classes = {400: openai.BadRequestError, 401: openai.AuthenticationError, 403: openai.PermissionDeniedError,
               404: openai.NotFoundError, 422: openai.UnprocessableEntityError, 429: openai.RateLimitError}
    cls = classes.get(status, openai.InternalServerError if status >= 500 else openai.APIStatusError)
    response = httpx.Response(status, request=httpx.Request("POST", f"http://replay.invalid/v1/{path}"))
    message = body.get("error", {}).get("message", str(body)) if isinstance(body, dict) else str(body)
    return cls(f"Error code: {status} - {message}", response=response, body=body)


class ReplayClient:
    """Stands in for AsyncOpenAI in replay mode (the part of it the targets and the judge use):
    `chat.completions.create` and `responses.create`."""

    def __init__(self, recording: Recording, redact: Redactor | None = None) -> None:
        self.recording = recording
        self.redact = redact if redact is not None else Redactor()
        self.chat = SimpleNamespace(completions=self)
        self.responses = _ReplayResponses(self)

    def with_options(self, **_: Any) -> ReplayClient:
        return self

    async def create(self, **kwargs: Any) -> Any:
        """chat.completions.create"""
        return self.serve("chat/completions", kwargs, _chat_completion)

    def serve(self, path: str, kwargs: dict[str, Any], model: Callable[[dict[str, Any]], Any]) -> Any:
        """The recorded answer to the request these create() arguments make: the body the SDK would send (the
        arguments without the request-only options, with extra_body merged in) keys it, as at recording."""
        body = {k: v for k, v in kwargs.items() if k not in _REQUEST_ONLY}
        body.update(kwargs.get("extra_body") or {})
        key = body_key("POST", path, body, self.redact)  # masked before hashing, as at recording (keys.py)
        index, entry = self.recording.next(key, path, body)
        status, payload = entry.get("status", 200), entry["response"]
        if status != 200:
            raise _status_error(status, payload, path)
        if not isinstance(payload, dict):  # a damaged line: served, the SDK would read it as an empty answer
            raise ReplayMiss(f"{CALL_CONTEXT.get()}: the response recorded in {self.recording.path.name} for this "
                             f"request is not a JSON object ({str(payload)[:60]!r}); re-record with --record")
        parsed = self.recording.parsed.get((key, index))
        if parsed is None:  # responses are only read, never changed: one parse serves every identical request
            parsed = self.recording.parsed[(key, index)] = model(payload)
        return parsed

    async def close(self) -> None:
        pass


class _ReplayResponses:
    """`client.responses` in replay mode."""

    def __init__(self, client: ReplayClient) -> None:
        self.client = client

    async def create(self, **kwargs: Any) -> Any:
        from openai.types.responses import Response

        return self.client.serve("responses", kwargs, lambda payload: Response.construct(**payload))


def _chat_completion(payload: dict[str, Any]) -> Any:
    """A recorded chat completion: of the plain shape, read from its JSON (no openai import); else, malformed
    above all, the SDK's unvalidated construct, as it always was (recorded_chat.py)."""
    if plain_chat_completion(payload):
        return RecordedChatCompletion(payload)
    from openai.types.chat import ChatCompletion

    return ChatCompletion.construct(**payload)
