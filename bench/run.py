"""Side-by-side benchmark: a bare asyncio loop over the openai client (the floor) against `evals run` on
an equivalent suite, both against the same loopback server, alternating, several repetitions. Prints
medians and the ratio evals/bare for wall time, CPU seconds per sample and peak RSS.

    python bench/run.py                 # every scenario (d takes a while: 1,000,000 samples)
    python bench/run.py --scenarios a,b,c --reps 3
    python bench/run.py --smoke         # tiny sizes, for the test suite
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SYSTEM = "You answer questions."


@dataclass
class Measure:
    wall_s: float
    cpu_s: float
    rss_mb: float
    code: int


def _bytecode_env() -> dict[str, str]:
    """The environment with compiled bytecode cached (in a folder of its own, the checkout stays clean), as an
    installed evals-cli has it: under PYTHONDONTWRITEBYTECODE every start would compile evals_cli's source
    afresh (the SDK in site-packages is compiled at install), a cost no user pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "evals-cli-bench-pycache"))
    return env


def measured(cmd: list[str], env: dict[str, str] | None = None) -> Measure:
    """Run a command; wall time, its CPU time (user + system) and peak RSS, from the kernel (wait4)."""
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**_bytecode_env(), "NO_COLOR": "1", **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:4])} ... exited {code}:\n{stderr[-2000:]}")
    return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code)


