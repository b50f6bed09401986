"""One TLS context per process for every model client, instead of one per client.

httpx builds a fresh `ssl.SSLContext` for each transport and loads the whole CA bundle into it: some 25 ms of
CPU each, paid at the start of every run for each endpoint (agent, judge, user simulator, each `--model`) and by
every recording transport, although the contexts are identical. The one context is what httpx itself would
build (`create_ssl_context`, which reads SSL_CERT_FILE and SSL_CERT_DIR); a change of those variables gets a
context of its own, so the certificates trusted are still the ones the environment names at the call."""

from __future__ import annotations

import functools
import os
from typing import Any


def shared_context() -> Any:
    """The verifying TLS context httpx would make now (an `ssl.SSLContext`), made once per CA setting."""
    return _context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _context(cert_file: str | None, cert_dir: str | None) -> Any:
    """Keyed by the variables httpx reads, which it reads itself from the environment."""
    from evals_cli.endpoints.httpx_compat import httpx

    return httpx.create_ssl_context(verify=True, trust_env=True)
