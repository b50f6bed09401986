"""--shard K/N splits samples stably and completely; `evals merge` joins the parts into one verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals_cli.errors import ConfigError
from evals_cli.sharding import in_shard, parse_shard
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

ROWS = [{"id": f"s{i:02d}", "input": f"q{i}", "ground_truth": "fine" if i % 5 else "other"} for i in range(40)]


def test_shards_partition_ids_stably() -> None:
    ids = [f"sample-{i}" for i in range(1000)]
    parts = [[i for i in ids if in_shard(i, (k, 4))] for k in range(1, 5)]
    assert sorted(sum(parts, [])) == sorted(ids)  # every id in exactly one part
    assert all(150 < len(p) < 350 for p in parts)  # and the parts are roughly even
    assert [i for i in ids if in_shard(i, (2, 4))] == parts[1]  # the same split every time
    with pytest.raises(ConfigError):
        parse_shard("5/4")
    with pytest.raises(ConfigError):
        parse_shard("two")


def test_sharded_runs_merge_into_one_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"q": [text("fine")]})
    suite = write_suite(tmp_path, ROWS, base_url=server.url, graders={"answer": {"kind": "tool", "function": "contains"}},
                        gate={"value": 0.9})
    for k in (1, 2, 3):
        result = run_cli("run", str(suite), "--shard", f"{k}/3", "-o", str(tmp_path / f"shard{k}"))
        assert result.returncode in (0, 1), result.stderr
    merged = run_cli("merge", str(tmp_path / "shard1"), str(tmp_path / "shard2"), str(tmp_path / "shard3"),
                     "-o", str(tmp_path / "merged"))
    assert merged.returncode == 1, merged.stderr  # 8 of 40 answers are wrong: 0.8 < 0.9
    lines = read_jsonl(tmp_path / "merged" / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == [r["id"] for r in ROWS]
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert summary["total"] == 40 and summary["graders"]["answer"]["avg_score"] == pytest.approx(0.8)
    assert "Gate FAILED" in merged.stdout


def test_merge_refuses_mixed_suites_and_duplicates(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"q": [text("fine")]})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    suite_a = write_suite(tmp_path / "a", ROWS, base_url=server.url)
    suite_b = write_suite(tmp_path / "b", ROWS[:10], base_url=server.url)
    assert run_cli("run", str(suite_a), "--shard", "1/2", "-o", str(tmp_path / "ra")).returncode in (0, 1)
    assert run_cli("run", str(suite_b), "--shard", "2/2", "-o", str(tmp_path / "rb")).returncode in (0, 1)
    mixed = run_cli("merge", str(tmp_path / "ra"), str(tmp_path / "rb"), "-o", str(tmp_path / "m1"))
    assert mixed.returncode == 2 and "not a shard of the same run" in mixed.stderr
    twice = run_cli("merge", str(tmp_path / "ra"), str(tmp_path / "ra"), "-o", str(tmp_path / "m2"))
    assert twice.returncode == 2 and "the same shard given twice" in twice.stderr
    assert not (tmp_path / "m2").exists()
