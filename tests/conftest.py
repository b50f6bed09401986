from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.scripted_server import ScriptedServer

if TYPE_CHECKING:
    from tests.test_html_browser import Browser

ROOT = Path(__file__).resolve().parent.parent


def _cache_bytecode() -> None:
    """Compiled bytecode is cached for this test run and the `evals` processes it starts, even where
    PYTHONDONTWRITEBYTECODE is set: without it every worker compiled every test module again (pytest rewrites
    their asserts: some 6 CPU-seconds per worker) and every `evals` subprocess compiled evals_cli's source (a
    third of a short command's start). As bench/run.py does, the cache is a folder of its own under the
    temporary directory (PYTHONPYCACHEPREFIX; a prefix already set is kept), so the checkout stays clean."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str(Path(tempfile.gettempdir()) / "evals-cli-test-pycache")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


_cache_bytecode()


def pytest_configure(config: pytest.Config) -> None:
    """No installed plug-in loads in the tests (EVALS_PLUGINS empty; the subprocesses they start inherit it):
    a package installed beside evals-cli cannot change their results. The plug-in tests name theirs."""
    os.environ["EVALS_PLUGINS"] = ""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer().start()
    yield srv
    srv.stop()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's endpoints or keys."""
    for name in list(os.environ):
        if name.startswith(("EVAL_AGENT_", "EVAL_JUDGE_", "EVAL_USER_", "OPENAI_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "160")  # plain output's width; pytest-xdist workers would otherwise say 80


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """A headless Debian chromium per test module (the browser tests are `slow` and skip without it)."""
    from tests.test_html_browser import Browser

    chrome = Browser(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chrome
    finally:
        chrome.close()
