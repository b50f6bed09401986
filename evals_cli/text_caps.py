"""The cap on text stored per field (assistant content, tool arguments and results, user turns, rationales,
submissions), so one runaway reply cannot become a 100 MB results line, a 300 MB process or an unreadable
table.

A capped field keeps its first `max_field_chars()` characters and ends with an explicit marker giving the
original length, so a reader sees that (and how much) was cut, and graders reading the trajectory see the
same. Default 256 Ki characters: a hundred pages of text, far above any real answer or tool payload; change
it with the environment variable `EVALS_MAX_FIELD_CHARS` (a positive integer; see evals_cli/settings.py).

Text is capped where it enters the trajectory (the targets' model replies and tool calls) and once more, over
the whole result, before it is written (rationales, submissions, and anything a custom target or grader
stored). Request bodies are bounded before that, at the transport (see endpoints/pool.py).
"""

from __future__ import annotations

import re
from typing import Any

MAX_FIELD_ENV = "EVALS_MAX_FIELD_CHARS"
MARKER = "…[truncated by evals: {total} characters, the first {kept} kept; raise EVALS_MAX_FIELD_CHARS to keep more]"


MAX_LINE_BYTES = 4 * 1024 * 1024
"""The most one results line may take (UTF-8): past it every text field is cut further, the same marker giving
each one's original length, so no sample (however many calls it made, however large the world its tools
changed) writes a line a reader cannot load."""
_MARKED = re.compile(r"…\[truncated by evals: (\d+) characters, the first \d+ kept; [^\]]*\]\Z")


def clean_text(text: str | None) -> str | None:
    """Text as valid Unicode: a lone UTF-16 surrogate (a reply holding the JSON escape `"\\ud800"`) becomes
    U+FFFD. Kept as it was, it cannot be written as UTF-8, and the sample would lose its results line."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def max_field_chars() -> int:
    """The cap in force (EVALS_MAX_FIELD_CHARS, see evals_cli/settings.py): read each time, so a change takes
    effect, but parsed once per value: this runs for every stored field. A bad value is a ConfigError."""
    from evals_cli.settings import knob

    value: int = knob("max_field_chars")
    return value


def is_capped(text: str) -> bool:
    return "…[truncated by evals: " in text[-200:]


def cap(text: Any, limit: int | None = None) -> Any:
    """`text` cut to the limit with the marker when longer; anything else (None, numbers) as it is."""
    if not isinstance(text, str):
        return text
    limit = limit or max_field_chars()
    if len(text) <= limit:
        return text
    marked = _MARKED.search(text, max(0, len(text) - 300)) if is_capped(text) else None
    if marked is not None:  # cut before: kept as it is, or cut shorter still, giving the original length
        if marked.start() <= limit:
            return text
        return text[:limit] + MARKER.format(total=int(marked.group(1)), kept=limit)
    return text[:limit] + MARKER.format(total=len(text), kept=limit)


def cap_value(value: Any, limit: int | None = None, _depth: int = 0) -> Any:
    """A JSON-like value with every string in it capped (the same object when nothing needed cutting)."""
    limit = limit or max_field_chars()
    kind = type(value)
    if kind is str:
        return value if len(value) <= limit else cap(value, limit)
    if _depth > 100:
        return value
    if kind is dict:
        copy: dict[Any, Any] | None = None
        for key, item in value.items():
            new = cap_value(item, limit, _depth + 1)
            if new is not item:
                copy = copy if copy is not None else dict(value)
                copy[key] = new
        return value if copy is None else copy
    if kind is list:
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new = cap_value(item, limit, _depth + 1)
            if new is not item:
                items = items if items is not None else list(value)
                items[index] = new
        return value if items is None else items
    return cap(value, limit) if isinstance(value, str) else value


def _cap_step(step: Any, limit: int) -> None:
    step.content = cap(step.content, limit)
    for call in step.tool_calls:
        call.raw_arguments = cap(call.raw_arguments, limit)
        call.result = cap(call.result, limit)
        call.arguments = cap_value(call.arguments, limit)
        call.arguments_error = cap(call.arguments_error, limit)
        if call.effect is not None:
            call.effect.before = cap_value(call.effect.before, limit)
            call.effect.after = cap_value(call.effect.after, limit)


def cap_trajectory(trajectory: Any, limit: int | None = None) -> Any:
    """Cap, in place, every text field of a Trajectory: user turns, assistant content, tool calls (raw and
    parsed arguments, results; a user's own calls too) and the pre-filled messages."""
    limit = limit or max_field_chars()
    for turn in trajectory.turns:
        turn.user = cap(turn.user, limit)
        for step in [*getattr(turn, "user_steps", []), *turn.steps]:
            _cap_step(step, limit)
    for step in getattr(trajectory, "closing_user_steps", None) or []:
        _cap_step(step, limit)
    for change in [*(trajectory.state_changes or []), *(trajectory.setup_changes or [])]:
        change.before = cap_value(change.before, limit)
        change.after = cap_value(change.after, limit)
    trajectory.prefilled = cap_value(trajectory.prefilled, limit)
    return trajectory


def cap_result(result: Any, limit: int | None = None) -> Any:
    """Cap, in place, every text field of a SampleResult before it is written or shown."""
    limit = limit or max_field_chars()
    result.input = cap(result.input, limit)
    cap_trajectory(result.trajectory, limit)
    for grade in result.grades.values():
        grade.rationale = cap(grade.rationale, limit)
        grade.submission = cap(grade.submission, limit)
        grade.error = cap(grade.error, limit)
        grade.metadata = cap_value(grade.metadata, limit)
    if result.error is not None:
        result.error.message = cap(result.error.message, limit)
    return result
