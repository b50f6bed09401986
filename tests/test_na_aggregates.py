"""Issue 24 item 1: a grade with nothing to check (n/a) is not a 1.0. Every aggregate (the graders table,
summary.json's avg_score / accuracy / min / max / median / percentiles, the many-models table, `evals report`,
the HTML report, JUnit, `evals compare`) is over the samples the grader really checked; a sample's weighted
score renormalises its weights over the graders that applied, and a sample none of whose graders applied has
no weighted score (and no verdict unless a required grader decides it). `gate.not_applicable: pass` opts back
into the first-principles harness's convention (n/a counts as 1.0)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from evals_cli.compare import compare_results
from evals_cli.gate.gate import Gate
from evals_cli.models.results import Grade, SampleResult
from evals_cli.models.specs import GateSpec
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

# tool_order checks s1-s4 (an expected order) and has nothing to check on s5-s8; the agent reads the file on s1,
# s3 and s4 and guesses on s2: tool_order scores 1, 0, 1, 1 on the samples it checked. Every answer is right
# but s6's.
ROWS: list[dict[str, Any]] = [
    *({"id": f"s{i}", "input": f"s{i}: db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]}
      for i in range(1, 5)),
    *({"id": f"s{i}", "input": f"s{i}: db host?", "ground_truth": "localhost"} for i in range(5, 9)),
]
READS = [call("read_file", {"path": ".env"}), text("It is localhost.")]
GUESS = [text("It is localhost.")]
REPLIES = {"s1": READS, "s2": GUESS, "s3": READS, "s4": READS, "s5": GUESS, "s6": [text("no idea")],
           "s7": READS, "s8": GUESS}
GRADERS = {"answer": {"kind": "match", "function": "contains"}, "order": {"kind": "tool_order"}}
GATE = {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.8, "pass_value": 1.0}


def _run(server: ScriptedServer, tmp_path: Path, *extra: str, gate: dict[str, Any] | None = None,
         rows: list[dict[str, Any]] | None = None, replies: dict[str, Any] | None = None,
         graders: dict[str, Any] | None = None) -> tuple[Any, Path]:
    server.script = agent_script(replies or REPLIES)
    suite = write_suite(tmp_path, rows or ROWS, base_url=server.url, graders=graders or GRADERS, gate=gate or GATE)
    out = tmp_path / "out"
    return run_cli("run", str(suite), "-o", str(out), *extra), out


def _grader_row(stdout: str, name: str) -> list[str]:
    """The grader's row of the graders table (a reason line under the samples table may start with its name too)."""
    lines = stdout.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.strip() == "graders"):]
    return next(line.split() for line in table if line.strip().startswith(f"{name} "))


def test_tool_order_checked_on_4_of_8_averages_over_those_4(server: ScriptedServer, tmp_path: Path) -> None:
    result, out = _run(server, tmp_path, "--junit", str(tmp_path / "junit.xml"))
    summary = json.loads((out / "summary.json").read_text())
    order = summary["graders"]["order"]
    assert (order["count"], order["applicable"]) == (8, 4)
    assert order["avg_score"] == pytest.approx(0.75)  # (1 + 0 + 1 + 1) / 4, not 7 / 8
    assert order["accuracy"] == pytest.approx(0.75)
    assert (order["min"], order["max"], order["median"], order["p50"]) == (0.0, 1.0, 1.0, 1.0)
    assert order["p95"] == pytest.approx(1.0) and order["p99"] == pytest.approx(1.0)
    assert summary["gate"]["not_applicable"] == "exclude"
    # the graders table: 4 of 8 checked, avg 0.75, accuracy 0.75, min 0.00, max 1.00, median 1.00
    assert _grader_row(result.stdout, "order")[1:9] == ["4", "of", "8", "0", "0.75", "0.75", "0.00", "1.00"]
    # the gate reads the same aggregate: (answer 7/8 + order 0.75) / 2 = 0.8125
    assert summary["gate"]["metric"] == pytest.approx((7 / 8 + 0.75) / 2)
    # JUnit's run properties carry the same average
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "junit.xml").getroot().iter("property")}
    assert props["grader.order.avg_score"] == "0.75"
    # a sample's weighted score renormalises over the graders that applied: s6 (answer 0, order n/a) is 0, not 0.5
    lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    assert lines["s6"]["score"] == 0.0 and lines["s6"]["passed"] is False
    assert lines["s5"]["score"] == 1.0 and lines["s2"]["score"] == 0.5
    assert all(r["score_note"] is None for r in lines.values())

    # `evals report` shows the same table from the folder, and its HTML report the same numbers
    report = run_cli("report", str(out), "--html", str(tmp_path / "report.html"))
    assert _grader_row(report.stdout, "order")[1:9] == ["4", "of", "8", "0", "0.75", "0.75", "0.00", "1.00"]
    page = (tmp_path / "report.html").read_text()
    row = re.search(r"<tr><td>order</td>(.*?)</tr>", page, re.S)
    assert row is not None and "4 of 8" in row.group(1)
    # errors, avg, accuracy, min, median, max
    assert re.findall(r">([0-9.]+)</td>", row.group(1))[:6] == ["0", "0.75", "0.75", "0.00", "1.00", "1.00"]
    # its histogram bins the 4 checked scores, not 4 made-up 1.0s
    assert re.search(r"order <span class=\"muted\">\(4 scored\)", page)


