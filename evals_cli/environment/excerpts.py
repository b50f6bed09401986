"""What of a change to the world is stored: small values whole, large ones as the part that changed, with the
real sizes beside it (`Cut` in models/trajectory.py).

A whole copy of a file before and after every call that touched it made a results line grow with the square of
the calls: 44 appends of 200,000 characters wrote a 414 MB line and took 2.3 GB at peak. What a reader of a
change needs is what became what, so a text keeps the span that differs (with a little unchanged context around
it) and a record keeps its id and the fields that changed; each side is capped, and one sample's stored changes
share a budget, past which only the sizes are kept. Every cut is marked, so a report never passes an excerpt off
as the whole.

Graders never read these: final_state grades the world itself (the trajectory's `state_changes` are whole in
memory and cut only as the results line is written), and stop_behavior replays each call from the edit kept
beside its effect in memory (`EffectRecord.keep_for_replay`), which holds what the call wrote, not a copy of the file.
"""

from __future__ import annotations

import json
from typing import Any

from evals_cli.models.trajectory import Cut, EffectRecord, StateChange
from evals_cli.text_caps import cap_value

MAX_CHANGE_CHARS = 16 * 1024
"""Characters stored of each side (before, after) of one change; a larger value is stored as an excerpt."""

MAX_SAMPLE_STATE_CHARS = 1024 * 1024
"""Characters one sample stores of its changes: its calls' effects together, and separately its final state
changes. Past it a change keeps only its sizes, so no number of calls can grow a results line without bound."""

CONTEXT_CHARS = 200
"""Unchanged characters kept on each side of the span that changed, so an excerpt reads in place."""

_SIZES_ONLY_BELOW = 2 * CONTEXT_CHARS  # a budget smaller than this keeps no excerpt at all, only the sizes
_CHUNK = 1 << 16


def size(value: Any) -> int | None:
    """A stored value's size in characters: a text's length, a record's as JSON (None: absent)."""
    if value is None:
        return None
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, default=str))


def common_prefix(a: str, b: str) -> int:
    """How many leading characters two texts share, compared a chunk at a time (a file of megabytes appended to
    44 times is compared 44 times)."""
    n = min(len(a), len(b))
    i = 0
    while i < n:
        j = min(i + _CHUNK, n)
        if a[i:j] == b[i:j]:
            i = j
            continue
        lo, hi = i, j  # equal before lo; the first difference is in [lo, hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[lo:mid] == b[lo:mid]:
                lo = mid
            else:
                hi = mid
        return lo
    return n


def common_suffix(a: str, b: str, most: int) -> int:
    """How many trailing characters two texts share, at most `most` (so a prefix and a suffix never overlap)."""
    la, lb = len(a), len(b)
    i = 0
    while i < most:
        j = min(i + _CHUNK, most)
        if a[la - j:la - i] == b[lb - j:lb - i]:
            i = j
            continue
        lo, hi = i, j  # equal for the last lo characters; the first difference from the end is in [lo, hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
                lo = mid
            else:
                hi = mid
        return lo
    return most


def _text_excerpt(before: str | None, after: str | None, limit: int) -> tuple[str | None, str | None, Cut, Any]:
    """The span of two texts that differs, with CONTEXT_CHARS around it (starting at a line when one begins
    nearby), each side capped at `limit`; and the edit that turns `before` into `after` for replay."""
    a, b = before or "", after or ""
    p = common_prefix(a, b)
    s = common_suffix(a, b, min(len(a), len(b)) - p)
    start = max(0, p - CONTEXT_CHARS)
    line = a.rfind("\n", max(0, start - CONTEXT_CHARS), start)
    if line >= 0:
        start = line + 1
    tail = max(0, s - CONTEXT_CHARS)
    old, new = a[start:len(a) - tail], b[start:len(b) - tail]
    rest_same = len(old) <= limit and len(new) <= limit
    cut = Cut(before_chars=size(before), after_chars=size(after), start=start, rest_same=rest_same)
    edit = (p, s, b[p:len(b) - s]) if after is not None else None
    return (None if before is None else old[:limit]), (None if after is None else new[:limit]), cut, edit


