"""A stateful sample's changes, as lines a person reads: the terminal report and the HTML report share them.

What matters in a diff of the agent's world is which value became which, not the bytes: a JSON file shows its
changed keys (`port: 8080 → 3000`), a record its changed fields, any other text a unified diff with one line of
context. Every value is shortened and every change capped, so a model that writes a megabyte cannot flood the
report. The results file keeps small values whole and large ones as the part that changed (`cut`): such a
change opens with a line saying so and giving the real sizes, so an excerpt never reads as the whole file.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

from evals_cli.models.trajectory import Cut, EffectRecord, StateChange

LineKind = Literal["added", "removed", "changed", "context", "hunk", "more"]
Status = Literal["created", "deleted", "changed", "unchanged"]

MAX_LINES = 20  # per change: a longer diff ends with "… N more lines"
MAX_VALUE = 80  # characters of one value or one line of text
SIGNS: dict[str, str] = {"added": "+", "removed": "-", "changed": "~", "context": " ", "hunk": "@", "more": "…"}
_ABSENT = object()


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str

    @property
    def sign(self) -> str:
        return SIGNS[self.kind]

    def render(self) -> str:
        return self.text if self.kind == "more" else f"{self.sign} {self.text}"


@dataclass(frozen=True)
class ChangeView:
    """One changed file or record: what it is, whether it was created, deleted or changed, and the lines."""

    kind: str
    target: str
    status: Status
    lines: tuple[DiffLine, ...]
    actor: str = "agent"  # who changed it last: a simulated user with tools of its own is named (dual control)

    @property
    def head(self) -> str:
        by = f" (by the {self.actor})" if self.actor not in ("agent", "setup") else ""
        return f"{self.kind} {shorten(self.target, 2 * MAX_VALUE)} {self.status}{by}"


@dataclass(frozen=True)
class EffectView:
    """One stateful tool call's effect, in a phrase (`files.write config.json: changed`), and its diff."""

    op: str
    target: str
    status: Literal["changed", "no change", "error"]
    error: str | None
    lines: tuple[DiffLine, ...]

    @property
    def head(self) -> str:
        tail = f"error: {self.error}" if self.error is not None else self.status
        return f"{self.op} {shorten(self.target, 2 * MAX_VALUE)}: {shorten(tail, 2 * MAX_VALUE)}"


