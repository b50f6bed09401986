"""`evals report RUN --format inspect -o FILE.eval` (and `--export inspect=FILE`): a run against the scripted model
server through the real openai client, written as an inspect_ai log and read back by inspect's own
`read_eval_log`: its samples, conversations, scores and errors are the run's."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

ROWS: list[dict[str, Any]] = [
    {"id": "port", "input": "Which port?", "ground_truth": "5432", "expected_tool_order": ["read_file"]},
    {"id": "missing", "input": "Read the missing file", "ground_truth": "not found"},
    {"id": "turns", "input": ["hello", "and again"], "ground_truth": ["hi", "bye"]},
    {"id": "broken", "input": "nothing is scripted for this", "ground_truth": "x"},
]


def _run(tmp: Path, server: ScriptedServer, *extra: str) -> Path:
    server.script = agent_script({
        "port": [call("read_file", {"path": ".env"}), text("The port is 5432.")],
        "missing": [call("read_file", {"path": "nope.txt"}), text("That file was not found.")],
        "hello": [text("hi there")], "again": [text("hi once more")]})
    suite = write_suite(tmp, ROWS, base_url=server.url, repeats=2)
    result = run_cli("run", str(suite), "-o", str(tmp / "out"), "--max-error-rate", "1", *extra)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return tmp / "out"


def _expected_scores(row: dict[str, Any]) -> dict[str, tuple[float, str]]:
    return {name: (g["score"], g["rationale"]) for name, g in row["grades"].items()
            if g["score"] is not None and g["applicable"]}


@pytest.mark.slow  # importing inspect_ai alone takes about 4 s of CPU
def test_the_inspect_log_reads_back_as_the_run(tmp_path: Path, server: ScriptedServer) -> None:
    from inspect_ai.log import list_eval_logs, read_eval_log, read_eval_log_sample_summaries  # seconds to import

    out = _run(tmp_path, server)
    target = tmp_path / "logs" / "2026-12-01T10-00-00+00-00_test-suite_abc.eval"
    result = run_cli("report", str(out), "--format", "inspect", "-o", str(target))
    assert result.returncode == 0, result.stdout + result.stderr
    log = read_eval_log(str(target))
    rows = {(r["sample_id"], r["repeat"]): r for r in read_jsonl(out / "results.jsonl")}
    assert log.status == "success" and log.eval.task == "test-suite" and log.eval.model == "scripted"
    assert sorted(map(str, log.eval.dataset.sample_ids or [])) == sorted(r["id"] for r in ROWS)
    assert log.eval.config.epochs == 2
    assert log.samples is not None and len(log.samples) == len(rows) == 8
    for sample in log.samples:
        row = rows[(str(sample.id), sample.epoch - 1)]
        assert {n: (s.value, s.explanation) for n, s in (sample.scores or {}).items()} == _expected_scores(row)
        if row["error"] is None:
            assert sample.error is None
        else:  # the sample's error, never a score
            assert sample.error is not None and row["error"]["message"] in sample.error.message
            assert not sample.scores
        grades = row["grades"]
        assert sample.metadata["evals"]["not_applicable"] == {n: g["rationale"] for n, g in grades.items()
                                                              if g["applicable"] is False}
        assert sample.metadata["evals"]["passed"] == row["passed"]
    by_id = {(str(s.id), s.epoch): s for s in log.samples}
    port = by_id[("port", 1)]
    assert [m.role for m in port.messages] == ["user", "assistant", "tool", "assistant"]
    calls = port.messages[1].tool_calls  # type: ignore[union-attr]
    assert calls is not None and (calls[0].function, calls[0].arguments) == ("read_file", {"path": ".env"})
    assert "DB_PORT=5432" in port.messages[2].text and port.output.completion == "The port is 5432."
    missing_tool = by_id[("missing", 1)].messages[2]
    assert missing_tool.role == "tool" and missing_tool.error is not None
    turns = by_id[("turns", 1)]
    assert [m.text for m in turns.messages if m.role == "user"] == ["hello", "and again"]
    assert turns.target == ["hi", "bye"]
    graders = json.loads((out / "summary.json").read_text(encoding="utf-8"))["graders"]
    assert log.results is not None
    assert {s.name: s.metrics["avg_score"].value for s in log.results.scores if "avg_score" in s.metrics} == \
        {n: g["avg_score"] for n, g in graders.items() if g["avg_score"] is not None}
    # what `inspect view` lists: the folder's logs, and each log's sample summaries
    assert [Path(i.name).name for i in list_eval_logs(str(target.parent))] == [target.name]
    assert len(read_eval_log_sample_summaries(str(target))) == 8


def test_export_inspect_on_a_run_and_bad_uses_exit_2(tmp_path: Path, server: ScriptedServer) -> None:
    """The file's layout, read with the standard library (the read-back by inspect itself is the slow test)."""
    out = _run(tmp_path, server, "--export", f"inspect={tmp_path / 'run.eval'}")
    with zipfile.ZipFile(tmp_path / "run.eval") as archive:
        names = set(archive.namelist())
        assert {"header.json", "summaries.json", "reductions.json"} <= names
        samples = [json.loads(archive.read(n)) for n in sorted(names) if n.startswith("samples/")]
        header = json.loads(archive.read("header.json"))
    assert len(samples) == 8 and header["eval"]["task"] == "test-suite" and header["status"] == "success"
    broken = [s for s in samples if s["id"] == "broken"]
    assert len(broken) == 2 and all(s["error"] and not s["scores"] for s in broken)
    for args, said in ((["--format", "inspect"], "give the file to write with -o"),
                       (["--format", "inpsect", "-o", "x.eval"], "unknown format")):
        result = run_cli("report", str(out), *args)
        assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr
