"""`--shard auto` takes the part a job runs from its environment (a Kubernetes indexed Job, a CI matrix), and
`evals merge` of every part gives what one run gives: the same samples, verdicts, gate and exit code, with a
missing, duplicated or foreign part refused by name."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.errors import ConfigError
from evals_cli.sharding import SHARD_VARIABLES, in_shard, resolve_shard
from tests.ci_manifests import check_kubernetes, check_workflow, is_kubernetes, is_workflow
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

SHARD_NAMES = [name for pair in SHARD_VARIABLES for name in (pair.index, pair.total)]
# 12 samples, 2 repeats: wrong answers (ground truth "other") fail, "boom" has no scripted reply and errors
ROWS = [{"id": f"case-{i:02d}", "input": "boom" if i == 7 else f"q{i}", "ground_truth": "fine" if i % 4 else "other"}
        for i in range(12)]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}}
# what differs between two runs of the same samples however they are split: when they ran, and how fast
TIMING = {"started_at", "finished_at", "duration_s", "latency_p50_s", "latency_p95_s", "latency_s"}


@pytest.fixture(autouse=True)
def _no_shard_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine running the tests may itself be a CI job with a shard in its environment."""
    for name in SHARD_NAMES:
        monkeypatch.delenv(name, raising=False)


def _suite(server: ScriptedServer, tmp_path: Path, rows: list[dict[str, Any]] = ROWS) -> Path:
    server.script = agent_script({"q": [text("fine")]})
    return write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS, gate={"value": 0.8}, repeats=2)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def _verdicts(folder: Path) -> dict[tuple[str, int], tuple[Any, ...]]:
    """Each sample run's verdict: passed, score, grades and error category, keyed by (sample, repeat)."""
    return {(r["sample_id"], r["repeat"]): (r["passed"], r["score"], json.dumps(r["grades"], sort_keys=True),
                                            (r["error"] or {}).get("category"))
            for r in read_jsonl(folder / "results.jsonl")}


# --- the part, from the environment ------------------------------------------------------------------------------

