"""Whether the `mcp` SDK is installed: it is an optional extra (`pip install 'evals-cli[mcp]'`), needed only to
start or reach a suite's MCP servers. A replayed run (`--replay`) answers from its recording and needs none.

Asked without importing the SDK (`find_spec`): `evals validate` and a replayed run stay free of its import cost.
"""

from __future__ import annotations

import importlib.util

from evals_cli.errors import ConfigError

INSTALL = "pip install 'evals-cli[mcp]'"


def installed() -> bool:
    """The `mcp` package can be imported (a `None` in sys.modules, as a test leaves it, counts as missing)."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # a broken install: as good as none
        return False


def missing_note() -> str:
    return (f"mcp_servers: the mcp package is not installed; a run that starts or reaches these servers needs it: "
            f"{INSTALL} (a run with --replay answers from its recording and does not)")


def require() -> None:
    """ConfigError (exit 2) with the install command when the SDK is missing; before any server is started."""
    if not installed():
        raise ConfigError(f"mcp_servers: the suite names MCP servers, but the mcp package (an optional extra) is "
                          f"not installed; install it with: {INSTALL}")
