"""The shipped demo's judges calibrated with the labels shipped beside them (suites/*.labels.jsonl, labelled by hand
from each trajectory, issue 27's closing note): the README's "Measuring the judge" example stays true, and a
re-recording that changes the answers shows here (the labels would no longer be of that run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli


def replayed(suite: str, out: Path) -> Path:
    result = run_cli("run", f"suites/{suite}.yaml", "--replay", f"suites/{suite}.recording.jsonl", "-o", str(out), "-q")
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return out


def calibrated(run: Path, labels: str) -> dict:
    result = run_cli("calibrate", str(run), "--labels", str(ROOT / "suites" / labels), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)["graders"]


def test_the_demo_judge_corrected_by_its_shipped_labels(tmp_path: Path) -> None:
    quality = calibrated(replayed("demo", tmp_path / "demo"), "demo.labels.jsonl")["quality"]
    # the judge failed server-port (right answer, 0.50): too strict once, never too lenient on these four
    assert (quality["tp"], quality["fp"], quality["fn"], quality["tn"]) == (2, 0, 1, 1)
    assert quality["observed_pass_rate"] == 0.5
    assert quality["corrected_pass_rate"] == pytest.approx(0.75)
    # four labels: the interval spans nearly everything, and the warning says why
    assert quality["ci"][0] < 0.2 and quality["ci"][1] == 1.0 and any("few labels" in w for w in quality["warnings"])


def test_the_simulated_users_judges_cannot_be_corrected_with_their_labels(tmp_path: Path) -> None:
    graders = calibrated(replayed("simulated_users", tmp_path / "sim"), "simulated_users.labels.jsonl")
    goal, replies = graders["goal"], graders["replies"]
    assert (goal["fp"], goal["tn"], goal["tpr"]) == (1, 3, None)  # no conversation met its goal
    assert goal["refused"].startswith("no item is labelled pass")
    assert (replies["tp"], replies["fp"], replies["fn"], replies["tn"]) == (2, 9, 0, 0)  # it passed every reply
    assert replies["refused"].startswith("the judge is no better than chance")
