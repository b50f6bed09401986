"""MCP servers as a tool source: the agent is offered the tools a real server lists, and (mode: live) its calls
go to that server, in a folder of its own per (sample, repeat) when the server asks for `{workspace}`.

Self-contained on purpose: the toolbox (evals_cli/tools/mock.py) sees only `ToolSpec`s marked as served and a
`ToolServers` to await calls on (the hub's `McpSession` of each (sample, repeat)); the runner sees one `McpHub`
to open before the run and close after it. The `mcp` SDK is imported only here, and only when a suite names
servers, so `evals --help` never pays for it; it is an optional extra (`pip install 'evals-cli[mcp]'`), whose
absence is exit 2 with that command (mcp/sdk.py).
"""
