"""Suite grader specs -> grader instances (every problem collected, for one ConfigError)."""

from __future__ import annotations

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint, resolve_judge
from evals_cli.errors import ConfigError
from evals_cli.graders import grounding, loops, model_judge, stop, text, tool_args, tool_schema, trajectory  # noqa: F401
from evals_cli.graders.base import GRADER_KINDS, Grader
from evals_cli.models.specs import SuiteSpec


def build_graders(suite: SuiteSpec, pool: ClientPool | None, agent: Endpoint | None,
                  no_judge: bool = False) -> dict[str, Grader]:
    graders: dict[str, Grader] = {}
    problems: list[str] = []
    for name, spec in suite.graders.items():
        cls = GRADER_KINDS[spec.kind]
        if cls.uses_judge and no_judge:
            continue
        try:
            if cls.uses_judge:
                endpoint = resolve_judge(spec, suite.judge, agent)
                panel = [resolve_judge(member, None, endpoint) for member in spec.panel or []]
                graders[name] = cls(name, spec, suite.base_dir, endpoint, pool, panel)  # type: ignore[call-arg]
            else:
                graders[name] = cls(name, spec, suite.base_dir)  # type: ignore[call-arg]
        except ConfigError as exc:
            problems.extend(f"graders.{name}: {p}" for p in exc.problems)
        except (ValueError, OSError, TypeError) as exc:
            problems.append(f"graders.{name}: {exc}")
    if problems:
        raise ConfigError(problems)
    return graders
