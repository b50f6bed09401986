"""`evals calibrate RUN --pool OTHER`: the labels of several runs of the same judge measure it together (tpr and
tnr over more items); RUN's pass rate is the one corrected. A pooled run of another judge (here another pass mark)
is refused naming what differs, unless --pool-other-judges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.calibration_runs import judged_run, label_line, write_labels
from tests.helpers import run_cli
from tests.scripted_server import ScriptedServer


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("pool")
    server = ScriptedServer().start()
    try:
        a, b = judged_run(server, root / "a"), judged_run(server, root / "b")
        other = judged_run(server, root / "c", threshold=0.95)
    finally:
        server.stop()
    write_labels(a / "labels.jsonl", [label_line("a1", "quality", None, "pass"),
                                      label_line("a2", "quality", None, "fail")])
    for run in (b, other):
        write_labels(run / "labels.jsonl", [label_line("a3", "quality", None, "fail"),  # the judge passed it
                                            label_line("a4", "quality", None, "fail"),
                                            label_line("conv", "quality", 0, "pass")])
    return a, b, other


def test_pooling_runs_of_the_same_judge_counts_every_label(runs: tuple[Path, Path, Path]) -> None:
    a, b, _ = runs
    alone = json.loads(run_cli("calibrate", str(a), "--json").stdout)["graders"]["quality"]
    pooled = run_cli("calibrate", str(a), "--pool", str(b), "--json")
    assert pooled.returncode == 0, pooled.stdout + pooled.stderr
    data = json.loads(pooled.stdout)
    quality = data["graders"]["quality"]
    assert (alone["n"], quality["n"]) == (2, 5)
    assert (quality["tp"], quality["fp"], quality["fn"], quality["tn"]) == (2, 1, 0, 2)
    assert quality["observed_pass_rate"] == alone["observed_pass_rate"]  # the pass rate corrected is a's own
    assert f"pooled 3 labels of {b / 'labels.jsonl'}" in data["notes"]


def test_a_run_of_another_judge_is_refused_unless_asked(runs: tuple[Path, Path, Path]) -> None:
    a, _, other = runs
    refused = run_cli("calibrate", str(a), "--pool", str(other))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    said = " ".join(refused.stderr.split())
    assert "the pass mark (A ≥ 0.5, B ≥ 0.95)" in said and "--pool-other-judges" in said
    asked = run_cli("calibrate", str(a), "--pool", str(other), "--pool-other-judges", "--json")
    assert asked.returncode == 0, asked.stderr
    quality = json.loads(asked.stdout)["graders"]["quality"]
    assert quality["n"] == 5 and any("pooled anyway" in w for w in quality["warnings"])
