"""Shared vocabulary of the tool-call graders: globs, canonical arguments, labels, parallel groups, matching.

Kept in one place so every grader reads "the same call", "a parallel step" and "matches the glob" alike.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from evals_cli.models.grader_specs.fields import CallActor
from evals_cli.models.trajectory import ToolCall, Trajectory
from evals_cli.wording import short as short  # re-exported: graders (and environment) quote values with it

A = TypeVar("A")
B = TypeVar("B")


def glob_match(name: str, pattern: str) -> bool:
    """Tool-name globs (`read_*`, `?`, `[ab]`), case-sensitive: tool names are identifiers, not prose."""
    return fnmatch.fnmatchcase(name, pattern)


def any_glob(name: str, patterns: Iterable[str]) -> bool:
    return any(glob_match(name, p) for p in patterns)


def canonical_args(call: ToolCall) -> str:
    """The arguments as one comparable string (sorted keys), so key order never hides a repeated call.
    Unparseable arguments fall back to the raw text the model sent."""
    if call.arguments is None:
        return "raw:" + call.raw_arguments
    return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)


def label(call: ToolCall, limit: int = 80) -> str:
    """`read_file(path=".env")`: what a rationale calls a call."""
    if call.arguments is None:
        inner = f"<unparseable {call.raw_arguments!r}>"
    else:
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    text = f"{call.name}({inner})"
    return text if len(text) <= limit else text[: limit - 2] + "…)"


def reached_tool(call: ToolCall) -> bool:
    """The call got to a tool: a known name and parseable arguments (a mock error still counts as a call)."""
    return not call.unknown_tool and call.arguments is not None


def step_groups(trajectory: Trajectory, actor: CallActor = "agent") -> list[list[int]]:
    """Indices into `trajectory.calls_by(actor)` (the agent's: `tool_calls`), one list per model step that made
    calls. Calls of one step were made in parallel: their order inside the step carries no meaning."""
    groups: list[list[int]] = []
    index = 0
    for step in trajectory.steps_by(actor):
        if step.tool_calls:
            groups.append(list(range(index, index + len(step.tool_calls))))
            index += len(step.tool_calls)
    return groups


def describe_groups(names: Sequence[str], groups: Sequence[Sequence[int]]) -> str:
    """`list_files → {read_file, read_file}`: the calls in order, parallel steps in braces."""
    parts = [names[g[0]] if len(g) == 1 else "{" + ", ".join(names[i] for i in g) + "}" for g in groups]
    return " → ".join(parts) if parts else "no tool calls"


def max_matching(left: Sequence[A], right: Sequence[B], ok: Callable[[A, B], bool]) -> dict[int, int]:
    """A maximum bipartite matching left index -> right index (Kuhn's augmenting paths).

    Greedy matching is wrong with globs: `read_*` could take the only `read_file` that `read_file` needed."""
    edges = [[j for j, b in enumerate(right) if ok(a, b)] for a in left]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(left)):
        augment(i, set())
    return {i: j for j, i in owner.items()}
