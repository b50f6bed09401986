"""JUnit XML export: valid against the JUnit schemas CI tools read, counts consistent, failures explained."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from evals_cli.exporters import build_junit, write_junit
from evals_cli.output.files import read_results, read_summary
from tests.run_factory import XSS, make_result, make_summary, scripted_run
from tests.scripted_server import ScriptedServer

SUITE_ATTRS = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname", "id", "package"}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")  # the Ant schema's ISO 8601 without a zone


def assert_junit_shape(root: ET.Element) -> ET.Element:
    """The required elements and attributes of Jenkins' junit-10.xsd and the stricter Ant JUnit.xsd."""
    assert root.tag == "testsuites"
    [suite] = list(root)
    assert suite.tag == "testsuite"
    assert SUITE_ATTRS <= set(suite.attrib), SUITE_ATTRS - set(suite.attrib)
    assert TIMESTAMP.match(suite.get("timestamp", "")), suite.get("timestamp")
    children = [child.tag for child in suite]
    assert children[0] == "properties" and children[-2:] == ["system-out", "system-err"]
    assert set(children[1:-2]) <= {"testcase"}
    for prop in suite.find("properties") or []:
        assert prop.tag == "property" and {"name", "value"} <= set(prop.attrib)
    cases = suite.findall("testcase")
    for case in cases:
        assert {"name", "classname", "time"} <= set(case.attrib)
        assert float(case.get("time", "x")) >= 0
        outcome = list(case)
        assert len(outcome) <= 1 and all(o.tag in ("failure", "error") for o in outcome)
        for o in outcome:
            assert o.get("type") and o.get("message") is not None
    failures = sum(1 for c in cases if c.find("failure") is not None)
    errors = sum(1 for c in cases if c.find("error") is not None)
    for element in (root, suite):
        assert int(element.get("tests", -1)) == len(cases)
        assert int(element.get("failures", -1)) == failures
        assert int(element.get("errors", -1)) == errors
        assert float(element.get("time", "x")) >= 0
    assert suite.get("skipped") == "0"
    return suite


