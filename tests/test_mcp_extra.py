"""`mcp` is an optional extra (`pip install 'evals-cli[mcp]'`): no module imports it unless a run starts or reaches
MCP servers, such a run without it is exit 2 with the install command, and a replayed MCP suite needs none.
The missing package is simulated by a `None` in sys.modules (what `import mcp` then refuses), not by
uninstalling it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

DEMO = str(ROOT / "tests" / "mcp_servers" / "demo_server.py")
INSTALL = "pip install 'evals-cli[mcp]'"


@pytest.fixture
def no_mcp(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process without the mcp package: every `import mcp` (and mcp.*) fails as if it were not installed."""
    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)


def _suite(tmp_path: Path, server: ScriptedServer) -> Path:
    return write_suite(tmp_path, [{"id": "r", "input": "hi", "ground_truth": "echo: hi"}], base_url=server.url,
                       tools={}, mcp_servers={"demo": {"command": sys.executable, "args": [DEMO]}},
                       graders={"answer": {"kind": "tool", "function": "contains"}})


def test_mcp_is_an_extra_not_a_dependency_and_the_dev_install_keeps_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(dep.startswith("mcp") for dep in project["dependencies"])
    assert project["optional-dependencies"]["mcp"] == ["mcp>=2.3,<3"]
    assert any(dep.startswith("mcp>=") for dep in project["optional-dependencies"]["dev"])
    locked = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    assert "\nmcp==" not in locked and "\nstarlette==" not in locked  # what `make demo` installs, as a user would
    assert "\nmcp==" in (ROOT / "requirements-dev.lock").read_text(encoding="utf-8")  # tests and CI


def test_no_module_imports_mcp_when_it_is_imported() -> None:
    code = ("import importlib, pkgutil, sys\n"
            "sys.modules['mcp'] = None\n"
            "import evals_cli\n"
            "for info in pkgutil.walk_packages(evals_cli.__path__, 'evals_cli.'):\n"
            "    importlib.import_module(info.name)\n"
            "print('imported', len(sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("imported"), done.stderr


def test_a_suite_with_mcp_servers_without_the_package_is_exit_2_with_the_install_command(
        no_mcp: None, tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script({"hi": [call("echo", {"text": "hi"}), text("echo: hi")]})
    suite = _suite(tmp_path, server)
    for args in (("run", str(suite), "-o", str(tmp_path / "out")), ("list", "tools", str(suite))):
        result = run_cli(*args)
        said = result.stdout + result.stderr
        assert result.returncode == 2, said
        assert "mcp package" in said and INSTALL in said and "Traceback" not in said, said
    assert server.requests == []  # refused before any model call
    checked = run_cli("validate", str(suite))  # validate starts no server: a note, not a problem
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert INSTALL in checked.stderr and "--replay" in checked.stderr


def test_the_shipped_mcp_suite_replays_without_the_package(no_mcp: None, tmp_path: Path) -> None:
    """make eval-mcp on the default install (requirements.lock, no mcp): the recording answers every call."""
    out = tmp_path / "out"
    result = run_cli("run", "suites/mcp_time.yaml", "--replay", "suites/mcp_time.recording.jsonl", "-o", str(out))
    assert result.returncode == 1, result.stdout + result.stderr  # the gate fails, as with the package
    lines = read_jsonl(out / "results.jsonl")
    assert len(lines) == 4 and all(line["error"] is None for line in lines)  # every call answered, none errored
    assert "mcp" not in sys.modules or sys.modules["mcp"] is None