def visible(text: str) -> str:
    """Control characters spelled out (`\\x1b`): the agent wrote this text, and an escape sequence printed raw by
    `evals report` would drive the reader's terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
                   for c in text)


def shorten(text: str, limit: int = MAX_VALUE) -> str:
    """One line, at most `limit` characters: newlines shown as ⏎ so a value never breaks the diff's layout."""
    flat = visible(text.replace("\r\n", "\n").replace("\n", "⏎").replace("\t", " "))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def show_value(value: Any) -> str:
    """A value as JSON (strings quoted, so `"8080"` and `8080` differ on the page as they do in the data)."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return shorten(text)


def _as_json_object(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _key_lines(before: dict[str, Any], after: dict[str, Any], prefix: str = "") -> list[DiffLine]:
    """Changed, added and removed keys; nested objects by dotted path, so one changed leaf is one line."""
    lines: list[DiffLine] = []
    for key in list(dict.fromkeys([*before, *after])):
        path = f"{prefix}{key}"
        old, new = before.get(key, _ABSENT), after.get(key, _ABSENT)
        if old is _ABSENT:
            lines.append(DiffLine("added", f"{path}: {show_value(new)}"))
        elif new is _ABSENT:
            lines.append(DiffLine("removed", f"{path}: {show_value(old)}"))
        elif isinstance(old, dict) and isinstance(new, dict):
            lines.extend(_key_lines(old, new, f"{path}."))
        elif old != new or type(old) is not type(new):
            lines.append(DiffLine("changed", f"{path}: {show_value(old)} → {show_value(new)}"))
    return lines


def _text(value: Any) -> str:
    return value if isinstance(value, str) else show_value(value)


def _text_lines(before: str, after: str) -> list[DiffLine]:
    """A unified diff with one line of context; hunk headers become a bare `@` line between hunks."""
    lines: list[DiffLine] = []
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1)
    for line in diff:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            if lines:
                lines.append(DiffLine("hunk", "…"))
            continue
        kind: LineKind = "added" if line[:1] == "+" else "removed" if line[:1] == "-" else "context"
        lines.append(DiffLine(kind, shorten(line[1:])))
    return lines


def _whole(value: Any, kind: LineKind, is_record: bool) -> list[DiffLine]:
    """A created or deleted file or record in full (capped later): its lines, or its fields."""
    if is_record and isinstance(value, dict):
        return [DiffLine(kind, f"{key}: {show_value(item)}") for key, item in value.items()]
    text = _text(value)
    if not text:
        return [DiffLine(kind, "(empty)")]
    return [DiffLine(kind, shorten(line)) for line in text.splitlines()]


def _capped(lines: list[DiffLine]) -> tuple[DiffLine, ...]:
    if len(lines) <= MAX_LINES:
        return tuple(lines)
    rest = len(lines) - (MAX_LINES - 1)
    return (*lines[: MAX_LINES - 1], DiffLine("more", f"… {rest} more lines"))


def diff_lines(before: Any, after: Any, is_record: bool) -> tuple[Status, tuple[DiffLine, ...]]:
    """How `before` became `after` (None on one side: created or deleted). A record compares field by field;
    file text holding a JSON object on both sides compares key by key; other text line by line."""
    if before is None and after is None:
        return "unchanged", ()
    if before is None:
        return "created", _capped(_whole(after, "added", is_record))
    if after is None:
        return "deleted", _capped(_whole(before, "removed", is_record))
    if before == after:
        return "unchanged", ()
    if is_record and isinstance(before, dict) and isinstance(after, dict):
        return "changed", _capped(_key_lines(before, after))
    old_json, new_json = _as_json_object(before), _as_json_object(after)
    if old_json is not None and new_json is not None:
        lines = _key_lines(old_json, new_json)
        if not lines:  # the same data, written differently (spacing, key order)
            lines = [DiffLine("context", "same JSON data, formatted differently")]
        return "changed", _capped(lines)
    lines = _text_lines(_text(before), _text(after))
    return "changed", _capped(lines or [DiffLine("context", "whitespace only")])


def _chars(n: int | None) -> str:
    return "absent" if n is None else f"{n:,} characters"


def cut_note(cut: Cut, is_record: bool) -> str:
    """What a stored change is of the real one: its sizes, where the excerpt starts, what was left out."""
    sizes = f"before {_chars(cut.before_chars)}, after {_chars(cut.after_chars)}"
    if is_record and cut.before_chars is not None and cut.after_chars is not None:
        sizes += " as JSON"
    if cut.stored == "sizes":
        return f"cut: not stored (the sample's budget for stored changes was spent); {sizes}"
    parts = [sizes]
    if is_record:
        if cut.fields_left_out:
            parts.append(f"{cut.fields_left_out} changed field(s) not stored")
        parts.append("long values shortened")
    else:
        if cut.start:
            parts.append(f"shown from character {cut.start + 1:,}")
        if not cut.rest_same:
            parts.append("the change goes on past what is shown")
    return "cut: only what changed is stored; " + "; ".join(parts)


def _cut_status(cut: Cut) -> Status:
    return "created" if cut.before_chars is None else "deleted" if cut.after_chars is None else "changed"


def _stored_diff(before: Any, after: Any, is_record: bool, cut: Cut | None) -> tuple[Status, tuple[DiffLine, ...]]:
    """diff_lines, or for a change stored cut: a first line saying so, then the diff of what was stored."""
    if cut is None:
        return diff_lines(before, after, is_record)
    note = DiffLine("more", cut_note(cut, is_record))
    if cut.stored == "sizes":
        return _cut_status(cut), (note,)
    _, lines = diff_lines(before, after, is_record)
    return _cut_status(cut), (note, *lines)


def describe_change(change: StateChange) -> ChangeView:
    status, lines = _stored_diff(change.before, change.after, change.kind == "record", change.cut)
    return ChangeView(kind=change.kind, target=change.target, status=status, lines=lines, actor=change.actor)


def describe_changes(changes: list[StateChange] | None) -> list[ChangeView]:
    """The sample's final state as changes from the declared one (empty: no environment, or nothing changed)."""
    return [describe_change(change) for change in changes or []]


def describe_effect(effect: EffectRecord) -> EffectView:
    """A call's effect: a failed one names its error; a change shows its diff; a read or a lookup says so."""
    if effect.error is not None:
        return EffectView(effect.op, effect.target, "error", effect.error, ())
    if not effect.changed:
        return EffectView(effect.op, effect.target, "no change", None, ())
    _, lines = _stored_diff(effect.before, effect.after, effect.op.startswith("records."), effect.cut)
    return EffectView(effect.op, effect.target, "changed", None, lines)


def change_text(change: ChangeView, indent: str = "") -> list[str]:
    """A change as plain text lines: its head, then its diff lines indented under it."""
    return [f"{indent}{change.head}", *(f"{indent}  {line.render()}" for line in change.lines)]
