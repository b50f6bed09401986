"""A real MCP server written with the official SDK, for the tests: stdio by default, streamable HTTP on
127.0.0.1 with --http PORT. Its tools cover what the harness must handle: plain answers, files in the
working folder (the episode's workspace), a tool error (isError), a huge result, a hang, a crash.

    python demo_server.py [--root DIR] [--http PORT] [--bad-schema] [--fail-start] [--marker TEXT]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def build(bad_schema: bool = False) -> MCPServer:
    server = MCPServer("evals-demo")

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return f"echo: {text}"

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="Write a note into the working folder.")
    def write_note(name: str, text: str) -> str:
        Path(name).write_text(text, encoding="utf-8")
        return f"wrote {name}"

    @server.tool(description="Read a note from the working folder.")
    def read_note(name: str) -> str:
        return Path(name).read_text(encoding="utf-8")

    @server.tool(description="Always fails with the given reason.")
    def fail(reason: str) -> str:
        raise ToolError(reason)

    @server.tool(description="Return a long text.")
    def big(size: int) -> str:
        return "x" * size

    @server.tool(description="Sleep, then answer.")
    def hang(seconds: float) -> str:
        time.sleep(seconds)
        return "woke up"

    @server.tool(description="Write a note file (outside any workspace), then never answer.")
    def block(note: str) -> str:
        Path(note).write_text("blocking", encoding="utf-8")
        time.sleep(3600)
        return "woke up"

    @server.tool(description="Exit the server process at once.")
    def crash() -> str:
        os._exit(3)

    @server.tool(description="Write `count` small files into the working folder.")
    def many_files(count: int) -> str:
        for i in range(count):
            Path(f"f{i:05d}.txt").write_text("x", encoding="utf-8")
        return f"wrote {count} files"

    @server.tool(description="The integers 0..count-1, as one list.")
    def numbers(count: int) -> list[int]:
        return list(range(count))

    @server.tool(description="Start a helper process that outlives this call (it sleeps), and answer.")
    def spawn_helper(marker: str) -> str:
        import subprocess

        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", marker],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        return f"helper {helper.pid}"

    @server.tool(description="The value of one of the server's environment variables.")
    def env_value(name: str) -> str:
        return os.environ.get(name, "")

    @server.tool(description="The server's process id and working folder.")
    def whoami() -> str:
        return f"{os.getpid()} {os.getcwd()}"

    if bad_schema:
        @server.tool(description="A tool whose schema is broken.")
        def broken(x: str) -> str:
            return x

        server._tool_manager._tools["broken"].parameters = {"type": "object", "properties": {"x": {"type": "strin"}}}
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root")
    parser.add_argument("--http", type=int)
    parser.add_argument("--bad-schema", action="store_true")
    parser.add_argument("--fail-start", action="store_true")
    parser.add_argument("--marker", help="ignored: lets a test find this process in the process table")
    parser.add_argument("--write-at-start", help="write this file (in --root) as the server starts, as a server "
                                                 "that builds its repository does")
    args = parser.parse_args()
    if args.fail_start:
        print("demo server: refusing to start (--fail-start)", file=sys.stderr)
        sys.exit(1)
    if args.root:
        os.chdir(args.root)
    if args.write_at_start:
        Path(args.write_at_start).write_text("made by the server at start", encoding="utf-8")
    server = build(args.bad_schema)
    if args.http:
        import uvicorn

        app = server.streamable_http_app()
        config = uvicorn.Config(app, host="127.0.0.1", port=args.http, log_level="warning")
        uvicorn.Server(config).run()
    else:
        server.run()


if __name__ == "__main__":
    main()
