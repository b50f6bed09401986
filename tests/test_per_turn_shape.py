"""Issue 11 item 15: per-turn grades in the letta-evals shape (`per_turn_grades` with 0-based `turn`, score,
rationale, submission, ground_truth; `metadata.turns_passed/turns_total`), results schema version 2, and every
reader (report, compare, the exporters) still reading version-1 results. A turn passes at its grader's threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals_cli.exporters import build_junit, render_html
from evals_cli.models.results import SCHEMA_VERSION, Grade, RunSummary, SampleResult
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

V1_LINE: dict[str, Any] = {
    "schema_version": 1, "sample_id": "conv", "repeat": 0, "input": "first: host?",
    "trajectory": {"turns": [{"user": "first: host?", "steps": [{"content": "localhost"}]},
                             {"user": "second: port?", "steps": [{"content": "80"}]}]},
    "grades": {"answer": {"score": 0.5, "rationale": "1/2 turns passed", "turns_passed": 1, "turns_total": 2,
                          "per_turn": [{"turn": 1, "score": 1.0, "rationale": "found", "submission": "localhost",
                                        "ground_truth": "localhost"},
                                       {"turn": 2, "score": 0.0, "rationale": "missing", "submission": "80",
                                        "ground_truth": "5432"}]}},
    "score": 0.5, "passed": False,
}


def test_schema_version_is_bumped() -> None:
    assert SCHEMA_VERSION == 2


def test_a_version_1_grade_reads_in_the_version_2_shape() -> None:
    result = SampleResult.model_validate(V1_LINE)
    grade = result.grades["answer"]
    assert [t.turn for t in grade.per_turn_grades or []] == [0, 1]
    assert grade.metadata["turns_passed"] == 1 and grade.metadata["turns_total"] == 2
    assert (grade.turns_passed, grade.turns_total) == (1, 2)
    dumped = result.model_dump(mode="json")
    assert dumped["schema_version"] == 2 and "per_turn" not in dumped["grades"]["answer"]
    assert dumped["grades"]["answer"]["per_turn_grades"][1] == {
        "turn": 1, "score": 0.0, "rationale": "missing", "submission": "80", "ground_truth": "5432"}
    # a version-2 line is read unchanged
    again = SampleResult.model_validate(dumped)
    assert again.grades["answer"].model_dump() == grade.model_dump()


def test_version_2_grade_shape_matches_letta_evals() -> None:
    grade = Grade.model_validate({"score": 0.5, "per_turn_grades": [{"turn": 0, "score": 1.0}],
                                  "metadata": {"turns_passed": 1, "turns_total": 2}})
    assert grade.per_turn_grades is not None and grade.per_turn_grades[0].turn == 0
    assert grade.turns_passed == 1


def _v1_folder(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "results.jsonl").write_text(json.dumps(V1_LINE) + "\n", encoding="utf-8")
    return folder


def test_report_and_compare_read_version_1_results(tmp_path: Path) -> None:
    old = _v1_folder(tmp_path, "old")
    report = run_cli("report", str(old))
    assert report.returncode in (0, 1, 3), report.stderr
    assert "0.50 (1/2)" in report.stdout
    new_line = SampleResult.model_validate(V1_LINE).model_dump(mode="json")
    new = tmp_path / "new"
    new.mkdir()
    (new / "results.jsonl").write_text(json.dumps(new_line) + "\n", encoding="utf-8")
    compared = run_cli("compare", str(old), str(new), "--json")
    assert compared.returncode == 0, compared.stderr
    body = json.loads(compared.stdout)
    assert body["graders"][0]["grader"] == "answer"


def test_exporters_number_turns_from_1_for_people_from_either_version() -> None:
    for line in (V1_LINE, SampleResult.model_validate(V1_LINE).model_dump(mode="json")):
        result = SampleResult.model_validate(line)
        failure = build_junit([result], None).find(".//failure")
        assert failure is not None and "(1/2 turns passed)" in (failure.text or "")
        assert "turn 2: score 0.00: missing" in (failure.text or "") and "turn 1:" not in (failure.text or "")
        page = render_html([result], RunSummary(suite="s"))
        assert "grades of turn 2" in page


def test_run_writes_the_letta_shape_and_a_turn_passes_at_its_graders_threshold(server: ScriptedServer,
                                                                                tmp_path: Path) -> None:
    (tmp_path / "partial.py").write_text(
        "from evals_cli import grader\n\n"
        "@grader\n"
        "def partial(sample, submission):\n"
        "    return (1.0 if sample.ground_truth in submission else 0.6), 'scored'\n", encoding="utf-8")
    rows = [{"id": "conv", "input": ["first: host?", "second: port?", "third: user?"],
             "ground_truth": ["localhost", "5432", "admin"]}]
    server.script = agent_script({"first": [text("localhost")], "second": [text("80")], "third": [text("admin")]})
    graders = {"strict": {"kind": "tool", "function": "partial.py:partial"},
               "lenient": {"kind": "tool", "function": "partial.py:partial", "threshold": 0.5}}
    suite = write_suite(tmp_path, rows, base_url=server.url, graders=graders)  # gate pass value 0.8
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    [line] = read_jsonl(out / "results.jsonl")
    assert line["schema_version"] == 2
    strict, lenient = line["grades"]["strict"], line["grades"]["lenient"]
    assert [t["turn"] for t in strict["per_turn_grades"]] == [0, 1, 2]
    assert set(strict["per_turn_grades"][1]) >= {"turn", "score", "rationale", "submission", "ground_truth"}
    assert (strict["metadata"]["turns_passed"], strict["metadata"]["turns_total"]) == (2, 3)  # 0.6 < 0.8
    assert (lenient["metadata"]["turns_passed"], lenient["metadata"]["turns_total"]) == (3, 3)  # 0.6 >= 0.5


def _to_v1(line: dict[str, Any]) -> dict[str, Any]:
    """A version-2 results line written back in the version-1 shape (as a run before the bump wrote it)."""
    old = json.loads(json.dumps(line))
    old["schema_version"] = 1
    old.pop("failed_by", None)
    for grade in old["grades"].values():
        grade.pop("applicable", None)
        turns = grade.pop("per_turn_grades", None)
        if turns is not None:
            grade["per_turn"] = [{**t, "turn": t["turn"] + 1} for t in turns]
            grade["turns_passed"] = grade["metadata"].pop("turns_passed")
            grade["turns_total"] = grade["metadata"].pop("turns_total")
    return old


PER_TURN_ROWS = [{"id": f"c{i}", "input": ["first: host?", "second: port?"], "ground_truth": ["localhost", "5432"]}
                 for i in range(6)]


def _per_turn_suite(server: ScriptedServer, tmp_path: Path) -> Path:
    server.script = agent_script({"first": [text("localhost")], "second": [text("80")]})
    return write_suite(tmp_path, PER_TURN_ROWS, base_url=server.url,
                       graders={"answer": {"kind": "tool", "function": "contains"}})


def _downgrade(folder: Path, keep: int | None = None) -> None:
    path = folder / "results.jsonl"
    lines = [_to_v1(line) for line in read_jsonl(path)][:keep]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_merge_joins_a_version_1_shard_with_a_version_2_shard(server: ScriptedServer, tmp_path: Path) -> None:
    suite = _per_turn_suite(server, tmp_path)
    for k in (1, 2):
        assert run_cli("run", str(suite), "--shard", f"{k}/2", "-o", str(tmp_path / f"s{k}")).returncode in (0, 1)
    _downgrade(tmp_path / "s1")
    merged = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "m"))
    assert merged.returncode in (0, 1), merged.stderr
    lines = read_jsonl(tmp_path / "m" / "results.jsonl")
    assert len(lines) == 6 and all(line["schema_version"] == 2 for line in lines)
    for line in lines:
        grade = line["grades"]["answer"]
        assert [t["turn"] for t in grade["per_turn_grades"]] == [0, 1]
        assert (grade["metadata"]["turns_passed"], grade["metadata"]["turns_total"]) == (1, 2)


def test_resume_continues_a_version_1_results_file(server: ScriptedServer, tmp_path: Path) -> None:
    suite = _per_turn_suite(server, tmp_path)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out)).returncode in (0, 1)
    _downgrade(out, keep=3)  # an older run, stopped after 3 samples
    resumed = run_cli("run", str(suite), "--resume", str(out))
    assert resumed.returncode in (0, 1), resumed.stderr
    results = [SampleResult.model_validate(line) for line in read_jsonl(out / "results.jsonl")]
    assert sorted(r.sample_id for r in results) == [r["id"] for r in PER_TURN_ROWS]
    assert all(r.grades["answer"].turns_total == 2 for r in results)
    report = run_cli("report", str(out))
    assert report.stdout.count("0.50 (1/2)") == 6
