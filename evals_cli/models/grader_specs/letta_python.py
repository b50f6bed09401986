"""Stand-ins for the parts of letta-evals' Python package that its custom graders, extractors and rewards import, so
that those files load as letta-evals users wrote them (`from letta_evals.decorators import extractor, grader`,
`from letta_evals import RewardOutput, reward_composer`, ...).

Installed into `sys.modules` when a custom file importing `letta_evals` is loaded (`install`), in place of the real
package too when it is installed: its helpers read Letta messages, not this project's trajectory. Each name maps
onto this project: `GradeResult` builds a `Grade`, `Sample` is ours, a trajectory is our `Trajectory` (letta-evals'
list of turns of Letta messages does not exist here: `get_assistant_messages` returns the assistant steps, whose
`.content` is their text), the decorators check the signature letta-evals checks and mark the function as ours do.
What needs a Letta server (agent state, memory blocks, the client) is not provided: a file importing it fails to
load with the name it lacks.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from evals_cli.models.grader_specs import extractors as ours
from evals_cli.models.results import Grade
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Step, Trajectory

LettaMessageUnion = Any


def GradeResult(score: float | None, rationale: str = "", metadata: dict[str, Any] | None = None,  # noqa: N802
                **_: Any) -> Grade:
    """letta-evals' grade: our Grade (its extra fields, such as timing, are not kept)."""
    return Grade(score=score, rationale=rationale, metadata=metadata or {})


@dataclass
class RewardOutput:
    """letta-evals' reward: a score in [0, 1] and metadata (read by the custom gate as `.score`)."""

    score: float
    metadata: dict[str, Any] = field(default_factory=dict)


def _names(fn: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(fn).parameters)


def grader(func: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """letta-evals' @grader: (sample, submission) -> GradeResult, marked as a custom grader of ours."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        if _names(fn) != ["sample", "submission"]:
            raise TypeError(f"Grader {fn.__name__} must have parameters (sample, submission), got {_names(fn)}")
        fn.__evals_grader__ = True  # type: ignore[attr-defined]
        fn.__evals_wants_trajectory__ = False  # type: ignore[attr-defined]
        return fn

    return mark if func is None else mark(func)


def extractor(func: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """letta-evals' @extractor: (trajectory, config) or (trajectory, config, agent_state) -> str."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        if _names(fn) not in (["trajectory", "config"], ["trajectory", "config", "agent_state"]):
            raise TypeError(f"Extractor {fn.__name__} must have parameters (trajectory, config) or (trajectory, "
                            f"config, agent_state), got {_names(fn)}")
        return fn

    return mark if func is None else mark(func)


def reward_composer(func: Callable[..., Any]) -> Callable[..., Any]:
    """letta-evals' @reward_composer: one parameter, ctx."""
    if _names(func) != ["ctx"]:
        raise TypeError(f"Reward composer {func.__name__} must have one parameter named ctx, got {_names(func)}")
    return func


def get_assistant_messages(trajectory: Trajectory) -> list[Step]:
    """The assistant steps with text (letta-evals' AssistantMessage objects; `.content` is the text)."""
    return [step for turn in trajectory.turns for step in turn.steps if step.content]


def get_last_turn_messages(trajectory: Trajectory, message_type: Any = None) -> list[Step]:
    return [step for step in trajectory.turns[-1].steps if step.content] if trajectory.turns else []


def flatten_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(getattr(item, "text", str(item)) for item in content)
    raise ValueError(f"Unexpected content type: {type(content)}")


def _builtin(name: str) -> Callable[[Trajectory, dict[str, Any]], str]:
    def run(trajectory: Trajectory, config: dict[str, Any]) -> str:
        return ours.extract(name, trajectory, dict(config or {}))

    run.__name__ = name
    return run


def _module(name: str, **members: Any) -> ModuleType:
    module = ModuleType(name, f"evals-cli's stand-in for {name} (see evals_cli.models.grader_specs.letta_python)")
    module.__dict__.update(members)
    return module


def install_if_imported(source: str) -> None:
    """A custom grader, extractor or reward file written for letta-evals (importing `letta_evals`) runs with these
    stand-ins (code_loading's `stand_ins` hook), even when the real letta-evals is installed: its helpers read
    Letta message objects, not evals-cli's trajectory, and its decorators do not mark functions as evals-cli's,
    so with it a letta suite that runs here without it was refused."""
    if re.search(r"^\s*(from|import)\s+letta_evals\b", source, re.MULTILINE):
        install()


def install() -> bool:
    """Put the stand-in modules in sys.modules (once), in place of the real letta-evals too if it is installed:
    True when they are there."""
    if getattr(sys.modules.get("letta_evals"), "__evals_stand_in__", False):
        return True
    builtins = {name: _builtin(name) for name in ("last_assistant", "first_assistant", "all_assistant",
                                                  "last_turn", "pattern", "after_marker")}
    common = {"GradeResult": GradeResult, "Sample": Sample, "LettaMessageUnion": LettaMessageUnion,
              "RewardOutput": RewardOutput}
    decorators = {"grader": grader, "extractor": extractor, "reward_composer": reward_composer}
    utils = {"get_assistant_messages": get_assistant_messages, "get_last_turn_messages": get_last_turn_messages,
             "flatten_content": flatten_content}
    modules = {
        "letta_evals": _module("letta_evals", __evals_stand_in__=True, **common, **decorators),
        "letta_evals.decorators": _module("letta_evals.decorators", **decorators),
        "letta_evals.models": _module("letta_evals.models", **common),
        "letta_evals.extractors": _module("letta_evals.extractors", **builtins, extractor=extractor),
        "letta_evals.extractors.builtin": _module("letta_evals.extractors.builtin", **builtins),
        "letta_evals.extractors.utils": _module("letta_evals.extractors.utils", **utils),
    }
    for name, module in modules.items():
        if "." in name:
            parent, _, child = name.rpartition(".")
            setattr(modules[parent], child, module)
        module.__path__ = []  # a package: its submodules import
    sys.modules.update(modules)
    return True
