"""The numbers the scaffold's README states come from its own replay: the README said the failing sample's weighted
score was 0.72 and reached the pass value, where the replay gives 0.65 and fails it. Each number is read from the
README and compared with what `evals run suite.yaml --replay recording.jsonl` gives."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import read_jsonl, run_cli


def test_the_scaffold_readme_states_what_its_replay_gives(tmp_path: Path) -> None:
    folder = tmp_path / "starter"
    assert run_cli("init", str(folder)).returncode == 0
    readme = " ".join((folder / "README.md").read_text(encoding="utf-8").split())
    out = tmp_path / "replayed"
    replayed = run_cli("run", "suite.yaml", "--replay", "recording.jsonl", "-o", str(out), cwd=folder,
                       env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    results = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}

    said = re.search(r"on `([\w-]+)` it cancels.*?`tool_order` scores ([\d.]+) and the judge ([\d.]+), so the "
                     r"weighted score \(([\d.]+)\) misses the pass value \(([\d.]+)\)", readme)
    assert said, "the README no longer explains the failing sample"
    sample, tool_order, judge, weighted, mark = said.groups()
    failing = results[sample]
    assert failing["passed"] is False
    assert f"{failing['grades']['tool_order']['score']:.0f}" == tool_order
    assert f"{failing['grades']['quality']['score']:.2f}" == judge
    assert f"{failing['score']:.2f}" == weighted and failing["score"] < float(mark)
    rules = {f["rule"]: f for f in failing["failed_by"]}
    assert rules["weighted"]["threshold"] == float(mark) and rules["required"]["grader"] == "tool_order"

    counts = re.search(r"(\d) of (\d) samples pass, the gate asks for (\d) in (\d): it passes and the replay "
                       r"exits (\d)", readme)
    assert counts, "the README no longer states the replay's counts"
    passed, total, need, of, code = map(int, counts.groups())
    assert (passed, total) == (sum(1 for r in results.values() if r["passed"]), len(results))
    assert f"{need / of:.2f}" in replayed.stdout and replayed.returncode == code
