"""Issue 29 items 4 and 5 in the terminal: one cause said once (identical reasons grouped, the abort and gate lines
pointing at it instead of repeating it), every failing grader's reason on its own line (a goal judgement is never
pushed off), and `evals report RUN --why full|all` printing every reason whole, the passing judge grades' too."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

GRADERS = {"answer": {"kind": "tool", "function": "contains"}}


def closed_port() -> str:
    with socket.socket() as probe:  # a port nothing listens on: every sample errors before its first reply
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def flat(output: str) -> str:
    return " ".join(output.split())


def test_an_unreachable_endpoint_is_said_once_with_every_sample_it_hit(tmp_path: Path) -> None:
    ids = ["premature", "negative", "needless", "good-read"]
    suite = write_suite(tmp_path, [{"id": i, "input": "port?", "ground_truth": "5432"} for i in ids],
                        base_url=closed_port(), graders=GRADERS, concurrency=4)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "--max-error-rate", "1", "--max-retries", "0")
    assert result.returncode == 3
    errored = [json.loads(line)["sample_id"] for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(errored) >= 2, errored  # the endpoint errors of every sample in flight, at least two
    stdout = flat(result.stdout)
    # one line for all of them, naming each sample, instead of one line per sample
    assert f"{len(errored)} samples: endpoint error: cannot reach agent endpoint" in stdout
    assert f"({', '.join(errored)})" in stdout
    assert "Run aborted: the endpoint error above" in stdout
    gate = next(line for line in result.stdout.splitlines() if line.startswith("Gate "))
    assert gate.startswith("Gate not evaluated: run aborted after ") and "cannot reach" not in gate
    # the cause once on stdout, once more on stderr (for CI logs and --quiet), never per sample
    assert stdout.count("cannot reach") == 1, result.stdout
    assert flat(result.stderr).count("cannot reach") == 1, result.stderr


def test_samples_failing_for_different_reasons_stay_apart(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "qa", "ground_truth": "5433"}, {"id": "b", "input": "qb", "ground_truth": "5433"},
            {"id": "c", "input": "qc", "ground_truth": "9999"}]
    server.script = agent_script({"q": [text("5432")]})
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS, concurrency=1)  # rows in order
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    lines = result.stdout.splitlines()
    assert "  2 samples: answer 0.00: '5433' not found in the submission (a, b)" in lines, result.stdout
    assert any(line.startswith("  c ") and "'9999' not found" in line for line in lines), result.stdout


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The simulated-users suite replayed from its recording of a real small model (agent, user and judge)."""
    out = tmp_path_factory.mktemp("simulated") / "run"
    result = run_cli("run", str(ROOT / "suites" / "simulated_users.yaml"), "--replay",
                     str(ROOT / "suites" / "simulated_users.recording.jsonl"), "-o", str(out))
    assert result.returncode == 1, result.stderr
    return out


def goal_grades(run: Path) -> dict[str, dict[str, object]]:
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return {line["sample_id"]: line["grades"]["goal"] for line in lines}


def reason_heads(block: str, sample: str) -> list[str]:
    """The graders named at the start of the reason lines of one sample under the table."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {sample} "))
    own = [lines[start][2 + len(sample):].strip()]
    for line in lines[start + 1:]:
        if line.startswith("  ") and not line.startswith("   "):
            break
        own.append(line.strip())
    return [line.split()[0] for line in own if re.match(r"^[a-z_]+ (\d\.\d\d|error|n/a): ", line)]


def test_every_failing_graders_reason_has_its_own_line(simulated_run: Path) -> None:
    """The goal judgement of a sample that also failed two deterministic graders was cut off after two lines."""
    report = run_cli("report", str(simulated_run))
    block = report.stdout.split("why 4 samples did not pass:", 1)[1].split("full report:", 1)[0]
    assert reason_heads(block, "ask-for-order-id") == ["calls", "final_state", "goal"], block
    failed_goals = [sample for sample, grade in goal_grades(simulated_run).items() if grade["score"] == 0]
    assert len(failed_goals) == 3
    for sample in failed_goals:
        assert "goal" in reason_heads(block, sample), (sample, block)


def test_why_full_prints_judge_reasoning_and_goal_judgements_whole(simulated_run: Path) -> None:
    report = run_cli("report", str(simulated_run), "--why", "full")
    assert report.returncode == 0, report.stderr
    stdout = flat(report.stdout)
    assert "why 4 sample runs did not pass, whole:" in stdout
    for sample, grade in goal_grades(simulated_run).items():
        rationale = flat(str(grade["rationale"]))
        assert len(rationale) > 80 and rationale in stdout, sample  # whole, never cut
    assert "goal not met" in stdout and "goal met at turn 2" in stdout
    lines = [json.loads(line) for line in (simulated_run / "results.jsonl").read_text().splitlines()]
    replies = [t["rationale"] for line in lines for t in line["grades"]["replies"]["per_turn_grades"]]
    assert all(flat(r) in stdout for r in replies)  # every per-reply verdict, whole
    assert "every reason whole" not in stdout  # nothing was cut, nothing to point at


def test_why_all_shows_the_reasons_behind_passing_grades(tmp_path: Path, server: ScriptedServer) -> None:
    rows = [{"id": "ok", "input": "q", "ground_truth": "5432"}]
    server.script = agent_script({"q": [text("5432")]})
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out)).returncode == 0
    short = run_cli("report", str(out))
    assert "'5432' found" not in short.stdout  # a passing grade's reason is not under the table
    full = run_cli("report", str(out), "--why", "full")
    assert "did not pass" not in full.stdout and "'5432' found" not in full.stdout
    every = run_cli("report", str(out), "--why", "all")
    assert every.returncode == 0
    stdout = flat(every.stdout)
    assert "every reason of 1 sample run:" in stdout and "ok ✓ passed score 1.00" in stdout
    grade = json.loads((out / "results.jsonl").read_text())["grades"]["answer"]
    assert f"answer 1.00 {flat(grade['rationale'])}" in stdout


def test_why_takes_short_full_or_all(tmp_path: Path) -> None:
    result = run_cli("report", str(tmp_path), "--why", "everything")
    assert result.returncode == 2
    assert "--why everything: choose short" in result.stderr and "Traceback" not in result.stderr


def test_a_cut_reason_points_at_the_whole_one(server: ScriptedServer, tmp_path: Path) -> None:
    long_truth = " ".join(f"word{i}" for i in range(80))
    server.script = agent_script({"q": [text("nothing")]})
    suite = write_suite(tmp_path, [{"id": "long", "input": "q", "ground_truth": long_truth}], base_url=server.url,
                        graders=GRADERS)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    assert "…" in result.stdout
    assert f"every reason whole: evals report {out} --why full" in result.stdout
    assert "word79" in run_cli("report", str(out), "--why", "full").stdout