class Server:
    def __init__(self, latency_ms: float) -> None:
        self.proc = subprocess.Popen([sys.executable, str(HERE / "server.py"), "--latency-ms", str(latency_ms)],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/v1"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def write_suite(folder: Path, base_url: str, n: int, two_step: bool, same_input: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "data.jsonl").open("w") as fh:
        for i in range(n):
            text = "question same" if same_input else f"question {i}{' [tool]' if two_step else ''}"
            fh.write(json.dumps({"id": f"s{i}", "input": text, "ground_truth": "42"}) + "\n")
    suite = {
        "name": "bench", "dataset": "data.jsonl", "concurrency": 1,
        "target": {"kind": "openai_chat", "base_url": base_url, "model": "bench", "api_key": "bench",
                   "system_prompt": SYSTEM, "max_retries": 0, "tool_choice": "auto"},
        "tools": {"lookup": {"description": "Look a key up.", "parameters": {"key": "The key"},
                             "returns": {"value": 42}}},
        "graders": {"answer": {"kind": "tool", "function": "contains"}},
        "gate": {"value": 0.5},
    }
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def evals_cmd(suite: Path, out: Path, concurrency: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(out), "-c", str(concurrency), "-q",
            *extra]


def bare_cmd(url: str, n: int, concurrency: int, two_step: bool) -> list[str]:
    return [sys.executable, str(HERE / "bare.py"), "--base-url", url, "-n", str(n), "-c", str(concurrency),
            *(["--two-step"] if two_step else [])]


def med(values: list[float]) -> float:
    return statistics.median(values)


def row(name: str, n: int, bare: list[Measure], evals: list[Measure]) -> dict:
    b = (med([m.wall_s for m in bare]), med([m.cpu_s for m in bare]) / n, med([m.rss_mb for m in bare]))
    e = (med([m.wall_s for m in evals]), med([m.cpu_s for m in evals]) / n, med([m.rss_mb for m in evals]))
    return {"scenario": name, "n": n, "bare": b, "evals": e, "ratio": tuple(x / y for x, y in zip(e, b, strict=True))}


def side_by_side(name: str, url: str, tmp: Path, n: int, concurrency: int, reps: int, two_step: bool) -> dict:
    suite = write_suite(tmp / f"{name}-c{concurrency}", url, n, two_step)
    bare, evals = [], []
    measured(bare_cmd(url, 2, concurrency, two_step))  # untimed: bytecode compiled and cached, files in the page cache
    measured(evals_cmd(suite, tmp / f"warm-{name}-{concurrency}", concurrency, "-n", "2"))
    for rep in range(reps):
        bare.append(measured(bare_cmd(url, n, concurrency, two_step)))
        evals.append(measured(evals_cmd(suite, tmp / f"out-{name}-{concurrency}-{rep}", concurrency)))
    return row(f"{name} c={concurrency}", n, bare, evals)


def replay_scenario(tmp: Path, url: str, n: int, reps: int, label: str) -> dict:
    """Replay from a recording: no network. Every sample asks the same question, so one recorded exchange
    serves them all and the measurement is pure harness cost."""
    folder = tmp / f"replay-{label.split()[0]}-{n}"
    suite = write_suite(folder, url, n, two_step=False, same_input=True)
    recording = folder / "recording.jsonl"
    if not recording.exists():
        measured(evals_cmd(suite, folder / "record-out", 1, "-n", "1", "--record", str(recording)))
    runs = [measured(evals_cmd(suite, folder / f"out-{label.split()[-1]}-{rep}", 32, "--replay", str(recording)))
            for rep in range(reps)]
    out = folder / f"out-{label.split()[-1]}-0" / "results.jsonl"
    lines = sum(1 for _ in out.open()) if out.exists() else 0
    wall = med([m.wall_s for m in runs])
    return {"scenario": label, "n": n, "samples_per_s": n / wall, "wall_s": wall,
            "cpu_per_sample_ms": 1000 * med([m.cpu_s for m in runs]) / n, "rss_mb": med([m.rss_mb for m in runs]),
            "results_lines": lines}


def print_table(rows: list[dict], replays: list[dict]) -> None:
    print(f"\n{'scenario':<20}{'N':>8}  {'wall s bare/evals':>20}  {'ratio':>6}  {'CPU ms/sample bare/evals':>26}  "
          f"{'ratio':>6}  {'peak RSS MB bare/evals':>24}  {'ratio':>6}")
    for r in rows:
        b, e, q = r["bare"], r["evals"], r["ratio"]
        print(f"{r['scenario']:<20}{r['n']:>8}  {b[0]:>9.2f} / {e[0]:<8.2f}  {q[0]:>6.2f}  "
              f"{1000 * b[1]:>12.2f} / {1000 * e[1]:<11.2f}  {q[1]:>6.2f}  {b[2]:>11.1f} / {e[2]:<10.1f}  {q[2]:>6.2f}")
    for r in replays:
        print(f"{r['scenario']:<20}{r['n']:>8}  replay: {r['samples_per_s']:,.0f} samples/s, "
              f"{r['cpu_per_sample_ms']:.2f} ms CPU/sample, peak RSS {r['rss_mb']:.1f} MB, "
              f"{r['results_lines']:,} result lines")


def targets(rows: list[dict], replays: list[dict]) -> list[str]:
    """The issue's targets, each as measured, with PASS/MISS."""
    out = []
    for r in rows:
        if r["scenario"].startswith("a ") and r["scenario"].endswith("c=32"):
            out.append(f"wall time, scenario a, c=32: {r['ratio'][0]:.2f}x bare (target <= 1.10x) "
                       f"{'PASS' if r['ratio'][0] <= 1.10 else 'MISS'}")
        if r["scenario"].startswith("a "):
            out.append(f"CPU per sample, {r['scenario']}: {r['ratio'][1]:.2f}x bare (target <= 1.3x) "
                       f"{'PASS' if r['ratio'][1] <= 1.3 else 'MISS'}")
    for r in replays:
        if r["scenario"].startswith("c"):
            out.append(f"replay throughput, scenario c: {r['samples_per_s']:,.0f} samples/s (target >= 6,000) "
                       f"{'PASS' if r['samples_per_s'] >= 6000 else 'MISS'}; by CPU time "
                       f"{1000 / r['cpu_per_sample_ms']:,.0f} samples/s")
    rss = [r["rss_mb"] for r in replays]
    if replays:
        worst = max(rss + [x for r in rows for x in (r["evals"][2],)])
        out.append(f"peak RSS, any run: {worst:.1f} MB (target < 150 MB) {'PASS' if worst < 150 else 'MISS'}")
    ds = [r for r in replays if r["scenario"].startswith("d")]
    if len(ds) == 2:
        ratio = ds[1]["rss_mb"] / ds[0]["rss_mb"]
        out.append(f"peak RSS, {ds[1]['n']:,} vs {ds[0]['n']:,} samples: {ratio:.2f}x (target within 1.2x) "
                   f"{'PASS' if ratio <= 1.2 else 'MISS'}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default="a,b,c,d")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--replay-n", type=int, default=10_000)
    parser.add_argument("--big-n", type=int, default=1_000_000)
    parser.add_argument("--concurrencies", default="1,8,32", help="scenario a's concurrencies (comma-separated)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the harness, measures nothing")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.replay_n, args.big_n, args.reps, args.latency_ms = 6, 30, 60, 1, 5.0
    chosen = set(args.scenarios.split(","))
    load_before = os.getloadavg()  # a shared machine: the figures mean little without it
    rows: list[dict] = []
    replays: list[dict] = []
    server = Server(args.latency_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            if "a" in chosen:
                # a smoke run checks the harness, so one concurrency (the one the targets read) does
                for c in (32,) if args.smoke else [int(x) for x in args.concurrencies.split(",")]:
                    rows.append(side_by_side("a", server.url, tmp, args.n, c, args.reps, two_step=False))
            if "b" in chosen:
                rows.append(side_by_side("b 2-step", server.url, tmp, args.n, 32, args.reps, two_step=True))
            if "c" in chosen:
                replays.append(replay_scenario(tmp, server.url, args.replay_n, args.reps, "c replay"))
            if "d" in chosen:
                replays.append(replay_scenario(tmp, server.url, args.replay_n, 1, "d replay small"))
                replays.append(replay_scenario(tmp, server.url, args.big_n, 1, "d replay big"))
    finally:
        server.stop()
    print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (before: "
          f"{' '.join(f'{x:.2f}' for x in load_before)}); server latency {args.latency_ms:g} ms; medians of {args.reps} "
          "alternating runs")
    print_table(rows, replays)
    print()
    for line in targets(rows, replays):
        print(line)


if __name__ == "__main__":
    main()
