"""A sessions evaluation (`evals analyze`, a recorded_sessions suite) that ends with exit 3 carries no gate
verdict either: not one computed from the judge calls that happened to answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.scripted_server import Reply, ScriptedServer, text
from tests.test_sessions_judge import FIXED, judge, run


def test_judge_errors_past_the_rate_give_no_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    def answer(metric: str, *_: Any) -> Any:
        if metric == "reasoning":  # 5 of 12 judge calls give no verdict: past max_error_rate 0.2
            return Reply({"error": {"message": "overloaded"}}, status=503)
        if metric == "response_quality":
            return text("I would rather not grade this.")
        return FIXED[metric]

    server.script = judge(answer)
    passing = run(server, tmp_path, "refund-clean", max_error_rate=0.5, output=tmp_path / "ok")
    assert passing.exit_code == 0 and passing.summary is not None and passing.summary.gate is not None
    assert passing.summary.gate.passed is True  # the same grades pass the gate when the run is complete

    outcome = run(server, tmp_path, "refund-clean")
    assert outcome.exit_code == 3
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())  # the common summary
    assert summary["status"] == "aborted" and summary["exit_code"] == 3
    assert summary["gate"]["passed"] is None and summary["gate"]["metric"] is None
    assert summary["gate"]["message"].startswith("Gate not evaluated: run aborted")
    assert "judge calls gave no verdict" in summary["gate"]["message"]
    shown = outcome.summary.model_dump(mode="json")  # what `evals analyze` prints
    assert shown["status"] == "aborted" and shown["exit_code"] == 3 and shown["gate"]["passed"] is None
    assert shown["gate"]["message"].startswith("Gate not evaluated: run aborted (")
    assert "judge calls gave no verdict" in shown["gate"]["message"]
