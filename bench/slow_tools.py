"""Side-by-side benchmark: what a slow tool adds to a run. 32 samples, each making one call to a tool, at
`--concurrency 16`, against the loopback chat server (bench/server.py), with the tool answering at once
(the baseline) and after 0.5 s: once as a tool with logic (`python: tools.py:lookup`, `time.sleep`), once as a
stdio MCP server's tool (the SDK's MCPServer, formerly FastMCP, `await asyncio.sleep`). Prints the medians side
by side and how many seconds the slow tool adds.

When every tool call is awaited (the run's loop goes on while one sample waits on its tool), 32 calls of 0.5 s at
concurrency 16 add about two rounds of 0.5 s: the target is at most 2 s added. A run that waits on each tool call
in turn adds 32 x 0.5 = 16 s.

    python bench/slow_tools.py                     # both kinds, 3 alternating repetitions
    python bench/slow_tools.py --kinds python --reps 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Server, evals_cmd, measured  # noqa: E402  (bench/ is a folder of scripts, not a package)

TARGET_ADDED_S = 2.0

PYTHON_TOOL = '''import time

DELAY = {delay}


def lookup(arguments, world):
    if DELAY:
        time.sleep(DELAY)
    return {{"value": 42}}
'''

MCP_SERVER = '''import asyncio
import sys

from mcp.server.mcpserver import MCPServer

DELAY = float(sys.argv[1])
server = MCPServer("bench-slow")


@server.tool(description="Look a key up.")
async def lookup(key: str) -> str:
    if DELAY:
        await asyncio.sleep(DELAY)
    return '{{"value": 42}}'


server.run()
'''


def write_suite(folder: Path, base_url: str, kind: str, delay: float, n: int) -> Path:
    """A suite whose every sample makes one `lookup` call (the chat server answers "[tool]" rows with one)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "data.jsonl").open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"s{i}", "input": f"question {i} [tool]", "ground_truth": "42"}) + "\n")
    suite: dict = {
        "name": f"bench-{kind}", "dataset": "data.jsonl",
        "target": {"kind": "openai_chat", "base_url": base_url, "model": "bench", "api_key": "bench",
                   "max_retries": 0},
        "graders": {"answer": {"kind": "tool", "function": "contains"}},
        "gate": {"value": 0.5},
    }
    if kind == "python":
        (folder / "tools.py").write_text(PYTHON_TOOL.format(delay=delay))
        suite["tools"] = {"lookup": {"description": "Look a key up.", "parameters": {"key": "The key"},
                                     "python": "tools.py:lookup"}}
    else:
        (folder / "server.py").write_text(MCP_SERVER.format())
        suite["tools"] = {}
        suite["mcp_servers"] = {"slow": {"command": sys.executable, "args": [str(folder / "server.py"), str(delay)]}}
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def compare(kind: str, url: str, tmp: Path, n: int, concurrency: int, reps: int, delay: float) -> dict:
    """Median wall seconds of the instant-tool and the slow-tool run, alternating."""
    instant = write_suite(tmp / f"{kind}-instant", url, kind, 0.0, n)
    slow = write_suite(tmp / f"{kind}-slow", url, kind, delay, n)
    measured(evals_cmd(instant, tmp / f"warm-{kind}", concurrency, "-n", "2"))  # bytecode and page cache
    walls: dict[str, list[float]] = {"instant": [], "slow": []}
    for rep in range(reps):
        for name, suite in (("instant", instant), ("slow", slow)):
            walls[name].append(measured(evals_cmd(suite, tmp / f"out-{kind}-{name}-{rep}", concurrency)).wall_s)
    base, with_slow = statistics.median(walls["instant"]), statistics.median(walls["slow"])
    return {"kind": kind, "instant": base, "slow": with_slow, "added": with_slow - base}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", default="python,mcp")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("-n", type=int, default=32)
    parser.add_argument("-c", "--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=0.5, help="seconds the slow tool takes")
    parser.add_argument("--latency-ms", type=float, default=5.0, help="the chat server's latency")
    args = parser.parse_args()
    load_before = os.getloadavg()
    server = Server(args.latency_ms)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            for kind in args.kinds.split(","):
                rows.append(compare(kind, server.url, Path(tmp_name), args.n, args.concurrency, args.reps,
                                    args.delay))
    finally:
        server.stop()
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (before: "
          f"{' '.join(f'{x:.2f}' for x in load_before)}); {args.n} samples, one {args.delay:g} s tool call each, "
          f"-c {args.concurrency}; medians of {args.reps} alternating runs")
    print(f"\n{'tool':<10}{'wall s instant/slow':>22}  {'ratio':>6}  {'added s':>8}")
    for r in rows:
        print(f"{r['kind']:<10}{r['instant']:>10.2f} / {r['slow']:<9.2f}  {r['slow'] / r['instant']:>6.2f}  "
              f"{r['added']:>8.2f}")
    print()
    for r in rows:
        verdict = "PASS" if r["added"] <= TARGET_ADDED_S else "MISS"
        print(f"slow {r['kind']} tool adds {r['added']:.2f} s (target <= {TARGET_ADDED_S:g} s) {verdict}")


if __name__ == "__main__":
    main()
