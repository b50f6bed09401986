"""The recording format's keys, which recording, replay and the cache must compute alike: a line's format
version, the API path of a URL and the key of a request. Apart from the transport that writes recordings, so
that the readers of a recording (replay.py, cache.py) need only these.

A request is keyed by a hash of its API path and the canonical JSON of its body with the run's known secrets
(keys, URL credentials, header values) and the values under secret-looking keys masked. Replay masks the body it
would send the same way before hashing, so a recording made with one key replays with another key or none (CI
without secrets). Credential-looking text the run does not know as its own (a prompt quoting a Bearer token) is
masked where it is stored but not in the key, so two prompts that differ only there keep two keys. The cost: a
request whose text quotes the API key itself only matches when replay knows that key."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals_cli.endpoints.secrets import Redactor

RECORDING_VERSION = 1
"""The format of a recording line; a line without one is version 1 (recordings made before it was written)."""


def api_path(path: str) -> str:
    """The part of a URL path that names the API call, whatever the server's prefix."""
    parts = [p for p in path.split("/") if p]
    if "v1" in parts:
        parts = parts[parts.index("v1") + 1:]
    return "/".join(parts)


def body_key(method: str, path: str, body: Any, redact: Redactor | None = None) -> str:
    """The recording key of a request: method, API path and the canonical JSON of its body, with the run's known
    secrets and the values under secret-looking keys masked first when `redact` is given (see the module
    docstring). The pattern layer is left out of the key: masked, two prompts quoting different tokens shared a
    key, and a cache served one sample the other's answer."""
    if redact is not None and not isinstance(body, str) and redact.has_secret_values(body):
        body = redact.value(body, patterns=False)  # rare: most requests hold no value under a secret-looking key
    canonical = body if isinstance(body, str) else json.dumps(body, sort_keys=True, separators=(",", ":"))
    if redact is not None:  # the run's known secrets, on the text in one pass (cheap)
        canonical = redact.known(canonical)
    return hashlib.sha256(f"{method} {path}\n{canonical}".encode()).hexdigest()


def request_body(request: Any) -> Any:
    """The request body as JSON, or as text when it is not JSON."""
    raw = request.content or b""
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
