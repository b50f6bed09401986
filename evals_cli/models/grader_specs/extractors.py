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

from evals_cli import custom_code, safe_regex
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


def is_custom_ref(name: str) -> bool:
    """`path/to/file.py:func` (loaded from the suite's folder) or `package.module:func` (an installed module): a
    custom function, loaded when the grader is built."""
    file_part, sep, func = name.rpartition(":")
    return (bool(sep) and file_part.endswith(".py") and func.isidentifier()) or custom_code.is_module_ref(name)


# custom extractors, keyed by the resolved `file.py:func` the grader was bound to (evals_cli.graders.functions
# loads and checks them); keyed by the resolved path so that two suites' `custom.py:f` never meet
CUSTOM_EXTRACTORS: dict[str, tuple[str, Callable[..., Any]]] = {}


def check_extractor(name: str, config: dict[str, Any]) -> None:
    """Raise ValueError (a field error for pydantic) when the extractor or its options are wrong. A custom
    extractor's options are its own business (it receives extractor_config as it is); its file and signature
    are checked when the grader is built, where the suite's folder is known."""
    if is_custom_ref(name):
        return
    if ":" in name:
        raise ValueError(f"extractor '{name}' is neither a built-in nor 'path/to/file.py:function' (a custom "
                         "extractor: a .py file relative to the suite and the function's name) nor "
                         "'package.module:function' (one from an installed module)")
    if name not in EXTRACTORS:
        import difflib

        hint = difflib.get_close_matches(name, EXTRACTORS, n=1)
        more = f"did you mean '{hint[0]}'? " if hint else ""
        raise ValueError(f"unknown extractor '{name}'; {more}extractors: {', '.join(EXTRACTORS)}, or "
                         "'path/to/file.py:function' for a custom one")
    spec = EXTRACTORS[name].impl
    unknown = sorted(set(config) - set(spec.options))
    if unknown:
        raise ValueError(f"extractor '{name}' has no option {', '.join(unknown)}; options: "
                         f"{', '.join(spec.options) or 'none'}")
    missing = [k for k in spec.required if k not in config]
    if missing:
        raise ValueError(f"extractor '{name}' needs extractor_config.{missing[0]}")
    choices = {"scope": ("last_assistant", "all_assistant", "any_assistant"), "occurrence": ("last", "first")}
    for key, allowed in choices.items():
        if key in config and config[key] not in allowed:
            raise ValueError(f"extractor_config.{key} is {config[key]!r}; expected one of {', '.join(allowed)}")
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
    """The submission, in this thread: what custom code calls (letta-evals' helpers name the built-ins); graders
    call `extract_guarded`, which keeps a custom extractor off the run's event loop. A custom extractor that
    raises, exits, or returns anything but text, raises here: the grader then has no grade (an error), never a
    grade of an empty or made-up submission."""
    custom = CUSTOM_EXTRACTORS.get(name)
    if custom is None:
        return EXTRACTORS[name].impl.fn(trajectory, config)
    written, fn = custom
    value = custom_code.run_guarded(fn, *_extractor_args(fn, trajectory, config), where=f"custom extractor {written}")
    return _text(value, written)


async def extract_guarded(name: str, trajectory: Trajectory, config: dict[str, Any]) -> str:
    """The submission, for a grader: a built-in extractor inline, a custom one under the custom-code guard (a
    thread of its own, exits refused, its time counted against the sample's sample_timeout: CustomCodeError past
    it), so that no extractor can end, hold or stall the run."""
    custom = CUSTOM_EXTRACTORS.get(name)
    if custom is None:
        return EXTRACTORS[name].impl.fn(trajectory, config)
    written, fn = custom
    value = await custom_code.call(fn, *_extractor_args(fn, trajectory, config), where=f"custom extractor {written}")
    return _text(value, written)


def _extractor_args(fn: Callable[..., Any], trajectory: Trajectory, config: dict[str, Any]) -> tuple[Any, ...]:
    """letta-evals' three-argument extractors get agent_state None."""
    takes = getattr(fn, "__evals_extractor_params__", 2)
    return (trajectory, config, None) if takes == 3 else (trajectory, config)


def _text(value: Any, written: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"extractor {written} returned {type(value).__name__}; an extractor returns the text to "
                        "grade (str)")
    return value


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


def _scoped_texts(trajectory: Trajectory, scope: Any) -> list[str]:
    """The texts a pattern or marker is looked for in, most recent first: one (the last message, or all of them
    joined) or, for `any_assistant`, every assistant message from the last back (letta-evals' way: the most
    recent message that has it wins)."""
    if scope == "all_assistant":
        return [_all_assistant(trajectory, {})]
    if scope == "any_assistant":
        return list(reversed(_assistant_texts(trajectory)))
    return [_last_assistant(trajectory, {})]


def _all_matches(pattern: str, text: str) -> list[safe_regex.Match]:
    """Every non-overlapping match, under the same time bound as one search (RegexTimeout past it: a grade
    error, never a hang)."""
    compiled = safe_regex.compile(pattern)
    seconds = safe_regex.timeout_s()
    try:
        return list(compiled.finditer(text, timeout=seconds, concurrent=True))
    except TimeoutError:
        raise safe_regex.RegexTimeout(compiled.pattern, len(text), seconds) from None


_SCOPE = "last_assistant (default), all_assistant (joined) or any_assistant (the most recent message with a match)."


@extractor("pattern", "A regex match in the last assistant message (group 1 if the pattern has groups).",
           {"pattern": "The regex.", "group": "Group number or name (default 1 if any group, else 0).",
            "scope": _SCOPE,
            "search_all": "Every match in the text, not only the first, joined by separator.",
            "separator": "Joiner of the matches with search_all (default a space, as letta-evals)."},
           required=("pattern",))
def _pattern(trajectory: Trajectory, config: dict[str, Any]) -> str:
    for source in _scoped_texts(trajectory, config.get("scope")):
        if config.get("search_all"):
            matches = _all_matches(str(config["pattern"]), source)
            if matches:
                group = config.get("group", 1 if matches[0].re.groups else 0)
                return str(config.get("separator", " ")).join(m.group(group) or "" for m in matches)
            continue
        match = safe_regex.search(str(config["pattern"]), source)  # RegexTimeout past the bound: a grade error
        if match:
            group = config.get("group", 1 if match.re.groups else 0)
            return match.group(group) or ""
    return ""


@extractor("after_marker", "The text after a marker in the last assistant message (empty if absent).",
           {"marker": "The marker text, e.g. 'ANSWER:'.",
            "include_marker": "Keep the marker at the start of the text (default false).",
            "occurrence": "last (default) or first: which occurrence of the marker in a message counts.",
            "scope": _SCOPE}, required=("marker",))
def _after_marker(trajectory: Trajectory, config: dict[str, Any]) -> str:
    marker = str(config["marker"])
    for text in _scoped_texts(trajectory, config.get("scope")):
        index = text.find(marker) if config.get("occurrence") == "first" else text.rfind(marker)
        if index >= 0:
            return text[index if config.get("include_marker") else index + len(marker):].strip()
    return ""
