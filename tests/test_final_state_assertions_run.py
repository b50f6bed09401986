"""final_state's assertions over the world (tau2-bench's env_assertions) end to end: the scripted agent (the real
openai client on loopback) refunds orders, and the suite's own functions judge the world it left."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

ENV = {"records": {"orders": [{"id": "1", "status": "delivered", "amount": 40},
                              {"id": "2", "status": "delivered", "amount": 25}]}}
TOOLS = {"issue_refund": {"description": "Refund an order.", "parameters": {"order_id": "Order id", "amount": "Amount"},
                          "effect": {"records.update": "orders", "key": "order_id", "set": {"status": "refunded"},
                                     "fields": {"amount": "refunded"}}}}
CHECKS = '''
def refunded_in_full(final, initial, sample, order_id):
    before, after = initial.records["orders"][order_id], final.records["orders"][order_id]
    got = float(after.get("refunded", 0))
    return got == before["amount"], f"refunded {got:g} of {before['amount']}"


def nothing_else_refunded(final, initial, sample):
    final.records["orders"].clear()  # a copy of its own: the grade and the other assertions never see this
    return True


def says_which(final, initial, sample):
    return sample.metadata.get("want") in final.records["orders"]


def broken(final, initial, sample):
    return final.records["no such collection"]


def wrong_type(final, initial, sample):
    return 1


def leaves(final, initial, sample):
    import sys
    sys.exit(0)


def spins(final, initial, sample):
    import time
    deadline = time.monotonic() + 30  # bounded: were the guard not to stop it, it would pass, and the test fail
    while time.monotonic() < deadline:
        pass
    return True
'''


def _suite(tmp: Path, server: ScriptedServer, rows: list[dict[str, Any]], assertions: list[dict[str, Any]],
           **spec: Any) -> Path:
    (tmp / "checks.py").write_text(CHECKS)
    return write_suite(tmp, rows, base_url=server.url, tools=TOOLS, environment=ENV,
                       graders={"final": {"kind": "final_state", "assertions": assertions, **spec}},
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 1.0})


def _run(tmp: Path, suite: Path, *extra: str) -> tuple[int, str, dict[str, dict[str, Any]]]:
    result = run_cli("run", str(suite), "-o", str(tmp / "out"), *extra)
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, result.stdout, {r["sample_id"]: r for r in read_jsonl(tmp / "out" / "results.jsonl")}


FULL = {"python": "checks.py:refunded_in_full", "arguments": {"order_id": "1"},
        "message": "order 1 must be refunded in full"}
SCRIPT = {"full": [call("issue_refund", {"order_id": "1", "amount": 40}), text("done")],
          "half": [call("issue_refund", {"order_id": "1", "amount": 20}), text("done")]}


def test_assertions_pass_and_fail_beside_the_field_expectations(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script(SCRIPT)
    expected = {"records": {"orders": {"1": {"status": "refunded"}}}}
    rows = [{"id": "full", "input": "full refund please", "expected_state": expected},
            {"id": "half", "input": "half refund please", "expected_state": expected}]
    assertions = [FULL, {"python": "checks.py:nothing_else_refunded"}, FULL]
    code, out, lines = _run(tmp_path, _suite(tmp_path, server, rows, assertions, score="fraction"))
    full, half = lines["full"]["grades"]["final"], lines["half"]["grades"]["final"]
    assert full["score"] == 1.0 and full["rationale"] == "all 4 expectation(s) met (1 change(s) to the environment)"
    # the status expectation met, the second assertion met (and its clearing of its copy changed nothing for the
    # third), the two refunded_in_full assertions not
    assert half["score"] == pytest.approx(2 / 4)
    assert ("checks.py:refunded_in_full: order 1 must be refunded in full; refunded 20 of 40" in half["rationale"])
    assert [e["met"] for e in half["metadata"]["expectations"]] == [True, False, True, False]
    assert half["metadata"]["expectations"][1]["expectation"] == "assertion checks.py:refunded_in_full"
    assert lines["full"]["passed"] is True and lines["half"]["passed"] is False and code == 1


def test_the_function_reads_the_row(tmp_path: Path, server: ScriptedServer) -> None:
    server.script = agent_script(SCRIPT)
    rows = [{"id": "full", "input": "full refund please", "metadata": {"want": "2"}},
            {"id": "half", "input": "half refund please", "metadata": {"want": "7"}}]
    code, out, lines = _run(tmp_path, _suite(tmp_path, server, rows, [{"python": "checks.py:says_which"}]))
    assert lines["full"]["grades"]["final"]["score"] == 1.0  # no expected_state: the assertion alone is checked
    assert lines["half"]["grades"]["final"]["score"] == 0.0
    assert "checks.py:says_which: returned False" in lines["half"]["grades"]["final"]["rationale"]


@pytest.mark.parametrize(("name", "category", "said"), [
    ("broken", "grader", "assertions[0] checks.py:broken raised KeyError: 'no such collection'"),
    ("wrong_type", "grader", "assertions[0] checks.py:wrong_type returned int; return a bool or (bool, reason)"),
    ("leaves", "custom_code", "final_state assertion checks.py:leaves called sys.exit(0)"),
])
def test_an_assertion_without_a_verdict_errors_the_grade_never_fails_it(tmp_path: Path, server: ScriptedServer,
                                                                        name: str, category: str, said: str) -> None:
    server.script = agent_script(SCRIPT)
    rows = [{"id": "half", "input": "half refund please",
             "expected_state": {"records": {"orders": {"1": {"status": "refunded"}}}}}]
    code, out, lines = _run(tmp_path, _suite(tmp_path, server, rows, [{"python": f"checks.py:{name}"}]))
    line = lines["half"]
    grade = line["grades"]["final"]
    assert grade["score"] is None and said in grade["error"]
    assert line["passed"] is None and line["error"]["category"] == category  # errored, not failed
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["failed"], summary["errored"]) == (0, 1) and code == 3


def test_an_assertion_that_hangs_errors_its_sample_at_the_sample_timeout(tmp_path: Path,
                                                                        server: ScriptedServer) -> None:
    server.script = agent_script(SCRIPT)
    suite = _suite(tmp_path, server, [{"id": "full", "input": "full refund please"}], [{"python": "checks.py:spins"}])
    started = time.monotonic()
    code, out, lines = _run(tmp_path, suite, "--sample-timeout", "0.5", "--max-error-rate", "1")
    assert time.monotonic() - started < 20
    line = lines["full"]
    assert line["error"]["category"] == "custom_code" and line["passed"] is None and code == 3
    assert "final_state assertion checks.py:spins" in line["grades"]["final"]["error"]
    assert "sample_timeout" in line["grades"]["final"]["error"]


@pytest.mark.parametrize(("assertion", "wanted"), [
    ({"python": "missing.py:fn"}, "graders.final: assertions[0].python: final_state assertion file missing.py not "
                                  "found"),
    ({"python": "checks.py:nope"}, "graders.final: assertions[0].python: checks.py has no function 'nope'"),
    ({"python": "checks.py:refunded_in_full"}, "assertions[0].python: checks.py:refunded_in_full takes (final, "
                                               "initial, sample, order_id), which cannot be called as"),
    ({"python": "checks.py:broken", "arguments": {"x": 1}}, "with arguments x"),
    ({"python": "checks"}, "graders.final.assertions.0.python"),
])
def test_a_missing_or_unfit_function_is_exit_2_naming_the_field(tmp_path: Path, server: ScriptedServer,
                                                               assertion: dict[str, Any], wanted: str) -> None:
    suite = _suite(tmp_path, server, [{"id": "a", "input": "x"}], [assertion])
    for args in (("validate", str(suite)), ("validate", str(suite), "--import-code"),
                 ("run", str(suite), "-o", str(tmp_path / "out"))):
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert wanted in result.stdout + result.stderr, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
