"""Load: 20,000 samples at concurrency 64 against the loopback server. Every sample exactly once, peak
RSS flat in N (2,000 vs 20,000, printed), no file-descriptor leak. Marked `load` (run alone with
`make test-slow`, or `pytest -m load`); the default `make test` leaves it out, `.ci/run` runs it after."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT, write_suite
from tests.scripted_server import ScriptedServer, text

pytestmark = pytest.mark.load


# The child reports its own peak (VmHWM, reset by exec): the parent's wait4 ru_maxrss folds in the size of the
# process that forked it, so the same run measured 75 MB from a small pytest and 143 MB from a pytest process
# grown by the slow tests run before it.
PEAK = ("import atexit, runpy, sys\n"
        "def peak():\n"
        "    kb = next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
        "    print(f'evals-peak-kb {kb}', file=sys.stderr)\n"
        "atexit.register(peak)\n"
        "sys.argv[0] = 'evals'\n"
        "runpy.run_module('evals_cli', run_name='__main__', alter_sys=True)\n")


def run_measured(suite: Path, out: Path, n: int) -> tuple[int, float, float]:
    """(exit code, peak RSS in MB, wall seconds) of one `evals run` subprocess."""
    env = {**os.environ, "NO_COLOR": "1"}
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", PEAK, "run", str(suite), "-o", str(out), "-n", str(n), "-c", "64",
                           "-q"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = re.search(r"evals-peak-kb (\d+)", proc.stderr)
    assert found, proc.stderr[-2000:]
    return proc.returncode, int(found.group(1)) / 1024, time.monotonic() - began


def test_20k_samples_once_each_with_flat_memory(tmp_path: Path) -> None:
    reply = text("fine")
    server = ScriptedServer(lambda path, body: reply).start()
    try:
        rows = (json.dumps({"id": f"s{i:05d}", "input": f"q{i}", "ground_truth": "fine"}) for i in range(20_000))
        (tmp_path / "big").mkdir()
        suite = write_suite(tmp_path / "big", [], base_url=server.url, concurrency=64,
                            graders={"answer": {"kind": "tool", "function": "contains"}})
        (tmp_path / "big" / "data.jsonl").write_text("\n".join(rows) + "\n")
        small_code, small_rss, small_s = run_measured(suite, tmp_path / "small-out", 2_000)
        big_code, big_rss, big_s = run_measured(suite, tmp_path / "big-out", 20_000)
    finally:
        server.stop()
    print(f"\npeak RSS: 2,000 samples {small_rss:.1f} MB in {small_s:.1f}s; "
          f"20,000 samples {big_rss:.1f} MB in {big_s:.1f}s; ratio {big_rss / small_rss:.2f}")
    assert small_code == 0 and big_code == 0
    ids = [json.loads(line)["sample_id"] for line in (tmp_path / "big-out" / "results.jsonl").open()]
    assert len(ids) == 20_000 and len(set(ids)) == 20_000
    assert json.loads((tmp_path / "big-out" / "summary.json").read_text())["total"] == 20_000
    assert big_rss < 150
    assert big_rss / small_rss < 1.2


def test_no_file_descriptor_leak(tmp_path: Path) -> None:
    from evals_cli import load_suite, run_suite
    from evals_cli.runner import RunOptions

    server = ScriptedServer(lambda path, body: text("fine")).start()
    try:
        rows = [{"id": f"s{i}", "input": "q", "ground_truth": "fine"} for i in range(200)]
        suite = load_suite(write_suite(tmp_path, rows, base_url=server.url, concurrency=16))

        def fds() -> int:
            return len(os.listdir("/proc/self/fd"))

        run_suite(suite, RunOptions(output=tmp_path / "warm"))
        before = fds()
        for i in range(3):
            assert run_suite(suite, RunOptions(output=tmp_path / f"run{i}")).exit_code in (0, 1)
        after = fds()
    finally:
        server.stop()
    assert after - before <= 2, (before, after)
