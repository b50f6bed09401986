"""JUnit XML: one testsuite per run, one testcase per sample, so CI shows eval failures like test failures.

The shape satisfies both common schemas: Jenkins' `junit-10.xsd` (what Jenkins, GitLab and most GitHub
Actions reporters read) and the stricter Ant schema (every testsuite carries `timestamp`, `hostname`,
`id`, `package`, `properties`, `system-out` and `system-err`; a testcase holds at most one failure or
error and no output of its own — so a failing sample's final answer goes into its failure text).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from evals_cli.exporters.base import EXPORTERS, FinishedRun
from evals_cli.exporters.common import case_name, failed_labels, fmt_score, prepare, unique
from evals_cli.models.results import Grade, RunSummary, SampleResult

# XML 1.0 cannot hold these at all, not even escaped; models do emit them (ANSI colours, NULs).
_ILLEGAL_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MAX_TEXT = 4000  # per answer or rationale: a CI page is not the place for a whole transcript


class JUnitCounts(NamedTuple):
    tests: int
    failures: int
    errors: int


def _clean(text: object, limit: int | None = None) -> str:
    value = _ILLEGAL_XML.sub("\ufffd", str(text))
    if limit is not None and len(value) > limit:
        value = value[:limit] + f"… [{len(value) - limit} more characters]"
    return value


def _grade_lines(name: str, grade: Grade, threshold: float) -> list[str]:
    head = f"{name}: score {fmt_score(grade.score)}"
    if grade.turns_total:
        head += f" ({grade.turns_passed}/{grade.turns_total} turns passed)"
    lines = [head]
    if grade.error and grade.error != grade.rationale:
        lines.append(f"  error: {_clean(grade.error, _MAX_TEXT)}")
    if grade.rationale:
        lines.append(f"  {_clean(grade.rationale, _MAX_TEXT)}")
    if not grade.applicable:
        lines[0] += " (n/a: nothing to check)"
    for turn in grade.per_turn_grades or []:  # 0-based in results, numbered from 1 for people
        if turn.score is not None and turn.score >= threshold:
            continue
        lines.append(f"  turn {turn.turn + 1}: score {fmt_score(turn.score)}: {_clean(turn.rationale, _MAX_TEXT)}")
        if turn.submission or turn.ground_truth is not None:
            lines.append(f"    answered {_clean(repr(turn.submission), _MAX_TEXT)}, "
                         f"expected {_clean(repr(turn.ground_truth), _MAX_TEXT)}")
    return lines


def _blamed(result: SampleResult, threshold: float) -> dict[str, Grade]:
    """The graders the sample's `failed_by` names (required ones under their threshold), plus, when the
    weighted rule failed it (or the result predates `failed_by`), every grader under `threshold`."""
    named = {f.grader: result.grades[f.grader] for f in result.failed_by
             if f.grader is not None and f.grader in result.grades}
    if not result.failed_by or any(f.rule == "weighted" for f in result.failed_by):
        under = {n: g for n, g in result.grades.items() if g.score is None or g.score < threshold}
        if not under and not named:  # none stands out: show them all
            under = dict(result.grades)
        named.update({n: g for n, g in under.items() if n not in named})
    return named


def _failure(case: ET.Element, result: SampleResult, threshold: float) -> None:
    blamed = _blamed(result, threshold)
    summary = ", ".join(f"{n} {fmt_score(g.score)}" for n, g in blamed.items())
    if result.failed_by:  # the verdict's own reasons: required graders, the weighted rule, unknown tools
        message = f"failed by {', '.join(failed_labels(result))}: " + "; ".join(f.reason for f in result.failed_by)
    else:
        message = f"weighted score {fmt_score(result.score)}; failing: {summary}"
    element = ET.SubElement(case, "failure", type="evals.failed", message=_clean(message))
    lines = [f"failed by: {f.reason}" for f in result.failed_by]
    lines += [line for name, grade in blamed.items() for line in _grade_lines(name, grade, threshold)]
    tools = unique(result.tools_called)
    lines += ["", f"tools called: {', '.join(tools) if tools else 'none'}",
              f"final answer: {_clean(result.trajectory.final_answer, _MAX_TEXT)}"]
    element.text = _clean("\n".join(lines))


def _error(case: ET.Element, result: SampleResult) -> None:
    kind: str
    if result.error is not None:
        kind, message = result.error.category, result.error.message
        detail = f"{message}\nstopped: {result.trajectory.stop_reason} after {len(result.trajectory.turns)} turn(s)"
        if result.error.incomplete:  # the agent ran; a grade the verdict needs is missing: show every grade
            detail += "\n" + "\n".join(f"{n}: score {fmt_score(g.score)}: {_clean(g.error or g.rationale, _MAX_TEXT)}"
                                       for n, g in result.grades.items())
    elif result.score_note:  # graded, but nothing it is judged on had anything to check: no verdict
        kind, message = "nothing_to_check", f"no verdict: {result.score_note}"
        detail = "\n".join(f"{n}: {'n/a' if not g.applicable else fmt_score(g.score)}: {_clean(g.rationale, _MAX_TEXT)}"
                           for n, g in result.grades.items())
    else:  # graded by nobody: every grader failed to give a score
        kind, message = "grader", "no grader could grade this sample"
        detail = "\n".join(f"{n}: {_clean(g.error or g.rationale, _MAX_TEXT)}" for n, g in result.grades.items())
    element = ET.SubElement(case, "error", type=f"evals.{kind}", message=_clean(message, _MAX_TEXT))
    element.text = _clean(detail)


def _timestamp(summary: RunSummary | None) -> str:
    """ISO 8601 without the zone (the Ant schema's pattern); runs record UTC."""
    raw = summary.started_at if summary else ""
    match = re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", raw)
    return match.group(0) if match else "1970-01-01T00:00:00"


def _properties(suite: ET.Element, summary: RunSummary | None) -> None:
    props = ET.SubElement(suite, "properties")
    if summary is None:
        return
    values: dict[str, object] = {"status": summary.status, "agent_tokens": summary.usage.total_tokens,
                                 "judge_tokens": summary.judge_usage.total_tokens}
    if summary.gate is not None:
        # JSON's words: an incomplete run's gate was not evaluated (null), never a pass computed from survivors
        values["gate.passed"] = "null" if summary.gate.passed is None else str(summary.gate.passed).lower()
        values["gate.metric"] = "" if summary.gate.metric is None else f"{summary.gate.metric:.6g}"
        values["gate.message"] = summary.gate.message
    for name, agg in summary.graders.items():
        values[f"grader.{name}.avg_score"] = "" if agg.avg_score is None else f"{agg.avg_score:.6g}"
    for name, value in values.items():
        ET.SubElement(props, "property", name=name, value=_clean(value))


def build_junit(results: Iterable[SampleResult], summary: RunSummary | None, *, suite_name: str | None = None,
                threshold: float = 1.0) -> ET.Element:
    """The `<testsuites>` tree of a run.

    A passed sample is a bare testcase; a failed one carries a `<failure>` naming every grader that scored
    under `threshold` (default 1.0: anything short of full marks; give the suite's `pass_value` to blame
    only graders that fail on their own) with its score and rationale, and for per-turn graders the turns
    that failed. An errored sample, or one no grader could score, carries an `<error>` with the category.
    """
    name = suite_name or (summary.suite if summary else "evals")
    suite = ET.Element("testsuite", name=_clean(name), tests="0", failures="0", errors="0", skipped="0",
                       time="0", timestamp=_timestamp(summary), hostname="localhost", id="0", package=_clean(name))
    _properties(suite, summary)
    tests = failures = errors = 0
    latency = 0.0
    for result in results:
        case = ET.SubElement(suite, "testcase", name=_clean(case_name(result)), classname=_clean(name),
                             time=f"{max(result.latency_s, 0.0):.3f}")
        tests += 1
        latency += max(result.latency_s, 0.0)
        if result.error is not None or result.passed is None:
            _error(case, result)
            errors += 1
        elif result.passed is False:
            _failure(case, result, threshold)
            failures += 1
    duration = summary.duration_s if summary and summary.duration_s > 0 else latency
    ET.SubElement(suite, "system-out").text = _clean(summary.gate.message) if summary and summary.gate else ""
    ET.SubElement(suite, "system-err").text = _clean(summary.abort_reason or "") if summary else ""
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors), "time": f"{duration:.3f}"}
    suite.attrib.update(counts)
    root = ET.Element("testsuites", {"name": _clean(name), **counts})
    root.append(suite)
    return root


def write_junit(results: Iterable[SampleResult], summary: RunSummary | None, path: Path | str, *,
                suite_name: str | None = None, threshold: float = 1.0) -> JUnitCounts:
    """Write the run as JUnit XML (UTF-8, with declaration); returns the counts CI will show."""
    root = build_junit(results, summary, suite_name=suite_name, threshold=threshold)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    prepare(path).write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n', encoding="utf-8")
    return JUnitCounts(int(root.get("tests", 0)), int(root.get("failures", 0)), int(root.get("errors", 0)))


@EXPORTERS.register("junit")
def export_junit(run: FinishedRun, path: Path) -> JUnitCounts:
    """`--junit PATH`: failures blame the graders under the gate's per-sample pass value."""
    return write_junit(run.results(), run.summary, path, threshold=run.threshold)