def test_not_applicable_pass_counts_na_as_1(server: ScriptedServer, tmp_path: Path) -> None:
    result, out = _run(server, tmp_path, gate={**GATE, "not_applicable": "pass"})
    summary = json.loads((out / "summary.json").read_text())
    order = summary["graders"]["order"]
    assert (order["count"], order["applicable"]) == (8, 4)  # still says how many were really checked
    assert order["avg_score"] == pytest.approx(0.875) and order["accuracy"] == pytest.approx(0.875)
    assert summary["gate"]["not_applicable"] == "pass"
    lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    assert lines["s6"]["score"] == 0.5  # answer 0, order n/a counted as 1.0
    assert _grader_row(result.stdout, "order")[5] == "0.88"
    # a run killed before its summary: `evals report` recomputes the aggregates as the run counted them (run.json)
    (out / "summary.json").unlink()
    assert _grader_row(run_cli("report", str(out)).stdout, "order")[5] == "0.88"


def test_report_of_a_killed_run_leaves_na_out(server: ScriptedServer, tmp_path: Path) -> None:
    _, out = _run(server, tmp_path)
    (out / "summary.json").unlink()
    assert _grader_row(run_cli("report", str(out)).stdout, "order")[1:6] == ["4", "of", "8", "0", "0.75"]


def test_the_many_models_table_averages_over_the_checked_samples(server: ScriptedServer, tmp_path: Path) -> None:
    result, out = _run(server, tmp_path, "--model", "m1", "--model", "m2")
    assert (out / "m1" / "summary.json").is_file()
    row = next(line.split() for line in result.stdout.splitlines() if line.strip().startswith("order (avg)"))
    assert row[2:] == ["0.750", "0.750"]  # not 0.875
    report = run_cli("report", str(out))
    row = next(line.split() for line in report.stdout.splitlines() if line.strip().startswith("order (avg)"))
    assert row[2:] == ["0.750", "0.750"]


def test_a_sample_with_nothing_to_check_has_no_score_and_no_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "host", "input": "host: db host?", "ground_truth": "localhost", "expected_tool_order": ["read_file"]},
            {"id": "chat", "input": "chat: hi"},  # no ground truth, no expected order: nothing to check at all
            {"id": "rude", "input": "rude: hi", "forbidden_tools": ["list_files"]}]  # only the required grader
    graders = {**GRADERS, "avoided": {"kind": "forbidden_tools"}}  # required by default, not weighted below
    gate = {**GATE, "weights": {"answer": 1, "order": 1}, "value": 0.5}
    replies = {"host": READS, "chat": [text("hello")], "rude": [text("hi")]}
    result, out = _run(server, tmp_path, "--junit", str(tmp_path / "junit.xml"), rows=rows, replies=replies,
                       graders=graders, gate=gate)
    lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
    chat, rude = lines["chat"], lines["rude"]
    # chat: nothing was checked, so no weighted score, no verdict, and it says why
    assert chat["score"] is None and chat["passed"] is None and chat["error"] is None
    assert "nothing to check for answer, order" in chat["score_note"] and "no verdict" in chat["score_note"]
    # rude: no weighted grader applied, but its required forbidden_tools did, and passed: it decides the sample
    assert rude["score"] is None and rude["passed"] is True and "required grader(s) avoided" in rude["score_note"]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["failed"], summary["unchecked"]) == (2, 0, 1)
    assert "3 samples: 2 passed, 0 failed, 0 errored, 1 with nothing to check" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("chat"))
    assert row.split()[-5:] == ["n/a", "n/a:", "nothing", "to", "check"]  # score n/a, mark n/a
    # JUnit: neither a pass nor a failure
    case = next(c for c in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase") if c.get("name") == "chat")
    error = case.find("error")
    assert error is not None and error.get("type") == "evals.nothing_to_check"
    assert result.returncode == 0, result.stdout


def test_a_required_grader_still_fails_a_sample_with_no_weighted_score() -> None:
    from evals_cli.graders.kinds.trajectory import ToolsAvoidedSpec

    gate = Gate(GateSpec(weights={"answer": 1}), ["answer", "avoided"], specs={"avoided": ToolsAvoidedSpec()})
    na = Grade.not_applicable("no ground truth: nothing to check")
    verdict = gate.judge_sample({"answer": na, "avoided": Grade(score=0.0)})
    assert verdict.score is None and verdict.passed is False
    assert [f.grader for f in verdict.failed_by] == ["avoided"]


def test_a_gate_over_only_na_grades_has_no_verdict(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "chat", "input": "chat: hi", "ground_truth": "hello"}]
    result, _ = _run(server, tmp_path, rows=rows, replies={"chat": [text("hello")]},
                     gate={"kind": "simple", "metric_key": "order", "aggregation": "avg_score", "value": 0.5})
    assert result.returncode == 3, result.stdout  # never "passed" on nothing checked
    assert "order avg_score: not evaluated, no sample had anything to check (every grade n/a)" in result.stdout