@pytest.mark.parametrize(("environ", "shard"), [
    ({"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "3"}, "1/3"),  # Kubernetes counts from 0, shards from 1
    ({"JOB_COMPLETION_INDEX": "2", "JOB_COMPLETIONS": "3"}, "3/3"),
    ({"EVALS_SHARD_INDEX": "1", "EVALS_SHARD_TOTAL": "4"}, "2/4"),
    ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"}, "1/2"),  # GitLab counts from 1
    ({"EVALS_SHARD_INDEX": "0", "EVALS_SHARD_TOTAL": "2", "JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "2",
      "CI_NODE_TOTAL": "1"}, "1/2"),  # the explicit pair first, whatever else is set
    ({"JOB_COMPLETION_INDEX": " 1 ", "JOB_COMPLETIONS": "2\n"}, "2/2"),
])
def test_auto_reads_the_part_from_the_environment(environ: dict[str, str], shard: str) -> None:
    assert resolve_shard("auto", environ) == shard
    assert resolve_shard("2/5", environ) == "2/5" and resolve_shard(None, environ) is None


@pytest.mark.parametrize(("environ", "said"), [
    ({}, SHARD_NAMES),
    ({"JOB_COMPLETION_INDEX": "1"}, ["JOB_COMPLETION_INDEX='1' is set but JOB_COMPLETIONS is not"]),
    ({"EVALS_SHARD_TOTAL": "3"}, ["EVALS_SHARD_TOTAL='3' is set but EVALS_SHARD_INDEX is not"]),
    ({"CI_NODE_TOTAL": "1"}, ["CI_NODE_INDEX is not"]),  # a GitLab job without parallel:
    ({"JOB_COMPLETION_INDEX": "3", "JOB_COMPLETIONS": "3"}, ["JOB_COMPLETION_INDEX='3', JOB_COMPLETIONS='3'",
                                                             "between 0 and 2"]),
    ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "2"}, ["between 1 and 2"]),
    ({"EVALS_SHARD_INDEX": "-1", "EVALS_SHARD_TOTAL": "2"}, ["EVALS_SHARD_INDEX='-1'", "whole numbers"]),
    ({"EVALS_SHARD_INDEX": "", "EVALS_SHARD_TOTAL": "2"}, ["whole numbers"]),  # a matrix value that was not set
    ({"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "0"}, ["JOB_COMPLETIONS must be at least 1"]),
])
def test_auto_refuses_a_missing_or_inconsistent_pair(environ: dict[str, str], said: list[str]) -> None:
    with pytest.raises(ConfigError) as refused:
        resolve_shard("auto", environ)
    assert all(words in str(refused.value) for words in said), str(refused.value)


def test_run_refuses_auto_without_a_shard_before_any_call(server: ScriptedServer, tmp_path: Path) -> None:
    suite = _suite(server, tmp_path)
    result = run_cli("run", str(suite), "--shard", "auto", "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert all(name in result.stderr for name in SHARD_NAMES) and "Traceback" not in result.stderr
    odd = run_cli("run", str(suite), "--shard", "auto", "-o", str(tmp_path / "out"),
                  env={"JOB_COMPLETION_INDEX": "4", "JOB_COMPLETIONS": "3"})
    assert odd.returncode == 2 and "JOB_COMPLETION_INDEX='4', JOB_COMPLETIONS='3'" in odd.stderr
    assert server.requests == [] and not (tmp_path / "out").exists()


def test_auto_runs_its_part_and_keeps_it_for_a_resume(server: ScriptedServer, tmp_path: Path) -> None:
    suite = _suite(server, tmp_path)
    out = tmp_path / "part"
    ran = run_cli("run", str(suite), "--shard", "auto", "-o", str(out),
                  env={"EVALS_SHARD_INDEX": "1", "EVALS_SHARD_TOTAL": "3"})
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr
    assert _json(out / "run.json")["shard"] == "2/3"  # what a resume checks and a merge counts
    assert {r["sample_id"] for r in read_jsonl(out / "results.jsonl")} == \
        {r["id"] for r in ROWS if in_shard(r["id"], (2, 3))}
    other = run_cli("run", str(suite), "--resume", str(out), "--shard", "auto",
                    env={"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "3"})
    assert other.returncode == 2 and "--shard 1/3 is not what that run started with (--shard 2/3)" in other.stderr


# --- merge: every part, once ---------------------------------------------------------------------------------------

@dataclass
class Split:
    """One suite run as 3 parts, shared by the merge tests (they only read the folders), and its server."""

    suite: Path
    parts: list[Path]
    server: ScriptedServer


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Split]:
    root = tmp_path_factory.mktemp("split")
    server = ScriptedServer().start()
    try:
        suite = _suite(server, root)
        parts = []
        for k in (1, 2, 3):
            parts.append(root / f"shard-{k}")
            ran = run_cli("run", str(suite), "--shard", f"{k}/3", "-o", str(parts[-1]))
            assert ran.returncode in (0, 1, 3), ran.stdout + ran.stderr  # 3: "boom" errors in a small part
        yield Split(suite, parts, server)
    finally:
        server.stop()


def test_merge_refuses_a_missing_or_duplicated_shard_by_name(split: Split, tmp_path: Path) -> None:
    one, two, three = split.parts
    missing = run_cli("merge", str(one), str(three), "-o", str(tmp_path / "m"))
    assert missing.returncode == 2 and "shard 2/3 missing" in missing.stderr, missing.stderr
    copy = tmp_path / "copy-of-1"
    shutil.copytree(one, copy)
    twice = run_cli("merge", str(one), str(two), str(three), str(copy), "-o", str(tmp_path / "m"))
    assert twice.returncode == 2 and f"shard 1/3 is in both {one} and {copy}" in twice.stderr, twice.stderr
    assert not (tmp_path / "m").exists()  # refused before anything was written


def test_merge_refuses_parts_of_different_splits(split: Split, tmp_path: Path) -> None:
    half = tmp_path / "half"
    assert run_cli("run", str(split.suite), "--shard", "2/2", "-o", str(half)).returncode in (0, 1, 3)
    split_two_ways = run_cli("merge", *map(str, split.parts), str(half), "-o", str(tmp_path / "m"))
    assert split_two_ways.returncode == 2, split_two_ways.stderr
    assert "split the samples 2 and 3 ways" in split_two_ways.stderr
    whole = tmp_path / "whole"
    assert run_cli("run", str(split.suite), "-o", str(whole)).returncode in (0, 1)
    mixed = run_cli("merge", *map(str, split.parts), str(whole), "-o", str(tmp_path / "m"))
    assert mixed.returncode == 2 and f"{whole} not run with --shard" in mixed.stderr, mixed.stderr
    assert not (tmp_path / "m").exists()


def test_an_empty_shard_finishes_and_merges_into_the_single_run(server: ScriptedServer, tmp_path: Path) -> None:
    """Two samples in three parts: one part holds none. It finishes (exit 0, no verdict of its own: a failed job
    would be retried by Kubernetes), and the merge of all three gives the single run's verdict."""
    rows = [{"id": f"s{i:02d}", "input": f"q{i}", "ground_truth": "fine" if i else "other"} for i in range(2)]
    assert [k for k in (1, 2, 3) if not any(in_shard(r["id"], (k, 3)) for r in rows)] == [1]
    suite = _suite(server, tmp_path, rows)
    single = run_cli("run", str(suite), "-o", str(tmp_path / "single"))
    empty = run_cli("run", str(suite), "--shard", "1/3", "-o", str(tmp_path / "s1"))
    assert empty.returncode == 0 and "Gate not evaluated: shard 1/3 holds none of the 2 samples" in empty.stdout
    assert _json(tmp_path / "s1" / "summary.json")["gate"]["passed"] is None
    for k in (2, 3):
        assert run_cli("run", str(suite), "--shard", f"{k}/3", "-o", str(tmp_path / f"s{k}")).returncode in (0, 1)
    merged = run_cli("merge", *(str(tmp_path / f"s{k}") for k in (1, 2, 3)), "-o", str(tmp_path / "m"))
    assert (merged.returncode, single.returncode) == (1, 1), merged.stdout + merged.stderr  # 1 of 2 right < 0.8
    assert _without_timing(_json(tmp_path / "m" / "summary.json")) == \
        _without_timing(_json(tmp_path / "single" / "summary.json"))


# --- N processes of an indexed Job, merged, against one run --------------------------------------------------------

@pytest.mark.slow  # over a CPU-second of subprocesses: make test-slow (CI runs it)
def test_indexed_job_processes_merge_into_what_one_run_gives(server: ScriptedServer, tmp_path: Path) -> None:
    """Three real `evals run --shard auto` processes, each with the variables a Kubernetes indexed Job gives its
    pods (and the same -o pattern as docs/scaling.md's manifest), side by side; merged, they are the single run."""
    suite = _suite(server, tmp_path)
    assert all(any(in_shard(r["id"], (k, 3)) for r in ROWS) for k in (1, 2, 3))  # every process has work
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_AGENT_", "EVAL_JUDGE_", "OPENAI_"))}
    jobs = [subprocess.Popen([sys.executable, "-m", "evals_cli", "run", str(suite), "--shard", "auto", "-q",
                              "-o", str(tmp_path / "shards" / f"shard-{index + 1}")], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**env, "JOB_COMPLETION_INDEX": str(index), "JOB_COMPLETIONS": "3"})
            for index in range(3)]
    codes = []
    for job in jobs:
        out, err = job.communicate(timeout=120)
        codes.append(job.returncode)
        assert job.returncode in (0, 1, 3), out + err
    # the part with "boom" has 2 errors in 8 sample runs, over --max-error-rate 0.2: no verdict of its own (exit 3);
    # one run has them in 24, under it, and so has the merge
    holder = next(k for k in range(3) if in_shard("case-07", (k + 1, 3)))
    assert [code == 3 for code in codes] == [k == holder for k in range(3)], codes
    folders = sorted((tmp_path / "shards").glob("shard-*"))  # as the merge Job's shell gives them
    assert [_json(f / "run.json")["shard"] for f in folders] == ["1/3", "2/3", "3/3"]
    single = run_cli("run", str(suite), "-o", str(tmp_path / "single"))
    merged = run_cli("merge", *map(str, folders), "-o", str(tmp_path / "merged"))
    assert merged.returncode == single.returncode == 1, merged.stdout + merged.stderr  # 8 of 11 answers right: 0.73 < 0.8
    one, joined = _json(tmp_path / "single" / "summary.json"), _json(tmp_path / "merged" / "summary.json")
    assert _verdicts(tmp_path / "merged") == _verdicts(tmp_path / "single")
    assert len(_verdicts(tmp_path / "merged")) == 24 and joined["errored"] == 2  # "boom", twice
    assert _without_timing(joined) == _without_timing(one)  # gate, counts, graders, reliability, coverage
    assert _json(tmp_path / "merged" / "run.json")["started_with"]["planned_results"] == 24
    parts = [_json(f / "summary.json") for f in folders]  # the merged run spans its parts (it once said 0.0s)
    assert joined["started_at"] == min(p["started_at"] for p in parts)
    assert joined["finished_at"] == max(p["finished_at"] for p in parts)
    assert joined["duration_s"] >= max(p["duration_s"] for p in parts) > 0


# --- docs/scaling.md's manifests -------------------------------------------------------------------------------------

def _scaling_blocks() -> list[dict[str, Any]]:
    text = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"^```yaml\n(.*?)^```", text, flags=re.S | re.M)]


def test_the_example_workflow_is_the_documented_one() -> None:
    example = (ROOT / "examples" / "ci" / "evals-sharded.yml").read_text(encoding="utf-8")
    [workflow] = [b for b in _scaling_blocks() if is_workflow(b)]
    assert yaml.safe_load(example) == workflow
    check_workflow(yaml.safe_load(example), "examples/ci/evals-sharded.yml")


def test_the_manifest_checks_catch_a_wrong_manifest() -> None:
    """The checks test_readme_blocks.py runs on docs/scaling.md fail on the mistakes they are there for."""
    [shards] = [b for b in _scaling_blocks() if is_kubernetes(b) and b["spec"].get("completionMode") == "Indexed"]
    [workflow] = [b for b in _scaling_blocks() if is_workflow(b)]
    check_kubernetes(shards, "shards")
    check_workflow(workflow, "workflow")
    wrong_total = copy.deepcopy(shards)
    wrong_total["spec"]["completions"] = 5  # JOB_COMPLETIONS still says 4
    with pytest.raises(AssertionError, match="JOB_COMPLETIONS"):
        check_kubernetes(wrong_total, "shards")
    typo = copy.deepcopy(shards)
    container = typo["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [container["args"][0].replace("--shard auto", "--shards auto")]
    with pytest.raises(AssertionError, match="--shards"):
        check_kubernetes(typo, "shards")
    two_ways = copy.deepcopy(workflow)
    two_ways["jobs"]["shard"]["strategy"]["matrix"]["python"] = ["3.11", "3.12"]
    with pytest.raises(AssertionError, match="2 dimensions"):
        check_workflow(two_ways, "workflow")
