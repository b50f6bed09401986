"""`evals label` and `evals calibrate` on real runs: judged items made by `evals run` against the scripted server
(tests/calibration_runs.py), labelled through stdin as a person would type, measured and corrected; the bad inputs
of issue 27 each a clear message naming the line, exit 2, no traceback."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evals_cli.labels import read_labels
from tests.calibration_runs import JUDGE_VERDICT, judged_run, judged_run_served, label_line, write_labels
from tests.helpers import ROOT, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

QUALITY = [("a1", None), ("a2", None), ("a3", None), ("a4", None), ("conv", 0), ("conv", 1)]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return judged_run_served(tmp_path_factory.mktemp("made"))


@pytest.fixture
def run(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of the run for each test (labelling writes into the run's folder)."""
    return Path(shutil.copytree(made, tmp_path / "run"))


def quality_labels(path: Path, human: dict[tuple[str, int | None], str]) -> Path:
    return write_labels(path, [label_line(s, "quality", t, human[(s, t)]) for s, t in QUALITY if (s, t) in human])


# --- evals label --------------------------------------------------------------------------------------------

def test_label_shows_each_judged_item_and_appends_its_label(run: Path) -> None:
    keys = "p\nf\nf\np\np\nn confuses the two\nf\n" + "p\n" * 6
    result = run_cli("label", str(run), input=keys)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "item 1 of 12 · sample a1 · grader quality · judged: the whole conversation" in out
    assert "task: alpha?" in out and "[assistant] good alpha" in out
    assert "the judge: PASS (score 0.90, passes at ≥ 0.5): says good" in out
    assert "the judge: FAIL (score 0.20, passes at ≥ 0.5): says bad" in out
    # a per-turn judge's item shows the conversation up to the judged turn, and marks it
    # turns and replies numbered from 1, as the HTML report numbers them
    assert "grader quality · judged: turn 2" in out and "turn 2  ◀ judged" in out and "turn 0" not in out
    assert "grader replies · judged: reply 1" in out and "reply 0" not in out
    assert "labelled 12 items in this session (9 pass, 3 fail, 0 skipped); 12 of 12 selected items" in out
    assert f"next: evals calibrate {run}\n" in out  # the run's own labels.jsonl: read by default
    # what the judge read: the rubric's criteria and the answer, without the data fences
    assert "what the judge read" in out and "Grade the answer.\nAnswer: good alpha" in out and "<data-" not in out
    lines = read_jsonl(run / "labels.jsonl")
    assert len(lines) == 12
    first = lines[0]
    assert {k: first[k] for k in ("sample_id", "repeat", "grader", "turn", "label", "note")} == \
        {"sample_id": "a1", "repeat": 0, "grader": "quality", "turn": None, "label": "pass", "note": ""}
    assert first["judge"] == "pass" and first["score"] == 0.9 and len(first["item"]) == 16
    assert first["fingerprint"]["model"] == "scripted" and first["fingerprint"]["scale"] == "1-10"
    for line in lines:  # what the judge said is recorded with every label
        assert line["judge"] == JUDGE_VERDICT[(line["sample_id"], line["grader"], line["turn"])]
    noted = [line for line in lines if line["note"]]
    assert [(n["sample_id"], n["turn"], n["label"], n["note"]) for n in noted] == \
        [("conv", 1, "fail", "confuses the two")]


def test_label_resumes_where_it_stopped_and_back_relabels(run: Path) -> None:
    first = run_cli("label", str(run), input="p\nf\nq\n")
    assert first.returncode == 0 and len(read_jsonl(run / "labels.jsonl")) == 2
    second = run_cli("label", str(run), input="s\np\nb\nf\nq\n")
    assert "resuming: 2 of 12 items are already labelled" in second.stdout
    assert second.stdout.index("item 3 of 12 · sample a3") < second.stdout.index("item 4 of 12 · sample a4")
    labels = read_jsonl(run / "labels.jsonl")
    # a3 skipped (no line), a4 labelled pass, then back to a4 and relabelled fail: appended, the later wins
    assert [(line["sample_id"], line["label"]) for line in labels] == \
        [("a1", "pass"), ("a2", "fail"), ("a4", "pass"), ("a4", "fail")]
    read = read_labels(run / "labels.jsonl")
    assert read.latest()[("a4", 0, "quality", None)].label == "fail"
    assert any("labels the same item as line 3" in note for note in read.notes)
    assert "(0 pass, 1 fail, 1 skipped)" in second.stdout  # the relabel replaces the count it made
    third = run_cli("label", str(run), input="q\n")
    assert "item 3 of 12 · sample a3" in third.stdout  # the skipped item comes back