def test_not_applicable_is_read_from_the_top_level_gate_only(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, ROWS[:1], graders=GRADERS, gate={
        "kind": "logical", "operator": "and",
        "gates": [{"kind": "simple", "metric_key": "order", "not_applicable": "pass"}]})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2
    assert "not_applicable is read from the top-level gate only" in result.stdout + result.stderr


def test_a_per_turn_grade_is_the_mean_of_the_turns_checked(server: ScriptedServer, tmp_path: Path) -> None:
    rows = [{"id": "conv", "input": ["hello there", "db host?"], "ground_truth": ["", "localhost"]}]
    replies = {"hello": [text("hi")], "db host": [text("no idea")]}
    _, out = _run(server, tmp_path, rows=rows, replies=replies, graders={"answer": GRADERS["answer"]},
                  gate={**GATE, "weights": None})
    [line] = read_jsonl(out / "results.jsonl")
    answer = line["grades"]["answer"]
    assert answer["score"] == 0.0  # turn 1 had nothing to check; turn 2 was wrong: not (1 + 0) / 2
    assert "1 with nothing to check" in answer["rationale"]
    # and it is not a passed turn either: "0/1 turns passed", not "1/2"
    assert answer["rationale"].startswith("0/1 turns passed")
    assert (answer["metadata"]["turns_passed"], answer["metadata"]["turns_checked"]) == (0, 1)


def test_compare_pairs_only_checked_grades() -> None:
    def result(sample: str, order: Grade) -> SampleResult:
        return SampleResult(sample_id=sample, grades={"order": order}, score=order.score, passed=True)

    na = Grade.not_applicable("no expected tool order: nothing to check")
    run_a = [result("x", Grade(score=1.0)), result("y", na), result("z", na)]
    run_b = [result("x", Grade(score=0.0)), result("y", na), result("z", na)]
    diff = next(g for g in compare_results(run_a, run_b, min_pairs=1).graders if g.grader == "order")
    assert (diff.n_a, diff.n_b, diff.paired) == (1, 1, 1)
    assert diff.mean_a == 1.0 and diff.mean_b == 0.0 and diff.paired_delta == -1.0  # not diluted to -1/3


def test_the_environment_suites_graders_table_counts_only_checked_samples(tmp_path: Path) -> None:
    """`make eval-environment`: both answers checked were wrong, and the table said `answer 2 of 4 avg 0.50
    accuracy 0.50`; refund-right-order's weighted 0.17 came entirely from an n/a forbidden_tools."""
    result = run_cli("run", "suites/environment.yaml", "--replay", "suites/environment.recording.jsonl",
                     "-o", str(tmp_path / "out"), env={"EVAL_AGENT_BASE_URL": "http://127.0.0.1:9/v1"})
    assert result.returncode == 1, result.stdout + result.stderr
    # grader, graded, errors, avg, accuracy, min, max, median, weight
    assert _grader_row(result.stdout, "answer")[1:] == ["2", "of", "4", "0", "0.00", "0.00", "0.00", "0.00", "0.00", "1"]
    assert _grader_row(result.stdout, "forbidden_tools")[1:6] == ["3", "of", "4", "0", "0.33"]
    lines = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    assert lines["refund-right-order"]["score"] == 0.0  # final_state, tool_order and answer all 0; forbidden n/a
    assert lines["status-lookup"]["score"] == pytest.approx(4 / 6)  # every grader applied: unchanged
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["graders"]["answer"]["avg_score"] == 0.0 and summary["graders"]["answer"]["applicable"] == 2


def test_the_readmes_worked_example_runs_as_written(server: ScriptedServer, tmp_path: Path) -> None:
    import yaml

    from tests.docs_pages import page

    readme = page("gates-and-errors.md")  # the worked example of "Gates and errors"
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", readme, flags=re.S) if "not_applicable: exclude" in b]
    gate = yaml.safe_load(block)["gate"]
    table = readme[readme.index("| | `not_applicable: exclude` (default) | `not_applicable: pass` |"):]
    rows = {cells[0]: [c.strip("`") for c in cells[1:3]] for line in table.splitlines()[2:6]
            if (cells := [c.strip() for c in line.strip("|").split("|")])}
    for column, setting in enumerate(("exclude", "pass")):
        (tmp_path / setting).mkdir()
        result, out = _run(server, tmp_path / setting, gate={**gate, "not_applicable": setting})
        assert _grader_row(result.stdout, "order") == rows["graders table, `order` row"][column].split()
        assert rows["verdict"][column] in result.stdout
        lines = {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}
        assert lines["s6"]["score"] == float(rows["`s6` (answer 0, order n/a): weighted score"][column])
        avg = json.loads((out / "summary.json").read_text())["graders"]["order"]["avg_score"]
        assert rows["`summary.json` `graders.order.avg_score`"][column].startswith(f"{avg:g} ")
