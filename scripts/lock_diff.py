"""Print how the packages installed in this Python differ from a lock file.

`make test-latest` runs it inside the newest-versions virtualenv, so the line that names a package whose new
release broke a test is printed before the tests run. Exit 0 whatever differs: the tests that follow decide.

    python scripts/lock_diff.py requirements-dev.lock
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)(?:\s*;\s*([^\\]+?))?\s*\\?$")


def normalise(name: str) -> str:
    """PEP 503's normal form: `PyYAML`, `pyyaml` and `py_yaml` are one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _applies(marker: str | None) -> bool:
    """Whether a pin's environment marker (`sys_platform == 'win32'`) holds for this Python; a pin for another
    platform is not a difference."""
    if not marker:
        return True
    from packaging.markers import Marker  # a dev dependency (pytest's), present where this script runs

    return Marker(marker).evaluate()


def locked_versions(text: str, *, here_only: bool = False) -> dict[str, str]:
    """`name==version` lines of a pip/uv lock file (hash and comment lines skipped); with `here_only`, only the
    pins whose marker holds on this platform."""
    pins: dict[str, str] = {}
    for line in text.splitlines():
        found = _PIN.match(line.strip())
        if found and (not here_only or _applies(found.group(3))):
            pins[normalise(found.group(1))] = found.group(2)
    return pins


def installed_versions() -> dict[str, str]:
    return {normalise(dist.metadata["Name"]): dist.version for dist in metadata.distributions()
            if dist.metadata["Name"]}


_NOT_LOCKED = {"evals-cli", "pip"}  # the project itself, and the installer


def differences(locked: dict[str, str], installed: dict[str, str]) -> list[str]:
    """One line per locked package installed at another version or not at all, and per installed package the
    lock does not name (a new dependency of a dependency)."""
    lines = []
    for name in sorted(locked):
        now = installed.get(name)
        if now is None:
            lines.append(f"  {name} {locked[name]} (lock) -> not installed (no longer needed)")
        elif now != locked[name]:
            lines.append(f"  {name} {locked[name]} (lock) -> {now}")
    for name in sorted(set(installed) - set(locked) - _NOT_LOCKED):
        lines.append(f"  {name} not in the lock -> {installed[name]}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: lock_diff.py LOCKFILE", file=sys.stderr)
        return 2
    lock = Path(argv[0])
    locked = locked_versions(lock.read_text(encoding="utf-8"), here_only=True)
    found = differences(locked, installed_versions())
    if found:
        print(f"{len(found)} of {len(locked)} packages differ from {lock.name}:")
        print("\n".join(found))
    else:
        print(f"the newest versions allowed are the locked ones ({len(locked)} packages in {lock.name})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