def test_label_one_grader_a_seeded_sample_and_another_labels_file(run: Path, tmp_path: Path) -> None:
    labels = tmp_path / "mine.jsonl"
    args = ("label", str(run), "--grader", "replies", "--sample", "3", "--seed", "4", "--labels", str(labels))
    result = run_cli(*args, input="p\np\np\n")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = read_jsonl(labels)
    assert len(lines) == 3 and {line["grader"] for line in lines} == {"replies"}
    assert not (run / "labels.jsonl").exists()
    again = run_cli(*args, input="")  # the same seed draws the same three: all done
    assert "every one of the 3 items is labelled" in again.stdout
    other = run_cli("label", str(run), "--grader", "replies", "--sample", "3", "--seed", "5", "--labels", str(labels),
                    input="q\n")
    assert "item" in other.stdout  # another seed, another draw


def test_label_only_disagreements_of_a_labels_file(run: Path) -> None:
    labels = quality_labels(run / "labels.jsonl", {("a1", None): "pass", ("a2", None): "pass", ("a3", None): "fail",
                                                   ("a4", None): "fail"})
    result = run_cli("label", str(run), "--only", "disagreements-of", str(labels), input="f\np\n")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sample a2" in result.stdout and "sample a3" in result.stdout
    assert "sample a1" not in result.stdout and "sample a4" not in result.stdout
    lines = read_jsonl(labels)
    assert [(line["sample_id"], line["label"], line.get("review")) for line in lines[4:]] == \
        [("a2", "fail", True), ("a3", "pass", True)]
    again = run_cli("label", str(run), "--only", "disagreements-of", str(labels), input="")
    assert "nothing to label: the labels file agrees with the judge on every item" in again.stdout
    bad = run_cli("label", str(run), "--only", "agreements-of", str(labels))
    assert bad.returncode == 2 and "--only agreements-of: choose disagreements-of FILE" in bad.stderr


