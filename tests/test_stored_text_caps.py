"""Huge replies: text stored per field is capped with an explicit marker giving the original length, response
bodies past the transport bound are refused with a message naming it, and one 20 MB reply no longer takes
hundreds of MB (measured with bench/huge_reply_rss.py, a loopback server, in a subprocess)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from evals_cli.text_caps import MAX_FIELD_ENV, cap, cap_value
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text


def test_cap_keeps_the_head_and_says_how_long_the_text_was(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cap("short") == "short" and cap(None) is None
    monkeypatch.setenv(MAX_FIELD_ENV, "10")
    capped = cap("x" * 25)
    assert capped.startswith("x" * 10) and "25 characters" in capped and "EVALS_MAX_FIELD_CHARS" in capped
    assert cap(capped) == capped  # capping twice changes nothing
    assert cap_value({"a": ["y" * 30], "n": 3})["a"][0].startswith("y" * 10)


def test_a_huge_reply_is_stored_capped_with_the_original_length(server: ScriptedServer, tmp_path: Path) -> None:
    big = "b" * 3_000_000
    server.script = agent_script({"big": [call("read_file", {"path": big}), text(big)]})
    suite = write_suite(tmp_path, [{"id": "big", "input": "big?", "ground_truth": "b"}], base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), env={MAX_FIELD_ENV: "65536"})
    assert result.returncode in (0, 1), result.stderr
    raw = (tmp_path / "out" / "results.jsonl").read_text()
    assert len(raw) < 600_000  # before: 4 copies of 3 MB
    (line,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    step = line["trajectory"]["turns"][0]["steps"]
    assert "3000000 characters" in step[-1]["content"] and step[-1]["content"].startswith("b" * 65536)
    assert "truncated by evals" in step[0]["tool_calls"][0]["raw_arguments"]


def test_a_body_past_the_response_bound_is_refused_by_name(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"big": [text("c" * 2_000_000)]})
    suite = write_suite(tmp_path, [{"id": "big", "input": "big?", "ground_truth": "c"}], base_url=server.url)
    result = run_cli("run", str(suite), "-o", str(tmp_path / "out"), env={"EVALS_MAX_RESPONSE_BYTES": "1000000"})
    assert result.returncode == 3
    (line,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert "EVALS_MAX_RESPONSE_BYTES" in line["error"]["message"], line["error"]


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_one_20mb_reply_keeps_the_results_line_small() -> None:
    spec = importlib.util.spec_from_file_location("huge_reply_rss", ROOT / "bench" / "huge_reply_rss.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    measured = bench.measure(20)
    assert measured["exit"] == 0, measured
    # before: an 80 MB results line; after: 0.75 MB. Peak memory (348 MB before, ~150 MB after, 65 MB for a tiny
    # reply) depends on the machine's load: `python bench/huge_reply_rss.py` measures it beside a baseline.
    assert measured["results_line_mb"] < 2, json.dumps(measured)
