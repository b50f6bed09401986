"""A grader for suites/mcp_time.yaml: the time the answer states is the one the server returned. "Now" changes
with every recording, so no fixed ground truth can check it; the tool result in the trajectory can."""

from __future__ import annotations

import json
import re

from evals_cli import Grade, grader

_TIME = re.compile(r"(?<!\d)(\d{1,2}):(\d{2})(?::\d{2})?\s*([ap]\.?m\.?)?", re.IGNORECASE)


def _told(trajectory) -> tuple[int, int] | None:
    """(hour, minute) of the last time a tool returned: get_current_time's datetime, convert_time's target."""
    for call in reversed(trajectory.tool_calls):
        try:
            data = json.loads(call.result or "")
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("target"), dict):
            data = data["target"]
        stamp = data.get("datetime") if isinstance(data, dict) else None
        found = re.search(r"T(\d{2}):(\d{2})", stamp or "")
        if found:
            return int(found.group(1)), int(found.group(2))
    return None


def _said(answer: str) -> list[tuple[int, int]]:
    times = []
    for hour, minute, half in _TIME.findall(answer):
        h = int(hour)
        if half:
            h = h % 12 + (12 if half.lower().startswith("p") else 0)
        times.append((h, int(minute)))
    return times


@grader
def time_as_told(sample, submission, trajectory):
    told = _told(trajectory)
    if told is None:
        return Grade.not_applicable("no tool returned a time: nothing to check")
    said = _said(submission or "")
    shown = f"{told[0]:02d}:{told[1]:02d}"
    if told in said:
        return Grade(score=1.0, rationale=f"the answer states {shown}, as the tool returned")
    if not said:
        return Grade(score=0.0, rationale=f"the answer states no time; the tool returned {shown}")
    stated = ", ".join(f"{h:02d}:{m:02d}" for h, m in said)
    return Grade(score=0.0, rationale=f"the answer states {stated}; the tool returned {shown}")
