"""Calibrated runs (issue 27, item 3): a judge grader naming `calibration: labels.jsonl` (labels from an earlier run
of the same grader) makes every run print, beside the judge's raw pass rate, the rate corrected for the judge's
errors and its interval, and write them to summary.json; labels made against another rubric or judge model warn;
a calibration file that cannot serve is refused before any model call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from evals_cli.calibration.calibrate import measure
from tests.calibration_runs import JUDGE_VERDICT, judged_run, label_line, write_labels
from tests.helpers import read_jsonl, run_cli
from tests.scripted_server import ScriptedServer

# the person's verdicts on the earlier run's quality items: the judge passes a3, which the person fails
HUMAN = {"a1": "pass", "a2": "fail", "a3": "fail", "a4": "fail"}


def labelled_earlier_run(server: ScriptedServer, folder: Path) -> Path:
    """An earlier run whose quality items a1-a4 were labelled with `evals label` (so the labels record the
    judge's verdicts and fingerprint); returns the labels file."""
    earlier = judged_run(server, folder)
    keys = "".join(HUMAN[s][0] + "\n" for s in ("a1", "a2", "a3", "a4")) + "q\n"
    result = run_cli("label", str(earlier), "--grader", "quality", input=keys)
    assert result.returncode == 0, result.stdout + result.stderr
    return earlier / "labels.jsonl"


def test_a_calibrated_run_prints_and_saves_the_corrected_pass_rate(server: ScriptedServer, tmp_path: Path) -> None:
    labels = labelled_earlier_run(server, tmp_path / "earlier")
    later = tmp_path / "later"
    later.mkdir()
    shutil.copy(labels, later / "labels.jsonl")
    run = judged_run(server, later, calibration="labels.jsonl")
    summary = json.loads((run / "summary.json").read_text())
    saved = summary["calibration"]["quality"]
    # the judge's verdicts on the labelled items are those the labels recorded; the rate corrected is this run's
    pairs = [(JUDGE_VERDICT[(s, "quality", None)] == "pass", HUMAN[s] == "pass") for s in ("a1", "a2", "a3", "a4")]
    expected = measure(pairs, 3, 6)
    assert (saved["n"], saved["tp"], saved["fp"], saved["fn"], saved["tn"]) == (4, 1, 1, 0, 2)
    assert saved["tpr"] == 1.0 and saved["tnr"] == pytest.approx(2 / 3)
    assert saved["observed_pass_rate"] == pytest.approx(0.5) and saved["judged"] == 6
    assert saved["corrected_pass_rate"] == pytest.approx(expected.corrected_pass_rate)
    assert saved["corrected_pass_rate"] == pytest.approx((0.5 + 2 / 3 - 1) / (1 + 2 / 3 - 1))
    assert saved["labels"].endswith("labels.jsonl")
    assert any("few labels: 1 item labelled pass and 3 labelled fail" in w for w in saved["warnings"])
    assert "replies" not in summary["calibration"]  # only the grader that names labels is calibrated
    shown = run_cli("report", str(run))
    assert "judge quality: pass rate 0.50 as judged (6 items), corrected 0.25" in shown.stdout
    assert "calibrated on 4 labels of" in shown.stdout and "tpr 1.00, tnr 0.67" in shown.stdout


def test_the_run_itself_prints_the_corrected_rate(server: ScriptedServer, tmp_path: Path) -> None:
    labels = labelled_earlier_run(server, tmp_path / "earlier")
    later = tmp_path / "later"
    run_folder = judged_run(server, later)  # writes the suite; run it again with the calibration named
    shutil.copy(labels, later / "labels.jsonl")
    suite = yaml.safe_load((later / "suite.yaml").read_text())
    suite["graders"]["quality"]["calibration"] = "labels.jsonl"
    (later / "suite.yaml").write_text(yaml.safe_dump(suite))
    result = run_cli("run", str(later / "suite.yaml"), "-o", str(run_folder.parent / "again"))
    assert "judge quality: pass rate 0.50 as judged (6 items), corrected 0.25" in result.stdout
    assert "warning: few labels" in result.stdout


def test_labels_of_another_rubric_or_model_warn(server: ScriptedServer, tmp_path: Path) -> None:
    labels = labelled_earlier_run(server, tmp_path / "earlier")
    later = tmp_path / "later"
    later.mkdir()
    shutil.copy(labels, later / "labels.jsonl")
    run = judged_run(server, later, rubric_text="Grade it harder.\nAnswer: {{ submission }}\n",
                     calibration="labels.jsonl")
    warnings = json.loads((run / "summary.json").read_text())["calibration"]["quality"]["warnings"]
    assert any("4 labels of" in w and "were given against another judge: the rubric differs" in w for w in warnings)
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(labels, model / "labels.jsonl")
    run = judged_run(server, model, calibration="labels.jsonl", model="another-judge")
    warnings = json.loads((run / "summary.json").read_text())["calibration"]["quality"]["warnings"]
    assert any("the judge model (scripted, now another-judge) differs" in w for w in warnings)


@pytest.mark.parametrize("lines,expected", [
    (None, "graders.quality: calibration: "),
    ([label_line("a1", "quality", None, "pass")], "no judge verdict recorded (score or judge)"),
    ([label_line("a1", "tone", None, "pass", score=0.9)], "has no label for the grader 'quality' (it labels tone)"),
    (["{broken"], "labels.jsonl:1: not JSON"),
])
def test_a_calibration_file_that_cannot_serve_is_refused_before_any_call(
        server: ScriptedServer, tmp_path: Path, lines: list[str] | None, expected: str) -> None:
    if lines is not None:
        write_labels(tmp_path / "labels.jsonl", lines)
    folder = tmp_path
    with pytest.raises(AssertionError):  # judged_run asserts the run finished: it must not have
        judged_run(server, folder, calibration="labels.jsonl")
    assert server.requests == []  # refused before the first model call
    result = run_cli("run", str(folder / "suite.yaml"), "-o", str(folder / "out"))
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr
    checked = run_cli("validate", str(folder / "suite.yaml"))
    assert checked.returncode == 2 and expected in checked.stderr


def test_naming_labels_leaves_the_suite_fingerprint_alone(server: ScriptedServer, tmp_path: Path) -> None:
    """Labels to correct a pass rate with do not change what the results mean: a run resumes across adding them."""
    labels = labelled_earlier_run(server, tmp_path / "earlier")
    earlier = tmp_path / "earlier" / "run"
    shutil.copy(labels, tmp_path / "earlier" / "cal.jsonl")
    suite_path = tmp_path / "earlier" / "suite.yaml"
    suite = yaml.safe_load(suite_path.read_text())
    suite["graders"]["quality"]["calibration"] = "cal.jsonl"
    suite_path.write_text(yaml.safe_dump(suite))
    (earlier / "summary.json").unlink()
    lines = read_jsonl(earlier / "results.jsonl")
    (earlier / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines[:3]))
    result = run_cli("run", str(suite_path), "--resume", str(earlier))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert len(read_jsonl(earlier / "results.jsonl")) == 5
    saved = json.loads((earlier / "summary.json").read_text())["calibration"]["quality"]
    assert saved["judged"] == 6  # the resumed results count too


