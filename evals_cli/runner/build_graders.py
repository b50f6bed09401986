"""Suite grader specs -> grader instances (every problem collected, for one ConfigError).

A custom extractor (`extractor: file.py:func`) is loaded and its signature checked here, at load time, before
its grader is built: the graders themselves never load suite code. What loads it (graders/functions.py
`bind_extractor`, with the letta-evals stand-ins a custom file may import) is handed in by the caller, so that
building graders stands below the custom-code loading.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint, JudgeOverrides
from evals_cli.errors import ConfigError
from evals_cli.graders.base import GRADERS, Grader, GraderContext
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.registry import missing_overrides, plugin_code

if TYPE_CHECKING:
    from evals_cli.suite.spec import SuiteSpec

BindExtractor = Callable[[GraderBase, Path], GraderBase]
"""A grader's spec -> the same spec naming its custom extractor once loaded (`bind_extractor`)."""


def build_graders(suite: SuiteSpec, pool: ClientPool | None, agent: Endpoint | None,
                  no_judge: bool = False, judge_overrides: JudgeOverrides | None = None, *,
                  bind: BindExtractor, agent_model: str | None = None) -> dict[str, Grader[Any]]:
    """`agent` is the judges' last fallback endpoint; `no_judge` leaves out the kinds that call a model;
    `judge_overrides` (--judge-model, --judge-base-url, --judge-api-key) win over every judge setting; `bind`
    loads a grader's custom extractor (see the module's docstring); `agent_model`: the model the agent under
    test asks, priced by the suite's `pricing:` (the cost grader)."""
    ctx = GraderContext(base_dir=suite.base_dir, pool=pool, judge=suite.judge, agent=agent,
                        judge_overrides=judge_overrides or None, pricing=suite.pricing, agent_model=agent_model)
    graders: dict[str, Grader[Any]] = {}
    problems: list[str] = []
    for name, spec in suite.graders.items():
        entry = GRADERS[spec.kind]
        impl = entry.impl
        if impl.uses_judge and no_judge:
            continue
        if missing_overrides(impl, ("grade",)):
            problems.append(f"graders.{name}: {entry.named()} cannot grade: its class {impl.__name__} (module "
                            f"{entry.module}) does not implement grade; fix the kind")
            continue
        try:
            with plugin_code(entry, "being built"):
                graders[name] = impl(name, bind(spec, suite.base_dir), ctx)
        except ConfigError as exc:
            problems.extend(f"graders.{name}: {p}" for p in exc.problems)
        except (ValueError, OSError, TypeError) as exc:
            problems.append(f"graders.{name}: {exc}")
    if problems:
        raise ConfigError(problems)
    return graders
