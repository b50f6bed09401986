"""The lock files decide what `make` installs: they must pin, with hashes, every package pyproject.toml asks
for, at a version its range admits, or a fresh machine installs something else than CI tested."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from scripts.lock_diff import differences, locked_versions, normalise

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _requirements(extra: str | None) -> list[Requirement]:
    names = PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]
    return [Requirement(text) for text in names]


@pytest.mark.parametrize(("lock", "extras"), [("requirements.lock", [None]), ("requirements-dev.lock", [None, "dev"])])
def test_the_lock_pins_every_dependency_within_its_range(lock: str, extras: list[str | None]) -> None:
    pins = locked_versions((ROOT / lock).read_text(encoding="utf-8"))
    for extra in extras:
        for requirement in _requirements(extra):
            name = normalise(requirement.name)
            assert name in pins, f"{lock} does not pin {requirement} (run `make lock`)"
            assert requirement.specifier.contains(pins[name], prereleases=True), (
                f"{lock} pins {name}=={pins[name]}, outside pyproject.toml's {requirement} (run `make lock`)")
    assert "setuptools" in pins, "evals-cli is built with --no-build-isolation: the lock must pin setuptools"


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-dev.lock"])
def test_every_pin_has_a_hash(lock: str) -> None:
    """pip's --require-hashes refuses a lock with an unhashed pin; this says which one before CI does."""
    blocks = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / lock).read_text(encoding="utf-8"))
    for block in blocks:
        if "==" in block.split("\n", 1)[0]:
            assert "--hash=sha256:" in block, block.split("\n", 1)[0]


def test_lock_diff_leaves_out_pins_for_other_platforms() -> None:
    lock = "colorama==0.4.6 ; sys_platform == 'nowhere' \\\n    --hash=sha256:ab\nrich==15.0.0 ; python_version >= '3.8'\n"
    assert locked_versions(lock) == {"colorama": "0.4.6", "rich": "15.0.0"}
    assert locked_versions(lock, here_only=True) == {"rich": "15.0.0"}


def test_lock_diff_names_changed_missing_and_new_packages() -> None:
    lock = "pyyaml==6.0.2 \\\n    --hash=sha256:ab\nrich==15.0.0\ncolorama==0.4.6 ; sys_platform == 'win32'\n"
    locked = locked_versions(lock)
    assert locked == {"pyyaml": "6.0.2", "rich": "15.0.0", "colorama": "0.4.6"}
    lines = differences(locked, {"pyyaml": "6.0.4", "rich": "15.0.0", "new-dep": "1.0", "evals-cli": "0.1.0"})
    assert lines == ["  colorama 0.4.6 (lock) -> not installed (no longer needed)",
                     "  pyyaml 6.0.2 (lock) -> 6.0.4",
                     "  new-dep not in the lock -> 1.0"]


def test_the_makefile_installs_from_the_locks() -> None:
    """No install recipe may resolve versions itself (a plain `pip install -e .` takes the newest of all)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipes = makefile.split("\ntest-latest:")[0]  # the canary alone installs the newest versions, on purpose
    installs = [line.strip() for line in recipes.splitlines() if "pip install" in line and "uv==" not in line]
    assert installs, "no install recipe found"
    for line in installs:
        assert "--require-hashes" in line or "--no-deps" in line, line
