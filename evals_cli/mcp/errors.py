"""The two ways a server fails: the suite's fault before the run (a ConfigError, exit 2) or the server's during
it (`ToolServerFailed`, exit 3 with the finished samples kept)."""

from __future__ import annotations


class ToolServerFailed(Exception):
    """An MCP server crashed, hung past its timeout or broke the protocol while the run was going: no later call
    to it can be trusted, so the runner stops the run (exit 3) and keeps what finished. Never a tool error the
    agent sees: the agent did nothing wrong, and grading what followed would score the server, not the agent."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server '{server}': {message}")
        self.server = server