def cases_by_name(suite: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name", ""): c for c in suite.findall("testcase")}


def test_one_testcase_per_sample_with_failures_and_errors(tmp_path: Path) -> None:
    results = [
        make_result("ok", {"answer": 1.0, "order": 1.0}),
        make_result("bad", {"answer": 0.0, "order": 1.0}, answer="It is db.internal"),
        make_result("down", {}, error=("rate_limit", "429 Too Many Requests")),
        make_result("ok", {"answer": 1.0}, repeat=1),
    ]
    counts = write_junit(results, make_summary(results, suite="my-suite"), tmp_path / "junit.xml")
    assert counts == (4, 1, 1)
    suite = assert_junit_shape(ET.parse(tmp_path / "junit.xml").getroot())
    assert suite.get("name") == "my-suite" and suite.get("time") == "12.500"
    assert suite.get("timestamp") == "2025-01-02T03:04:05"
    cases = cases_by_name(suite)
    assert list(cases) == ["ok", "bad", "down", "ok#1"]
    assert {c.get("classname") for c in cases.values()} == {"my-suite"}
    assert list(cases["ok"]) == [] and cases["ok"].get("time") == "0.500"
    failure = cases["bad"].find("failure")
    assert failure is not None and failure.get("type") == "evals.failed"
    assert "answer 0.00" in failure.get("message", "") and "order" not in failure.get("message", "")
    assert "answer: score 0.00" in (failure.text or "") and "answer because" in (failure.text or "")
    assert "final answer: It is db.internal" in (failure.text or "")
    error = cases["down"].find("error")
    assert error is not None and error.get("type") == "evals.rate_limit"
    assert error.get("message") == "429 Too Many Requests"


def test_per_turn_failure_lists_only_the_failing_turns() -> None:
    result = make_result("conv", {}, per_turn={"answer": [1.0, 1.0, 0.0]}, passed=False)
    suite = assert_junit_shape(build_junit([result], None, suite_name="s"))
    text = cases_by_name(suite)["conv"].find("failure").text or ""  # type: ignore[union-attr]
    assert "(2/3 turns passed)" in text
    assert "turn 3: score 0.00: turn 3 rationale" in text
    assert "expected 'truth 3'" in text
    assert "turn 1:" not in text and "turn 2:" not in text


def test_threshold_decides_which_graders_are_blamed() -> None:
    result = make_result("mixed", {"answer": 0.0, "judge": 0.6}, passed=False)
    strict = build_junit([result], None, suite_name="s").find("testsuite/testcase/failure")
    lenient = build_junit([result], None, suite_name="s", threshold=0.5).find("testsuite/testcase/failure")
    assert strict is not None and lenient is not None
    assert "judge: score 0.60" in (strict.text or "")
    assert "judge" not in (lenient.text or "") and "answer: score 0.00" in (lenient.text or "")


def test_a_sample_no_grader_could_score_is_an_error() -> None:
    result = make_result("judge-down", {"judge": None})
    suite = assert_junit_shape(build_junit([result], None, suite_name="s"))
    error = cases_by_name(suite)["judge-down"].find("error")
    assert error is not None and error.get("type") == "evals.grader"
    assert "judge: no score" in (error.text or "")


def test_hostile_text_is_escaped_and_illegal_characters_replaced(tmp_path: Path) -> None:
    nasty = f'{XSS} & "q" \x1b[31mred\x00 ]]> <![CDATA[x]]>'
    result = make_result(f"id<{XSS}>", {"answer": 0.0}, answer=nasty, rationale=nasty)
    summary = make_summary([result], suite='suite "&<>"')
    write_junit([result], summary, tmp_path / "junit.xml")
    raw = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert XSS not in raw and "\x1b" not in raw and "\x00" not in raw
    suite = assert_junit_shape(ET.parse(tmp_path / "junit.xml").getroot())
    assert suite.get("name") == 'suite "&<>"'
    [case] = suite.findall("testcase")
    assert case.get("name") == f"id<{XSS}>"
    text = case.find("failure").text or ""  # type: ignore[union-attr]
    assert f"{XSS} & \"q\" \ufffd[31mred\ufffd ]]> <![CDATA[x]]>" in text


def test_without_a_summary_times_add_up_and_the_shape_holds() -> None:
    results = [make_result("a", {"g": 1.0}, latency=1.5), make_result("b", {"g": 0.0}, latency=2.25)]
    root = build_junit(results, None)
    suite = assert_junit_shape(root)
    assert suite.get("name") == "evals" and suite.get("time") == "3.750"
    assert suite.get("timestamp") == "1970-01-01T00:00:00"


def test_empty_run_is_still_a_valid_report() -> None:
    suite = assert_junit_shape(build_junit([], None, suite_name="empty"))
    assert suite.get("tests") == "0"


def test_junit_of_a_real_cli_run(server: ScriptedServer, tmp_path: Path) -> None:
    run = scripted_run(server, tmp_path)
    summary = read_summary(run)
    counts = write_junit(read_results(run), summary, tmp_path / "junit.xml")
    suite = assert_junit_shape(ET.parse(tmp_path / "junit.xml").getroot())
    assert summary is not None and counts.tests == summary.total == 5
    assert counts.errors == summary.errored == 1
    assert counts.failures == summary.failed
    cases = cases_by_name(suite)
    assert list(cases["host"]) == []
    math_failure = cases["math"].find("failure")
    assert math_failure is not None and "avoided: score 0.00" in (math_failure.text or "")
    assert "read_file" in (math_failure.text or "")
    conv = cases["conv"].find("failure")
    assert conv is not None and "(1/3 turns passed)" in (conv.text or "")
    assert "turn 2: score 0.00" in (conv.text or "") and "answered 'port 5433', expected '5432'" in (conv.text or "")
    assert "turn 3: score 0.00" in (conv.text or "") and "turn 1:" not in (conv.text or "")
    broken = cases["broken"].find("error")
    assert broken is not None and broken.get("type") == "evals.endpoint"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["gate.passed"] == "false" and props["gate.message"].startswith("Gate FAILED")
