from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.scripted_server import ScriptedServer

if TYPE_CHECKING:
    from tests.test_html_browser import Browser

ROOT = Path(__file__).resolve().parent.parent


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
