"""Start-up stays light: `evals --help` and `evals validate` import neither the openai SDK nor the HTTP
stack nor rich.live (checked in a fresh interpreter), and the benchmark harness still runs (smoke, marked slow)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT

HEAVY = ("openai", "httpx", "httpx2", "rich.live")


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_help_imports_nothing_heavy() -> None:
    modules = loaded_after("import sys\nsys.argv = ['evals', '--help']\nfrom evals_cli.cli import app\n"
                           "try:\n    app()\nexcept SystemExit:\n    pass")
    assert "evals_cli.cli" in modules
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m == "rich.live"]
    assert "pydantic_settings" not in modules  # the settings model is imported where a knob is read


def test_a_command_with_no_evals_variable_set_does_not_build_the_settings_model() -> None:
    modules = loaded_after("import os\nfor k in [k for k in os.environ if k.startswith('EVALS_')]:\n"
                           "    del os.environ[k]\nimport sys\nsys.argv = ['evals', 'list', 'gates']\n"
                           "from evals_cli.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass")
    assert "evals_cli.catalog" in modules and "pydantic_settings" not in modules


def test_validate_imports_nothing_heavy() -> None:
    modules = loaded_after("from pathlib import Path\nfrom evals_cli.runner.validate import validate_suite\n"
                           "assert not validate_suite(Path('suites/multi_turn.yaml')).problems")
    assert "evals_cli.runner.validate" in modules and "jinja2" in modules
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m == "rich.live"]


@pytest.mark.slow  # half a dozen interpreters, one after the other: `make test-slow` runs it
def test_benchmark_harness_smoke() -> None:
    result = subprocess.run([sys.executable, "bench/run.py", "--smoke", "--scenarios", "a,c"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "a c=32" in result.stdout and "replay:" in result.stdout
    assert "wall time, scenario a, c=32" in result.stdout and "replay throughput" in result.stdout
