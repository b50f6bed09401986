"""Side-by-side benchmark of the sandbox kinds: one suite of 32 episodes at -c 8 (a setup command and a command
agent that writes a file, per episode), run with `sandbox: {kind: none}` (the baseline), `bwrap` and `docker`
(podman), alternating, several repetitions. Prints the median wall time of each, its ratio to the baseline, and
the time each kind adds per episode ((wall - baseline wall) / episodes) against its target: bwrap at most 30 ms,
podman at most 500 ms.

    python bench/sandboxes.py                  # 32 episodes, -c 8, 3 repetitions
    python bench/sandboxes.py --reps 5 --episodes 64
    python bench/sandboxes.py --smoke          # 4 episodes, 1 repetition: the harness works

The podman run uses the test image made from this machine's own programs (tests/sandbox_image.py) and the
engine arguments this machine's podman needs (runc, explicit ulimits). A kind whose program is missing is
skipped and said so.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.run import Measure, measured  # noqa: E402

AGENT = (ROOT / "tests" / "agents" / "sandbox_agent.py").read_text(encoding="utf-8")
TARGETS_MS = {"bwrap": 30.0, "docker": 500.0}
ENGINE_ARGS = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def write_suite(folder: Path, kind: str, episodes: int, concurrency: int, image: str | None) -> Path:
    """The same suite for every kind; only `sandbox:` differs (the agent file sits beside the suite for kind none,
    whose agent runs in the suite's folder, and in each workspace for the others). The agent runs under the
    system's python3 in every kind, so the kinds differ by their sandbox alone."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text(AGENT, encoding="utf-8")
    rows = [{"id": f"e{i}", "input": f"write out{i}.txt done", "ground_truth": "wrote"} for i in range(episodes)]
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    sandbox: dict[str, Any] = {"kind": kind}
    if kind == "docker":
        sandbox.update(engine="podman", image=image, engine_args=ENGINE_ARGS)
    suite = {"name": f"bench-{kind}", "dataset": "rows.jsonl", "concurrency": concurrency, "sandbox": sandbox,
             "environment": {"files": {"agent.py": AGENT, "input.txt": "x"},
                             "setup": {"commands": [["sh", "-c", "echo ready > setup.txt"]]}},
             "target": {"kind": "command", "command": ["/usr/bin/python3", "agent.py"], "telemetry": False},
             "graders": {"answer": {"kind": "match", "function": "contains", "extractor": "last_assistant"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def kinds_here() -> tuple[list[str], str | None, list[str]]:
    """The kinds this machine can run, the podman test image, and what was skipped and why."""
    kinds, skipped, image = ["none"], [], None
    if shutil.which("bwrap"):
        kinds.append("bwrap")
    else:
        skipped.append("bwrap: bubblewrap is not installed")
    if shutil.which("podman"):
        from tests.sandbox_image import test_image

        image = test_image("podman")
        kinds.append("docker")
    else:
        skipped.append("docker: podman is not installed")
    return kinds, image, skipped


def run_kind(suite: Path, out: Path) -> Measure:
    result = measured([sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(out)])
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    errors = [r["error"]["message"] for r in lines if r.get("error")]
    if errors or result.code != 0:
        raise SystemExit(f"{suite}: {len(errors)} errored episodes (exit {result.code}): {errors[:1]}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--concurrency", "-c", type=int, default=8)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    episodes, reps = (4, 1) if args.smoke else (args.episodes, args.reps)
    kinds, image, skipped = kinds_here()
    walls: dict[str, list[float]] = {kind: [] for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="evals-bench-sandbox-") as tmp:
        suites = {kind: write_suite(Path(tmp) / kind, kind, episodes, args.concurrency, image) for kind in kinds}
        for rep in range(reps):  # alternating, so a slow minute of the machine falls on every kind alike
            for kind in kinds:
                walls[kind].append(run_kind(suites[kind], Path(tmp) / f"out-{kind}-{rep}").wall_s)
    base = statistics.median(walls["none"])
    print(f"\n{episodes} episodes at -c {args.concurrency}, median of {reps}")
    print(f"{'kind':<8}{'wall s':>9}{'ratio':>8}{'added ms/episode':>18}{'target':>9}  ok")
    for kind in kinds:
        wall = statistics.median(walls[kind])
        added = (wall - base) / episodes * 1000
        target = TARGETS_MS.get(kind)
        verdict = "" if target is None else ("yes" if added <= target else "NO")
        print(f"{kind:<8}{wall:>9.2f}{wall / base:>8.2f}{added:>18.1f}"
              f"{'' if target is None else f'{target:.0f}':>9}  {verdict}")
    for line in skipped:
        print(f"skipped {line}")


if __name__ == "__main__":
    main()
