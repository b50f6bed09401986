"""The run folder's failures are said in words, never as an internal error: `-o` on a file, under a file or
somewhere unwritable, an `-o` that already holds a run, `--resume` on a folder that does not exist (exit 2,
naming the path and the fix), and a disk that fills up mid-run (exit 3: what was saved and the resume command;
the resume then completes the run)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, process_program, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, text

GRADERS = {"answer": {"kind": "tool", "function": "contains"}}
N = 12
FULL_DEVICE = Path("/dev/full")  # Linux: every write fails with ENOSPC


def rows(n: int = N) -> list[dict[str, str]]:
    return [{"id": f"s{i:02d}", "input": f"question {i} " + "x" * 400, "ground_truth": "fine"} for i in range(n)]


@pytest.fixture
def suite(server: ScriptedServer, tmp_path: Path) -> Path:
    server.script = lambda path, body: text("fine")
    return write_suite(tmp_path, rows(), base_url=server.url, graders=GRADERS, concurrency=1)


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr


def test_output_is_a_file(suite: Path, tmp_path: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("keep me")
    result = run_cli("run", str(suite), "-o", str(target))
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert f"-o {target}: is a file, not a folder" in result.stderr
    assert target.read_text() == "keep me"


def test_output_under_a_file(suite: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("")
    result = run_cli("run", str(suite), "-o", str(blocker / "run"))
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert f"{blocker} is a file, so no folder can be made under it" in result.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc, where no folder can be created")
def test_output_where_no_folder_can_be_created(suite: Path) -> None:
    result = run_cli("run", str(suite), "-o", "/proc/evals-no-such-dir/run")
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert "-o /proc/evals-no-such-dir/run: cannot create or write this folder" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_output_in_a_read_only_folder(suite: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = run_cli("run", str(suite), "-o", str(locked / "run"))
    finally:
        locked.chmod(0o700)
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert f"-o {locked / 'run'}: cannot write there" in result.stderr


def test_output_that_already_holds_a_run_is_refused(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out), "-n", "2").returncode == 0
    again = run_cli("run", str(suite), "-o", str(out), "-n", "2")
    assert again.returncode == 2, again.stderr
    assert f"-o {out}: already holds the results of a run; continue it with --resume {out}" in again.stderr
    assert len(read_jsonl(out / "results.jsonl")) == 2  # nothing appended to the first run's file


def test_resume_on_a_folder_that_does_not_exist(suite: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-run"
    result = run_cli("run", str(suite), "--resume", str(missing))
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert f"--resume {missing}: no such folder" in result.stderr
    assert "error: .:" not in result.stderr


def test_resume_on_a_folder_that_is_not_a_run(suite: Path, tmp_path: Path) -> None:
    result = run_cli("run", str(suite), "--resume", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert f"--resume {tmp_path}: {tmp_path} holds no run.json" in result.stderr


def test_merge_into_a_file_is_refused(suite: Path, tmp_path: Path) -> None:
    shard = tmp_path / "a"
    assert run_cli("run", str(suite), "-o", str(shard), "--shard", "1/1").returncode == 0
    target = tmp_path / "afile"
    target.write_text("")
    result = run_cli("merge", str(shard), "-o", str(target))
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert f"-o {target}: is a file, not a folder" in result.stderr


def test_analyze_output_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "afile"
    target.write_text("")
    result = run_cli("analyze", str(ROOT / "datasets" / "multi_agent_sessions.jsonl"), "--no-judge", "-o", str(target))
    assert result.returncode == 2, result.stderr
    assert_clean(result.stderr)
    assert f"-o {target}: is a file, not a folder" in result.stderr


# --- a full disk --------------------------------------------------------------------------------------------


def _limit_file_size(limit: int):  # type: ignore[no-untyped-def]
    """In the child: files may not grow past `limit` bytes, and a write past it fails (EFBIG) instead of
    killing the process (SIGXFSZ ignored): a disk that fills up mid-run, for one process only."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_disk_full_mid_run_says_what_was_saved_and_resume_completes(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "evals_cli", "run", str(suite), "-o", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=_limit_file_size(8000))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert_clean(proc.stderr)
    assert f"could not write {out / 'results.jsonl'}" in proc.stderr
    assert f"to finish the run: {process_program()} run {suite} --resume {out}" in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    saved = summary["total"]
    assert 0 < saved < N and summary["status"] == "aborted" and summary["gate"]["passed"] is None
    assert f"the {saved} results written before are saved there" in summary["abort_reason"]
    assert "Gate PASSED" not in proc.stdout

    resumed = run_cli("run", str(suite), "--resume", str(out))  # space again: the torn line is repaired
    assert resumed.returncode == 0, resumed.stderr
    lines = read_jsonl(out / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == [f"s{i:02d}" for i in range(N)]
    assert json.loads((out / "summary.json").read_text())["gate"]["passed"] is True


@pytest.mark.skipif(not FULL_DEVICE.exists(), reason="needs /dev/full")
def test_enospc_on_the_results_file(suite: Path, tmp_path: Path) -> None:
    """A real ENOSPC: results.jsonl is /dev/full, so the first result cannot be written."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").symlink_to(FULL_DEVICE)
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 3, result.stderr
    assert_clean(result.stderr)
    assert f"could not write {out / 'results.jsonl'} (No space left on device)" in result.stderr
    assert "the 0 results written before are saved there" in result.stderr
    assert f"--resume {out}" in result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "aborted" and summary["exit_code"] == 3 and summary["gate"]["passed"] is None


@pytest.mark.skipif(not FULL_DEVICE.exists(), reason="needs /dev/full")
def test_enospc_on_the_summary(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json.tmp").symlink_to(FULL_DEVICE)
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode == 3, result.stderr
    assert_clean(result.stderr)
    assert f"could not write {out / 'summary.json'} (No space left on device)" in result.stderr
    assert f"{N} results are saved in {out / 'results.jsonl'}" in result.stderr
    assert f"resume with --resume {out}" in result.stderr
    assert "Gate not evaluated" in result.stdout and "Gate PASSED" not in result.stdout
    (out / "summary.json.tmp").unlink()
    resumed = run_cli("run", str(suite), "--resume", str(out))  # reruns nothing, writes the summary
    assert resumed.returncode == 0, resumed.stderr
    assert len(read_jsonl(out / "results.jsonl")) == N
    assert json.loads((out / "summary.json").read_text())["gate"]["passed"] is True
