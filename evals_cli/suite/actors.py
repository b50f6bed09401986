"""Names the agent and the simulated user must not share (dual control): one name would be two tools, or two MCP
servers, over one world (whose call is whose in the trajectory, which one a gold action applies, which server a
recording or a message means). Checked at the user's line by the loader, and again on a suite built in Python
(`SuiteSpec.cross_check`), which no loader saw."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Loc = tuple[str, ...]


def shared_names(tools: Any, user_tools: Any, servers: Any, user_servers: Any) -> list[tuple[Loc, str]]:
    """Each user tool named like an agent tool and each user MCP server named like an agent server, at the user's
    entry (mappings of name to spec; anything else has nothing to compare)."""
    out: list[tuple[Loc, str]] = []
    if isinstance(user_tools, Mapping) and isinstance(tools, Mapping):
        out += [(("user_tools", name), f"user_tools.{name} has the name of the agent's tool tools.{name}; a user "
                                       "tool and an agent tool must have different names: rename one of them")
                for name in user_tools if name in tools]
    if isinstance(user_servers, Mapping) and isinstance(servers, Mapping):
        out += [(("user_mcp_servers", name), f"user_mcp_servers.{name} has the name of the agent's server "
                                             f"mcp_servers.{name}; a user server and an agent server must have "
                                             "different names: rename one of them")
                for name in user_servers if name in servers]
    return out
