"""Issue 14 item 1: under the table, one line per failed or errored sample saying why (the failing graders with
their rationale, or the error's category and message), at most 20, then the command that opens the full report;
the same list in `evals report RUN`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals_cli.display.table import fit, wrap
from tests.helpers import run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, agent_script, call, text

GRADERS = {"answer": {"kind": "tool", "function": "contains"}, "forbidden": {"kind": "forbidden_tools"}}


def reasons_block(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("why "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("full report: "))
    return lines[start:end + 1]


def test_failed_and_errored_samples_say_why_under_the_table(server: ScriptedServer, tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"id": "good", "input": "port please", "ground_truth": "5432"},
        {"id": "wrong-answer", "input": "port again", "ground_truth": "5433"},
        {"id": "forbidden-call", "input": "port via file", "ground_truth": "5432", "forbidden_tools": ["read_file"]},
        {"id": "broken", "input": "overloaded", "ground_truth": "5432"},
    ]
    server.script = agent_script({
        "port via file": [call("read_file", {"path": ".env"}), text("5432")],
        "port": [text("5432")],
        "overloaded": [Reply({"error": {"message": "upstream model overloaded"}}, status=500)],
    })
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS)
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "--max-error-rate", "1")
    block = reasons_block(result.stdout)
    assert block[0] == "why 3 samples did not pass (1 errored):", block
    by_id = {line.split()[0]: line for line in block[1:-1] if line.startswith("  ") and not line.startswith("   ")}
    assert set(by_id) == {"wrong-answer", "forbidden-call", "broken"}
    assert "answer 0.00: '5433' not found in the submission" in by_id["wrong-answer"]
    assert "forbidden 0.00: called forbidden tool(s): read_file" in by_id["forbidden-call"]
    assert "endpoint error: agent endpoint" in by_id["broken"]
    assert "upstream model overloaded" in " ".join(block)  # wrapped onto a second line when long, never lost
    assert block[-1] == f"full report: evals report {out} --html report.html"

    report = run_cli("report", str(out))  # the same list, from the results file
    assert report.returncode == 0, report.stderr
    again = reasons_block(report.stdout)
    assert again[:-1] == block[:-1]
    assert again[-1].startswith("full report: evals report ") and again[-1].endswith(" --html report.html")


def test_replay_miss_shows_its_message_in_the_terminal(tmp_path: Path) -> None:
    """The issue's example: the replay miss (which sample, turn and step; re-record with --record) was only in
    results.jsonl."""
    recording = tmp_path / "empty.jsonl"
    recording.write_text("")
    suite = write_suite(tmp_path, [{"id": "paris-weather", "input": "weather in Paris?", "ground_truth": "sunny"}],
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--replay", str(recording))
    block = reasons_block(result.stdout)
    text_block = " ".join(line.strip() for line in block)
    assert "paris-weather" in block[1]
    assert "replay error:" in text_block and "sample paris-weather, turn 1, step 1" in text_block, block


def test_the_list_is_capped_at_20_and_points_at_the_report(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": f"s{i:02d}", "input": f"q{i}", "ground_truth": f"never{i}"} for i in range(25)]  # 25 reasons
    server.script = lambda path, body: text("something else")
    suite = write_suite(tmp_path, rows, base_url=server.url, graders={"answer": {"kind": "tool",
                                                                                  "function": "contains"}})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    block = reasons_block(result.stdout)
    assert block[0] == "why 25 samples did not pass:"
    listed = [line for line in block if line.startswith("  s")]
    assert len(listed) == 20
    assert f"  … and 5 more: see evals report {out} --html report.html" in block
    assert block[-1] == f"full report: evals report {out} --html report.html"


def test_a_passing_run_lists_nothing(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = lambda path, body: text("fine")
    suite = write_suite(tmp_path, [{"id": "a", "input": "q", "ground_truth": "fine"}], base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert result.returncode == 0 and "why " not in result.stdout and "full report" not in result.stdout


def test_repeats_keep_each_distinct_reason(server: ScriptedServer, tmp_path: Path) -> None:
    calls = {"n": 0}

    def flaky(path: str, body: dict[str, Any]) -> Any:
        calls["n"] += 1
        return text("fine" if calls["n"] % 2 else "nope")

    server.script = flaky
    suite = write_suite(tmp_path, [{"id": "a", "input": "q", "ground_truth": "fine"}], base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}}, concurrency=1)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "-r", "2")
    block = reasons_block(result.stdout)
    assert block[1].split()[0] == "a" and "answer 0.00: 'fine' not found" in block[1], block
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["total"] == 2


def test_fit_and_wrap_cut_only_at_word_boundaries() -> None:
    text_in = "answer 0.00: expected 'refund_customer_account' in the final answer of the agent"
    for width in range(12, 90):
        short = fit(text_in, width)
        assert len(short) <= width
        if short != text_in:
            assert short.endswith("…")
            kept = short[:-1].rstrip(" ,;:").split()
            assert kept == text_in.split()[:len(kept)] or kept[-1].rstrip(":") == text_in.split()[len(kept) - 1].rstrip(":")
        lines = wrap(text_in, width, max_lines=2)
        assert all(len(line) <= width for line in lines) and len(lines) <= 2
        if not lines[-1].endswith("…"):
            assert " ".join(lines) == text_in
        for line in lines[:-1]:  # a line that is followed by another ends at a word boundary
            assert text_in.split(line, 1)[1][:1] in (" ", "")


def test_a_run_where_no_model_answered_prints_no_empty_table(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on: every sample errors before its first reply
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    rows = [{"id": f"unreached-{i}", "input": "port?", "ground_truth": "5432"} for i in range(3)]
    suite = write_suite(tmp_path, rows, base_url=closed, graders=GRADERS)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), "--max-error-rate", "1", "--max-retries", "0")
    assert result.returncode == 3
    assert "no model answered: all " in result.stdout and " samples errored before any reply" in result.stdout
    assert "tools called" not in result.stdout  # the samples table's header: no row of empty cells
    assert "cannot reach" in result.stdout  # the reasons still say why, per sample