def test_answers_with_nothing_to_judge_count_as_fails_in_both_rates(server: ScriptedServer, tmp_path: Path) -> None:
    """A perfect judge on 2 good answers and 4 empty ones: the grader passes 2 of 6. The empty answers were failed
    without asking the judge; left out, the observed and corrected rates both read 1.00 (found in review)."""
    from tests.helpers import write_suite
    from tests.scripted_server import agent_script, judge_score, text

    rows = [{"id": f"s{i}", "input": f"q{i}?", "ground_truth": "x"} for i in range(6)]
    server.script = agent_script({f"q{i}": [text("good answer" if i < 2 else "")] for i in range(6)},
                                 judge=lambda body: judge_score(9, "fine"))
    (tmp_path / "rubric.j2").write_text("Grade.\nAnswer: {{ submission }}\n", encoding="utf-8")
    labels = [{"sample_id": f"p{i}", "grader": "quality", "label": "pass", "judge": "pass", "score": 0.9}
              for i in range(25)]
    labels += [{"sample_id": f"f{i}", "grader": "quality", "label": "fail", "judge": "fail", "score": 0.1}
               for i in range(25)]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(line) + "\n" for line in labels), encoding="utf-8")
    suite = write_suite(tmp_path, rows, base_url=server.url, graders={
        "quality": {"kind": "model_judge", "rubric": "rubric.j2", "calibration": "labels.jsonl"}})
    result = run_cli("run", str(suite), "-o", str(tmp_path / "run"))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())["calibration"]["quality"]
    assert (saved["judged"], saved["no_answer"]) == (2, 4)
    assert saved["observed_pass_rate"] == pytest.approx(2 / 6)
    assert saved["corrected_pass_rate"] == pytest.approx(2 / 6)  # tpr = tnr = 1: nothing to correct
    # two judged items leave doubt of their own (the old bootstrap said [0.33, 0.33]); the certain fails cap it
    assert saved["ci"][1] == pytest.approx(2 / 6) and saved["ci"][0] < 0.25
    assert "as judged (2 items and 4 with no answer to judge (failed))" in result.stdout


def test_measure_corrects_the_judged_share_only() -> None:
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, False)] * 15  # tpr 1, tnr 0.75
    out = measure(pairs, passed=3, judged=6, no_answer=2)
    assert out.observed_pass_rate == pytest.approx(3 / 8)
    assert out.corrected_pass_rate == pytest.approx((0.5 + 0.75 - 1) / (1 + 0.75 - 1) * 6 / 8)
    assert out.ci is not None and out.ci[1] <= 6 / 8 + 1e-9  # the certain fails bound it from above
