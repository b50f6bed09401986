"""One TLS context per process for every model client, instead of one per client.

httpx builds a fresh `ssl.SSLContext` for each transport and loads the whole CA bundle into it: some 25 ms of
CPU each, paid at the start of every run for each endpoint (agent, judge, user simulator, each `--model`) and by
every recording transport, although the contexts are identical. The one context is what httpx itself would
build (`create_ssl_context`, which reads SSL_CERT_FILE and SSL_CERT_DIR); a change of those variables gets a
context of its own, so the certificates trusted are still the ones the environment names at the call."""

from __future__ import annotations

import functools
import ssl
from typing import Any


def shared_context() -> Any:
    """The verifying TLS context httpx would make now (an `ssl.SSLContext`), made once per CA setting: the CA
    file and folder as the standard library resolves them (SSL_CERT_FILE and SSL_CERT_DIR, else OpenSSL's own)."""
    paths = ssl.get_default_verify_paths()
    return _context(paths.cafile, paths.capath)


@functools.cache
def _context(cafile: str | None, capath: str | None) -> Any:
    """Keyed by the CA setting only; httpx reads the variables again itself when it builds the context."""
    from evals_cli.endpoints.httpx_compat import httpx

    return httpx.create_ssl_context(verify=True, trust_env=True)
