"""Finished runs with judge grades for the calibration tests, made by `evals run` against the scripted server: the
judge passes an answer that says "good" (score 9) and fails one that says "bad" (score 2).

`judged_run` has a whole-conversation judge (`quality`, also graded turn by turn on the per-turn sample) and a
per-reply judge (`replies`): items quality a1-a4 (turn null), quality conv turns 0 and 1, replies a1-a4 reply 0,
replies conv replies 0 and 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, judge_score, text

ROWS = [
    {"id": "a1", "input": "alpha?", "ground_truth": "x"},
    {"id": "a2", "input": "beta?", "ground_truth": "x"},
    {"id": "a3", "input": "gamma?", "ground_truth": "x"},
    {"id": "a4", "input": "delta?", "ground_truth": "x"},
    {"id": "conv", "input": ["first?", "second?"], "ground_truth": ["x", "y"]},
]
ANSWERS = {"alpha": "good alpha", "beta": "bad beta", "gamma": "good gamma", "delta": "bad delta",
           "first": "good first", "second": "bad second"}
RUBRIC = "Grade the answer.\nAnswer: {{ submission }}\n"
JUDGE_VERDICT = {  # the scripted judge's verdict on each item, by key (sample, grader, turn)
    ("a1", "quality", None): "pass", ("a2", "quality", None): "fail", ("a3", "quality", None): "pass",
    ("a4", "quality", None): "fail", ("conv", "quality", 0): "pass", ("conv", "quality", 1): "fail",
    ("a1", "replies", 0): "pass", ("a2", "replies", 0): "fail", ("a3", "replies", 0): "pass",
    ("a4", "replies", 0): "fail", ("conv", "replies", 0): "pass", ("conv", "replies", 1): "fail",
}


def judge(body: dict[str, Any]) -> Any:
    graded = str(body["messages"][1]["content"])
    return judge_score(9, "says good") if "good" in graded else judge_score(2, "says bad")


def graders(rubric: str = "rubric.j2", **quality: Any) -> dict[str, Any]:
    return {"quality": {"kind": "model_judge", "rubric": rubric, **quality},
            "replies": {"kind": "model_judge", "rubric": rubric, "scope": "reply", "threshold": 0.5,
                        "required": False}}


def judged_run(server: ScriptedServer, folder: Path, *, rubric_text: str = RUBRIC, name: str = "run",
               **quality: Any) -> Path:
    """A run folder (under `folder`, which also holds the suite) with the judge grades described above."""
    server.script = agent_script({k: [text(v)] for k, v in ANSWERS.items()}, judge=judge)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rubric.j2").write_text(rubric_text, encoding="utf-8")
    suite = write_suite(folder, ROWS, base_url=server.url, graders=graders(**quality), concurrency=1,
                        gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5})
    out = folder / name
    result = run_cli("run", str(suite), "-o", str(out))
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return out


def judged_run_served(folder: Path) -> Path:
    """`judged_run` with a scripted server of its own, stopped once the run is made (module fixtures share it)."""
    server = ScriptedServer().start()
    try:
        return judged_run(server, folder)
    finally:
        server.stop()


def label_line(sample: str, grader: str, turn: int | None, label: str, **extra: Any) -> str:
    return json.dumps({"sample_id": sample, "repeat": 0, "grader": grader, "turn": turn, "label": label,
                       "note": "", **extra})


def write_labels(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
