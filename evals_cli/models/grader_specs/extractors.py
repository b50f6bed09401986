"""Extractors pick the part of a trajectory a grader judges (the 'submission').

They live with the grader specs because a spec's `extractor:` and `extractor_config:` are checked when the
suite is read (GraderBase), and models never import graders; an extractor is a pure function of the recorded
trajectory. Each registers with `EXTRACTORS` through the `extractor` decorator, like every plug-in kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evals_cli import safe_regex
from evals_cli.models.trajectory import ToolCall, Trajectory
from evals_cli.registry import Registry

ExtractFn = Callable[[Trajectory, dict[str, Any]], str]


@dataclass(frozen=True)
class Extractor:
    name: str
    fn: ExtractFn
    description: str
    options: dict[str, str]
    required: tuple[str, ...] = ()


EXTRACTORS: Registry[Extractor] = Registry("extractor")


def extractor(name: str, description: str, options: dict[str, str] | None = None,
              required: tuple[str, ...] = ()) -> Callable[[ExtractFn], ExtractFn]:
    """Register an extractor under a name usable as `extractor:` in a grader spec."""

    def register(fn: ExtractFn) -> ExtractFn:
        EXTRACTORS.register(name)(Extractor(name, fn, description, options or {}, required))
        return fn

    return register


def check_extractor(name: str, config: dict[str, Any]) -> None:
    """Raise ValueError (a field error for pydantic) when the extractor or its options are wrong."""
    if name not in EXTRACTORS:
        import difflib

        hint = difflib.get_close_matches(name, EXTRACTORS, n=1)
        more = f"did you mean '{hint[0]}'? " if hint else ""
        raise ValueError(f"unknown extractor '{name}'; {more}extractors: {', '.join(EXTRACTORS)}")
    spec = EXTRACTORS[name].impl
    unknown = sorted(set(config) - set(spec.options))
    if unknown:
        raise ValueError(f"extractor '{name}' has no option {', '.join(unknown)}; options: "
                         f"{', '.join(spec.options) or 'none'}")
    missing = [k for k in spec.required if k not in config]
    if missing:
        raise ValueError(f"extractor '{name}' needs extractor_config.{missing[0]}")
    if "pattern" in config:
        try:
            compiled = safe_regex.compile(str(config["pattern"]))
        except safe_regex.RegexError as exc:
            raise ValueError(f"extractor_config.pattern is not a valid regex: {exc}") from None
        group = config.get("group")
        if group is not None and not (
            (type(group) is int and 0 <= group <= compiled.groups)
            or (isinstance(group, str) and group in compiled.groupindex)
        ):
            names = f", named {', '.join(compiled.groupindex)}" if compiled.groupindex else ""
            raise ValueError(f"extractor_config.group {group!r} is not a group of the pattern "
                             f"(it has {compiled.groups} groups{names})")


def extract(name: str, trajectory: Trajectory, config: dict[str, Any]) -> str:
    return EXTRACTORS[name].impl.fn(trajectory, config)


def _assistant_texts(trajectory: Trajectory) -> list[str]:
    return [step.content for turn in trajectory.turns for step in turn.steps if step.content]


@extractor("last_assistant", "The last assistant message text (the final answer).")
def _last_assistant(trajectory: Trajectory, config: dict[str, Any]) -> str:
    texts = _assistant_texts(trajectory)
    return texts[-1] if texts else ""


@extractor("first_assistant", "The first assistant message text.")
def _first_assistant(trajectory: Trajectory, config: dict[str, Any]) -> str:
    texts = _assistant_texts(trajectory)
    return texts[0] if texts else ""


@extractor("all_assistant", "Every assistant message text, joined by newlines.",
           {"separator": "Joiner between messages (default newline)."})
def _all_assistant(trajectory: Trajectory, config: dict[str, Any]) -> str:
    return str(config.get("separator", "\n")).join(_assistant_texts(trajectory))


@extractor("last_turn", "Every assistant text of the last user turn, joined by newlines.")
def _last_turn(trajectory: Trajectory, config: dict[str, Any]) -> str:
    if not trajectory.turns:
        return ""
    return "\n".join(step.content for step in trajectory.turns[-1].steps if step.content)


def _calls(trajectory: Trajectory, config: dict[str, Any]) -> list[ToolCall]:
    tool = config.get("tool")
    return [c for c in trajectory.tool_calls if tool is None or c.name == tool]


@extractor("tool_arguments", "Arguments (JSON) of the calls to a tool; the last call unless all: true.",
           {"tool": "Tool name (default: any tool).", "all": "Every matching call, one JSON per line."})
def _tool_arguments(trajectory: Trajectory, config: dict[str, Any]) -> str:
    calls = _calls(trajectory, config)
    if not calls:
        return ""
    dump = [json.dumps(c.arguments if c.arguments is not None else c.raw_arguments, sort_keys=True) for c in calls]
    return "\n".join(dump) if config.get("all") else dump[-1]


@extractor("tool_output", "Result text of the calls to a tool; the last call unless all: true.",
           {"tool": "Tool name (default: any tool).", "all": "Every matching call, one per line."})
def _tool_output(trajectory: Trajectory, config: dict[str, Any]) -> str:
    calls = _calls(trajectory, config)
    if not calls:
        return ""
    return "\n".join(c.result for c in calls) if config.get("all") else calls[-1].result


@extractor("pattern", "A regex match in the last assistant message (group 1 if the pattern has groups).",
           {"pattern": "The regex.", "group": "Group number or name (default 1 if any group, else 0).",
            "scope": "last_assistant (default) or all_assistant."}, required=("pattern",))
def _pattern(trajectory: Trajectory, config: dict[str, Any]) -> str:
    source = _all_assistant(trajectory, {}) if config.get("scope") == "all_assistant" \
        else _last_assistant(trajectory, {})
    match = safe_regex.search(str(config["pattern"]), source)  # RegexTimeout past the bound: a grade error
    if not match:
        return ""
    group = config.get("group", 1 if match.re.groups else 0)
    return match.group(group) or ""


@extractor("after_marker", "The text after a marker in the last assistant message (empty if absent).",
           {"marker": "The marker text, e.g. 'ANSWER:'."}, required=("marker",))
def _after_marker(trajectory: Trajectory, config: dict[str, Any]) -> str:
    text = _last_assistant(trajectory, {})
    marker = str(config["marker"])
    index = text.rfind(marker)
    return text[index + len(marker):].strip() if index >= 0 else ""
