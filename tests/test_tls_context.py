"""Model clients share one verifying TLS context per CA setting (evals_cli/endpoints/tls.py): each client built
its own, loading the whole CA bundle again (some 25 ms of CPU per endpoint, at every run's start)."""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
from pathlib import Path

import pytest

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.endpoints.tls import shared_context


def _ca_file() -> str:
    """A CA bundle of this machine, as the environment or OpenSSL names it."""
    candidates = [os.environ.get("SSL_CERT_FILE"), ssl.get_default_verify_paths().openssl_cafile,
                  "/etc/ssl/certs/ca-certificates.crt"]
    found = next((c for c in candidates if c and os.path.isfile(c)), None)
    if found is None:
        pytest.skip("no CA bundle on this machine")
    return found


def test_one_context_serves_every_client_and_it_verifies() -> None:
    context = shared_context()
    assert shared_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname  # the TLS check is kept
    assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded


def test_a_changed_ca_setting_gets_a_context_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original, bundle = _ca_file(), tmp_path / "ca.pem"
    shutil.copyfile(original, bundle)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    context = shared_context()
    assert context is shared_context() and context.cert_store_stats()["x509_ca"] > 0
    monkeypatch.setenv("SSL_CERT_FILE", original)
    assert shared_context() is not context


def test_clients_of_different_endpoints_are_built_on_the_shared_context(monkeypatch: pytest.MonkeyPatch) -> None:
    import evals_cli.endpoints.tls as tls

    real = tls.shared_context
    handed: list[object] = []
    monkeypatch.setattr(tls, "shared_context", lambda: handed.append(real()) or handed[-1])
    pool = ClientPool(concurrency=2)
    try:
        for url in ("http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"):
            pool.client(Endpoint(role="agent", base_url=url, api_key="sk-test", model="m", timeout=5, max_retries=0))
    finally:
        asyncio.run(pool.aclose())
    assert len(handed) >= 2 and all(context is real() for context in handed)
