"""Side-by-side benchmark: what binding a command agent's connections to its episode costs the OTLP receiver
(evals_cli/traces/peers.py). One episode process posts REQUESTS small OTLP/JSON export requests in turn (each its
own connection: the receiver answers HTTP/1.0), to a receiver that binds (the kernel asked who sent each one)
and to one that does not (the baseline), while OTHERS other episodes stay open (idle process trees of DEPTH
processes each, so the lookup has trees to search). Prints the median time per request of each, their ratio, and
the lookup alone: warm (the episode's sender seen before) and cold (the first request of an episode: every
process below the roots).

The target: the binding adds at most 1 ms per request warm (an exporter sends a batch every 200 ms at most).

    python bench/telemetry_binding.py
    python bench/telemetry_binding.py --requests 500 --others 15 --reps 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evals_cli.traces import peers  # noqa: E402  (bench/ is a folder of scripts, not a package)
from evals_cli.traces.receiver import OtlpReceiver  # noqa: E402
from tests.agents.span_agent import export_request  # noqa: E402

TARGET_ADDED_MS = 1.0

POSTER = """
import sys, time, urllib.request
url, count, body = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
times = []
for _ in range(count):
    start = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, body, {"Content-Type": "application/json"})) as r:
        r.read()
    times.append(time.perf_counter() - start)
print(" ".join(f"{t:.6f}" for t in times))
"""

IDLE = "import subprocess, sys; depth = int(sys.argv[1]); " \
       "subprocess.run([sys.executable, '-c', sys.argv[2], str(depth - 1), sys.argv[2]]) if depth > 1 else " \
       "sys.stdin.read()"


def idle_trees(count: int, depth: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", IDLE, str(depth), IDLE], stdin=subprocess.PIPE)
            for _ in range(count)]


def per_request(bind: bool, requests: int, others: list[subprocess.Popen[bytes]]) -> list[float]:
    """Seconds per request, as the posting process saw them."""
    receiver = OtlpReceiver(bind=bind).start()
    try:
        for n, tree in enumerate(others):
            receiver.expect(f"other-{n}")
            receiver.started(f"other-{n}", tree.pid)
        body = export_request("bench", 1, 256).decode()
        receiver.expect("bench")
        poster = subprocess.Popen([sys.executable, "-c", POSTER, f"{receiver.endpoint}/v1/traces", str(requests), body],
                                  stdout=subprocess.PIPE, text=True)
        receiver.started("bench", poster.pid)
        out, _ = poster.communicate(timeout=600)
        receiver.ended("bench")
        if poster.returncode:
            raise SystemExit(f"the poster failed ({poster.returncode})")
        assert len(receiver.requests_for("bench")) == requests
        return [float(t) for t in out.split()]
    finally:
        receiver.stop()


def lookups(others: list[subprocess.Popen[bytes]], reps: int) -> tuple[float, float]:
    """Milliseconds per lookup of a connection held by the last idle tree's deepest process: warm, cold."""
    import socket

    server = socket.create_server(("127.0.0.1", 0))
    holder = subprocess.Popen([sys.executable, "-c", "import socket, sys; s = socket.create_connection(('127.0.0.1', "
                               f"{server.getsockname()[1]})); print(s.getsockname()[1], flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        port = int(holder.stdout.readline())
        link = f"socket:[{peers.client_inode(('127.0.0.1', port), server.getsockname())}]"
        cold: list[float] = []
        warm: list[float] = []
        for _ in range(reps):
            roots = peers.EpisodeRoots()
            for n, tree in enumerate(others):
                roots.started(f"other-{n}", tree.pid)
            roots.started("holder", holder.pid)
            for sample in (cold, warm):
                start = time.perf_counter()
                inode = peers.client_inode(("127.0.0.1", port), server.getsockname())
                assert roots.owner(f"socket:[{inode}]") == "holder" and link == f"socket:[{inode}]"
                sample.append((time.perf_counter() - start) * 1000)
        return statistics.median(warm), statistics.median(cold)
    finally:
        holder.kill()
        holder.wait()
        server.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--others", type=int, default=7, help="other open episodes (idle process trees)")
    parser.add_argument("--depth", type=int, default=3, help="processes per idle tree")
    parser.add_argument("--reps", type=int, default=3, help="alternating repetitions of each receiver")
    args = parser.parse_args()
    if not peers.available():
        print("no /proc here: the receiver cannot bind connections to episodes (nothing to measure)")
        return 0
    others = idle_trees(args.others, args.depth)
    try:
        time.sleep(0.5 + 0.1 * args.others)  # the idle trees finish starting (a bench, not a test)
        runs: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.reps):
            for bind in (False, True):
                runs[bind] += per_request(bind, args.requests, others)
        warm, cold = lookups(others, max(args.reps * 10, 10))
    finally:
        for tree in others:
            tree.kill()
            tree.wait()
    base, bound = (statistics.median(runs[b]) * 1000 for b in (False, True))
    print(f"{args.requests} requests x {args.reps}, {args.others} other episodes of {args.depth} processes, "
          f"{len(list(Path('/proc').glob('[0-9]*')))} processes on the machine")
    print(f"  per request   unbound {base:7.3f} ms   bound {bound:7.3f} ms   ratio {bound / base:5.2f}   "
          f"added {bound - base:6.3f} ms (target <= {TARGET_ADDED_MS:g} ms)")
    print(f"  lookup alone  warm {warm:7.3f} ms   cold {cold:7.3f} ms")
    return 0 if bound - base <= TARGET_ADDED_MS else 1


if __name__ == "__main__":
    sys.exit(main())
