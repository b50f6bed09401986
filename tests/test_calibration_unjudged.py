"""Labels given to items the judge never gave a verdict on: an answer that was empty (failed with no answer, the
judge never asked) or a judge error. They are left out of the comparison and counted for what they are, never an
exit 2 (a per-turn sample's empty turn included) and never called a judge error when no judge erred."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.calibration_runs import RUBRIC, judge, label_line, write_labels
from tests.helpers import run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

ROWS = [
    {"id": "a1", "input": "alpha?", "ground_truth": "x"},
    {"id": "a2", "input": "beta?", "ground_truth": "x"},
    {"id": "conv", "input": ["first?", "second?"], "ground_truth": ["x", "y"]},
]
ANSWERS = {"alpha": "good alpha", "beta": "", "first": "good first", "second": ""}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("unjudged")
    server = ScriptedServer().start()
    try:
        server.script = agent_script({k: [text(v)] for k, v in ANSWERS.items()}, judge=judge)
        (folder / "rubric.j2").write_text(RUBRIC, encoding="utf-8")
        suite = write_suite(folder, ROWS, base_url=server.url, concurrency=1,
                            graders={"quality": {"kind": "model_judge", "rubric": "rubric.j2"}})
        result = run_cli("run", str(suite), "-o", str(folder / "run"))
        assert result.returncode in (0, 1), result.stdout + result.stderr
    finally:
        server.stop()
    return folder / "run"


def test_labels_on_items_failed_with_no_answer_are_counted_not_refused(run: Path, tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl", [
        label_line("a1", "quality", None, "pass"),
        label_line("a2", "quality", None, "fail"),  # the empty answer: never judged
        label_line("conv", "quality", 0, "pass"),
        label_line("conv", "quality", 1, "fail"),  # the per-turn sample's empty turn: this was an exit 2
    ])
    result = run_cli("calibrate", str(run), "--labels", str(labels), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    quality = data["graders"]["quality"]
    assert quality["n"] == 2 and quality["no_answer"] == 2
    notes = " ".join(data["notes"])
    assert "line 2, 4: 2 labels left out, on items that failed with no answer: not the judge's verdict" in notes
    assert "judge error" not in notes


def test_the_text_view_says_the_same(run: Path, tmp_path: Path) -> None:
    labels = write_labels(tmp_path / "labels.jsonl", [label_line("a1", "quality", None, "pass"),
                                                      label_line("a2", "quality", None, "fail")])
    result = run_cli("calibrate", str(run), "--labels", str(labels))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "failed with no answer: not the judge's verdict" in " ".join(result.stdout.split())


def test_two_judges_show_the_pass_mark_that_differs(tmp_path: Path) -> None:
    """The same rubric and judge, another pass mark: the table must say so, or the rubric gets the credit."""
    from tests.calibration_runs import judged_run

    server = ScriptedServer().start()
    try:
        a = judged_run(server, tmp_path / "a")
        b = judged_run(server, tmp_path / "b", threshold=0.95)
    finally:
        server.stop()
    labels = write_labels(tmp_path / "labels.jsonl", [label_line("a1", "quality", None, "pass"),
                                                      label_line("a2", "quality", None, "fail"),
                                                      label_line("conv", "quality", 0, "pass")])
    out = run_cli("calibrate", str(a), str(b), "--labels", str(labels), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    quality = json.loads(out.stdout)["graders"]["quality"]
    assert quality["differs"] == ["the pass mark (A ≥ 0.5, B ≥ 0.95)"]
    assert quality["samples"] == 3
    assert quality["b"]["pass_mark"] == {"op": "gte", "mark": 0.95, "scope": "conversation"}
    shown = " ".join(run_cli("calibrate", str(a), str(b), "--labels", str(labels)).stdout.split())
    assert "the judges differ in the pass mark (A ≥ 0.5, B ≥ 0.95)" in shown and "pass mark" in shown


def test_a_clipped_correction_is_flagged_in_the_run_its_summary_and_calibrate(tmp_path: Path) -> None:
    """The issue's case as a calibrated run: the judge passes every item, its labels say tpr 0.95 and tnr 0.80, so
    the raw correction is 1.07. It was clipped to 1.00 and printed like any estimate, with a [1.00, 1.00] interval."""
    from tests.scripted_server import judge_score

    rows = [{"id": f"s{i}", "input": f"q{i}?", "ground_truth": "x"} for i in range(10)]
    labels = [("pass", "pass")] * 19 + [("pass", "fail")] + [("fail", "fail")] * 16 + [("fail", "pass")] * 4
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(
        {"sample_id": f"l{i}", "grader": "quality", "label": human, "judge": judge,
         "score": 0.9 if judge == "pass" else 0.1}) + "\n" for i, (human, judge) in enumerate(labels)))
    (tmp_path / "rubric.j2").write_text(RUBRIC, encoding="utf-8")
    server = ScriptedServer().start()
    try:
        server.script = agent_script({f"q{i}": [text("an answer")] for i in range(10)},
                                     judge=lambda body: judge_score(9, "fine"))
        suite = write_suite(tmp_path, rows, base_url=server.url, graders={
            "quality": {"kind": "model_judge", "rubric": "rubric.j2", "calibration": "labels.jsonl"}})
        result = run_cli("run", str(suite), "-o", str(tmp_path / "run"))
    finally:
        server.stop()
    assert result.returncode in (0, 1), result.stdout + result.stderr
    shown = " ".join(result.stdout.split())
    assert "corrected 1.00 (clipped from 1.07: the calibration does not fit this run)" in shown
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())["calibration"]["quality"]
    assert saved["clipped"] is True and saved["raw_corrected_pass_rate"] == pytest.approx(0.8 / 0.75)
    assert saved["ci"][1] == 1.0 and saved["ci"][0] < 0.85  # ten unanimous items leave doubt