def test_label_reads_single_keys_from_a_real_terminal(run: Path) -> None:
    """In a terminal each key acts at once, no Enter: the labeller puts the terminal in cbreak mode for each key."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_"))}
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "TERM": "xterm"})
    proc = subprocess.Popen([sys.executable, "-m", "evals_cli", "label", str(run)], stdin=slave, stdout=slave,
                            stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    seen = b""

    def until(marker: bytes, count: int) -> None:
        nonlocal seen
        deadline = time.monotonic() + 30
        while seen.count(marker) < count and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        assert seen.count(marker) >= count, seen.decode(errors="replace")[-2000:]

    try:
        until(b"[q]uit", 1)
        os.write(master, b"p")  # one key, no newline
        until(b"[q]uit", 2)
        os.write(master, b"f")
        until(b"[q]uit", 3)
        os.write(master, b"q")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert [(line["sample_id"], line["label"]) for line in read_jsonl(run / "labels.jsonl")] == \
        [("a1", "pass"), ("a2", "fail")]


# --- evals calibrate ----------------------------------------------------------------------------------------

HUMAN = {("a1", None): "pass", ("a2", None): "pass", ("a3", None): "fail", ("a4", None): "fail",
         ("conv", 0): "pass", ("conv", 1): "fail"}


def test_calibrate_json_gives_the_figures_per_judge(run: Path) -> None:
    from sklearn.metrics import cohen_kappa_score

    labels = quality_labels(run / "labels.jsonl", HUMAN)
    with labels.open("a") as fh:  # the per-reply judge: 4 of its 6 items labelled, all as the judge said
        for sample in ("a1", "a2", "a3", "a4"):
            fh.write(label_line(sample, "replies", 0, JUDGE_VERDICT[(sample, "replies", 0)]) + "\n")
    result = run_cli("calibrate", str(run), "--labels", str(labels), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    quality = data["graders"]["quality"]
    assert {k: quality[k] for k in ("n", "tp", "fp", "fn", "tn")} == {"n": 6, "tp": 2, "fp": 1, "fn": 1, "tn": 2}
    assert quality["tpr"] == pytest.approx(2 / 3) and quality["tnr"] == pytest.approx(2 / 3)
    keys = [(s, t) for s, t in QUALITY]
    judge = [int(JUDGE_VERDICT[(s, "quality", t)] == "pass") for s, t in keys]
    human = [int(HUMAN[k] == "pass") for k in keys]
    assert quality["kappa"] == pytest.approx(cohen_kappa_score(human, judge))
    assert quality["observed_pass_rate"] == pytest.approx(0.5)
    assert quality["corrected_pass_rate"] == pytest.approx((0.5 + 2 / 3 - 1) / (2 / 3 + 2 / 3 - 1))
    # six labels of a weak judge: the interval says how little they tell (the few-labels warning says why)
    assert quality["ci"] is not None and quality["ci"][0] < 0.1 and quality["ci"][1] > 0.9
    assert any("few labels" in w for w in quality["warnings"])
    assert any("few labels: 3 items labelled pass and 3 labelled fail" in w for w in quality["warnings"])
    assert [(d["sample_id"], d["label"], d["judge"]) for d in quality["disagreements"]] == \
        [("a2", "pass", "fail"), ("a3", "fail", "pass")]
    replies = data["graders"]["replies"]
    assert (replies["n"], replies["tpr"], replies["tnr"], replies["kappa"]) == (4, 1.0, 1.0, 1.0)
    assert replies["observed_pass_rate"] == pytest.approx(0.5)  # over all 6 judged replies, labelled or not
    assert replies["corrected_pass_rate"] == pytest.approx(0.5)


def test_calibrate_prints_table_matrix_leniency_and_disagreements(run: Path) -> None:
    labels = quality_labels(run / "labels.jsonl", HUMAN)
    result = run_cli("calibrate", str(run), "--labels", str(labels))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "judges against your labels" in out and "corrected" in out and "kappa" in out
    assert "you: pass" in out and "you: fail" in out and "judge pass" in out
    assert "quality: the judge passes 1 of the 3 items you failed; it fails 1 of the 3 items you passed" in out
    assert "quality: 2 disagreements:" in out
    assert "a2: you pass, the judge fail (score 0.20): says bad" in out
    assert "a3: you fail, the judge pass (score 0.90): says good" in out
    assert "warning: few labels: 3 items labelled pass and 3 labelled fail (fewer than 20 of either class)" in out


def test_calibrate_refuses_to_correct_a_judge_no_better_than_chance(run: Path) -> None:
    opposite = {k: "fail" if JUDGE_VERDICT[(k[0], "quality", k[1])] == "pass" else "pass" for k in HUMAN}
    labels = quality_labels(run / "labels.jsonl", opposite)
    data = json.loads(run_cli("calibrate", str(run), "--labels", str(labels), "--json").stdout)["graders"]["quality"]
    assert data["tpr"] == 0 and data["tnr"] == 0 and data["corrected_pass_rate"] is None and data["ci"] is None
    assert data["refused"].startswith("the judge is no better than chance")
    text = run_cli("calibrate", str(run), "--labels", str(labels))
    assert text.returncode == 0 and "no corrected rate: the judge is no better than chance" in text.stdout


def test_duplicate_labels_the_later_wins_with_a_note(run: Path) -> None:
    labels = write_labels(run / "labels.jsonl", [label_line("a1", "quality", None, "fail"),
                                                 label_line("a2", "quality", None, "fail"),
                                                 label_line("a1", "quality", None, "pass")])
    result = run_cli("calibrate", str(run), "--labels", str(labels))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"note: {labels}:3 labels the same item as line 1 (sample a1, repeat 0, grader quality): the later " \
           "label (pass) counts" in result.stdout
    data = json.loads(run_cli("calibrate", str(run), "--labels", str(labels), "--json").stdout)
    assert (data["graders"]["quality"]["tp"], data["graders"]["quality"]["tn"]) == (1, 1)


def test_compare_two_judges_on_the_same_labels(server: ScriptedServer, tmp_path: Path) -> None:
    """Judge B's rubric says STRICT: it also fails 'good gamma', which the person failed too."""
    lenient = judged_run(server, tmp_path / "a")

    def strict(body: dict) -> object:
        from tests.scripted_server import judge_score

        graded = str(body["messages"][1]["content"])
        passed = "good" in graded and ("STRICT" not in graded or "gamma" not in graded)
        return judge_score(9 if passed else 2, "strict verdict")

    strict_run = judged_run(server, tmp_path / "b", rubric_text="STRICT\nAnswer: {{ submission }}\n")
    # rerun B's judging with the strict judge: the same answers, another judge
    shutil.rmtree(strict_run)
    from tests.calibration_runs import ANSWERS

    server.script = agent_script({k: [text(v)] for k, v in ANSWERS.items()}, judge=strict)
    result = run_cli("run", str(tmp_path / "b" / "suite.yaml"), "-o", str(strict_run))
    assert result.returncode in (0, 1), result.stderr
    labels = quality_labels(tmp_path / "labels.jsonl", {k: ("fail" if k[0] in ("a2", "a3", "a4") or k == ("conv", 1)
                                                            else "pass") for k in HUMAN})
    out = run_cli("calibrate", str(lenient), str(strict_run), "--labels", str(labels), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    quality = json.loads(out.stdout)["graders"]["quality"]
    assert quality["a"]["agreement"] == pytest.approx(5 / 6) and quality["b"]["agreement"] == 1.0
    assert quality["a"]["tnr"] == pytest.approx(3 / 4) and quality["b"]["tnr"] == 1.0
    assert quality["a"]["rubric"] != quality["b"]["rubric"]
    assert quality["agreement_difference"] == pytest.approx(1 / 6)
    low, high = quality["ci"]
    assert low <= 1 / 6 <= high and low >= 0
    shown = run_cli("calibrate", str(lenient), str(strict_run), "--labels", str(labels))
    assert "agreement B − A = +0.17" in shown.stdout and "kappa" in shown.stdout and "tnr" in shown.stdout


# --- bad input ----------------------------------------------------------------------------------------------

def no_traceback(result: object) -> None:
    assert "Traceback" not in result.stdout + result.stderr  # type: ignore[attr-defined]


@pytest.mark.parametrize("lines,expected", [
    ([label_line("a1", "quality", None, "pass"), label_line("zz", "quality", None, "pass")],
     "labels.jsonl:2: sample_id: zz is not a sample of"),
    ([label_line("a1", "qualty", None, "pass")], "labels.jsonl:1: grader: qualty is not a judge grader of"),
    ([label_line("a1", "quality", 2, "pass")], "labels.jsonl:1: turn: 2, but quality judges the whole conversation"),
    ([label_line("conv", "quality", None, "pass")], "labels.jsonl:1: turn: null, but quality judges sample conv turn "
                                                    "by turn"),
    ([label_line("conv", "replies", 7, "pass")], "labels.jsonl:1: turn: 7: replies judged no such turn or reply of "
                                                 "sample conv"),
    ([json.dumps({"sample_id": "a1", "repeat": 3, "grader": "quality", "turn": None, "label": "pass"})],
     "labels.jsonl:1: repeat: 3: sample a1 has no such repeat"),
    ([label_line("x1", "quality", None, "pass"), label_line("x2", "quality", None, "fail")],
     "none of its 2 labelled items is a sample of"),
    ([label_line("a1", "quality", None, "pass", item="0123456789abcdef")],
     "was given to another answer than"),
    ([], "no labels in it (an empty file)"),
    (["{not json"], "labels.jsonl:1: not JSON"),
    ([label_line("a1", "quality", None, "maybe")], 'labels.jsonl:1: label: "maybe" is not a label; give "pass" or '
                                                   '"fail"'),
    ([label_line("a1", "quality", None, "skip")], "(a skipped item has no line)"),
    ([json.dumps({"sample_id": "a1", "repeat": "0", "grader": "quality", "label": "pass"})],
     'labels.jsonl:1: repeat: "0" is not a repeat index'),
    ([json.dumps({"repeat": 0, "grader": "quality", "label": "pass"})], "labels.jsonl:1: sample_id: missing"),
])
def test_bad_labels_are_refused_naming_the_line(run: Path, lines: list[str], expected: str) -> None:
    labels = write_labels(run / "labels.jsonl", lines)
    result = run_cli("calibrate", str(run), "--labels", str(labels))
    assert result.returncode == 2, result.stdout + result.stderr
    assert expected in result.stderr, result.stderr
    no_traceback(result)


def test_missing_labels_file_and_unknown_grader_option(run: Path) -> None:
    result = run_cli("calibrate", str(run), "--labels", str(run / "nope.jsonl"))
    assert result.returncode == 2 and "nope.jsonl: no such labels file" in result.stderr
    labels = quality_labels(run / "labels.jsonl", HUMAN)
    other = run_cli("calibrate", str(run), "--labels", str(labels), "--grader", "tone")
    assert other.returncode == 2 and "--grader tone: not a judge grader" in other.stderr
    label = run_cli("label", str(run), "--grader", "tone")
    assert label.returncode == 2 and "--grader tone: not a judge grader" in label.stderr
    three = run_cli("calibrate", str(run), str(run), str(run), "--labels", str(labels))
    assert three.returncode == 2 and "not 3" in three.stderr


def test_a_run_without_judge_grades_is_refused(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = agent_script({"alpha": [text("good alpha")]})
    suite = write_suite(tmp_path, [{"id": "a1", "input": "alpha?", "ground_truth": "alpha"}], base_url=server.url,
                        graders={"answer": {"kind": "tool", "function": "contains"}})
    assert run_cli("run", str(suite), "-o", str(tmp_path / "run")).returncode == 0
    labels = write_labels(tmp_path / "labels.jsonl", [label_line("a1", "quality", None, "pass")])
    for args in (("label", str(tmp_path / "run")), ("calibrate", str(tmp_path / "run"), "--labels", str(labels))):
        result = run_cli(*args, input="p\n")
        assert result.returncode == 2, result.stdout
        assert "no judge grades in its results" in result.stderr and "--no-judge" in result.stderr
        no_traceback(result)
    missing = run_cli("label", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no results.jsonl" in missing.stderr


def test_comparing_two_judges_refuses_labels_given_to_other_answers(server: ScriptedServer, tmp_path: Path) -> None:
    """A single run refuses labels of another run; comparing two runs used them (kappa -1, exit 0; found in
    review)."""
    a = judged_run(server, tmp_path / "A")
    b = judged_run(server, tmp_path / "B", rubric_text="Grade strictly.\nAnswer: {{ submission }}\n")
    labels = [{"sample_id": s, "grader": "quality", "label": v, "item": "0123456789abcdef"}
              for s, v in (("a1", "fail"), ("a2", "pass"), ("a3", "fail"), ("a4", "pass"))]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(line) + "\n" for line in labels), encoding="utf-8")
    assert run_cli("calibrate", str(a), "--labels", str(other)).returncode == 2
    pair = run_cli("calibrate", str(a), str(b), "--labels", str(other), "--json")
    assert pair.returncode == 2, pair.stdout + pair.stderr
    assert "given to another answer" in pair.stderr and "Traceback" not in pair.stderr