_ABSENT = object()


def _same(x: Any, y: Any) -> bool:
    return json.dumps(x, sort_keys=True, default=str) == json.dumps(y, sort_keys=True, default=str)


def _record_excerpt(before: dict[str, Any] | None, after: dict[str, Any] | None,
                    limit: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None, Cut, Any]:
    """A record's `id` and the fields that changed (all of them for a created or deleted record), as many as
    fit in `limit`, long texts in them capped; and the whole after for replay."""
    old, new = before or {}, after or {}
    changed = [k for k in dict.fromkeys([*old, *new])
               if before is None or after is None or not _same(old.get(k, _ABSENT), new.get(k, _ABSENT))]
    per_value = max(64, limit // 4)
    kept_old: dict[str, Any] = {}
    kept_new: dict[str, Any] = {}
    used, left_out = 0, 0
    for key in ["id", *(k for k in changed if k != "id")]:
        if key not in old and key not in new:
            continue
        parts = {side: cap_value(values[key], per_value) for side, values in (("old", old), ("new", new))
                 if key in values}
        cost = len(key) + sum(size(v) or 4 for v in parts.values())
        if key != "id" and used + cost > limit:
            left_out += 1
            continue
        used += cost
        if "old" in parts:
            kept_old[key] = parts["old"]
        if "new" in parts:
            kept_new[key] = parts["new"]
    cut = Cut(before_chars=size(before), after_chars=size(after), fields_left_out=left_out)
    return (None if before is None else kept_old), (None if after is None else kept_new), cut, after



class StateBudget:
    """What one sample may still store of its changes (MAX_SAMPLE_STATE_CHARS to start with)."""

    def __init__(self, chars: int = MAX_SAMPLE_STATE_CHARS) -> None:
        self.left = chars

    def store(self, before: Any, after: Any, is_record: bool) -> tuple[Any, Any, Cut | None, Any]:
        """(before, after, cut, edit) as they are to be stored: whole when both fit this change's share, else an
        excerpt (cut set, `edit` what replaying needs), else, once the budget is spent, the sizes alone."""
        limit = min(MAX_CHANGE_CHARS, self.left // 2)
        sizes = (size(before) or 0, size(after) or 0)
        if sizes[0] <= limit and sizes[1] <= limit:
            self.left -= sum(sizes)
            return before, after, None, None
        if limit < _SIZES_ONLY_BELOW:
            cut = Cut(stored="sizes", before_chars=size(before), after_chars=size(after), rest_same=False)
            record = is_record and isinstance(after, dict | None)
            return None, None, cut, after if record else _text_excerpt(_as_text(before), _as_text(after), 0)[3]
        stored: tuple[Any, Any, Cut, Any]
        if is_record and isinstance(before, dict | None) and isinstance(after, dict | None):
            stored = _record_excerpt(before, after, limit)
        else:
            stored = _text_excerpt(_as_text(before), _as_text(after), limit)
        old, new, cut, edit = stored
        self.left -= (size(old) or 0) + (size(new) or 0)
        return old, new, cut, edit


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def store_effect(effect: EffectRecord, budget: StateBudget) -> EffectRecord:
    """The effect with its before/after as they are to be stored (in place); a cut one keeps its edit for
    replay in memory."""
    if not effect.changed or effect.cut is not None:
        return effect
    old, new, cut, edit = budget.store(effect.before, effect.after, effect.op.startswith("records."))
    if cut is not None:
        effect.before, effect.after, effect.cut = old, new, cut
        effect.keep_for_replay(edit)
    return effect


def store_changes(changes: list[StateChange] | None, budget: StateBudget | None = None) -> None:
    """A trajectory's final state changes as they are to be stored, in place (changes already cut are left as
    they are): called by whoever hands the result to the results writer (the run, `evals merge`), after the
    graders have read the whole values."""
    budget = budget or StateBudget()
    for change in changes or []:
        if change.cut is not None:
            budget.left -= (size(change.before) or 0) + (size(change.after) or 0)
            continue
        old, new, cut, _ = budget.store(change.before, change.after, change.kind == "record")
        if cut is not None:
            change.before, change.after, change.cut = old, new, cut
