"""Targets are plug-ins of one shape: each kind's module defines its spec and registers it with its class in
TARGETS (the suite's target union is built from that registry: tests/test_registry.py runs a kind added as one
module), every class takes `(spec, ctx)`, and what differs between kinds is asked of the class, so nothing
outside a target's module names a kind."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Literal

import pytest

from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.errors import ConfigError
from evals_cli.models.base import StrictModel
from evals_cli.models.tools import ToolSpec
from evals_cli.registry import ELSEWHERE
from evals_cli.runner.target_factory import build_target, judge_fallback, resolve_target_endpoint, validate_builds
from evals_cli.suite.spec import SuiteSpec
from evals_cli.targets.base import TARGETS, Target, TargetContext
from evals_cli.targets.openai_chat import OpenAIChatTarget

PACKAGE = Path(__file__).resolve().parent.parent / "evals_cli"


def test_the_registry_is_discovered_from_the_package() -> None:
    assert {"openai_chat", "openai_responses", "python"} <= set(TARGETS.kinds())
    for entry in TARGETS.entries():
        # in targets/, or beside what it builds on (`ELSEWHERE`: the recorded_session target in sessions/)
        assert issubclass(entry.impl, Target) and (entry.module.startswith("evals_cli.targets.")
                                                   or entry.module in ELSEWHERE[TARGETS.package or ""])
        assert entry.spec is not None and entry.spec.__module__ == entry.module  # the spec lives with its kind


def test_no_module_outside_a_targets_own_names_a_target_kind() -> None:
    """`kind == "python"` and friends belong on the target class (calls_model, checked_by_building, ...)."""
    kinds = set(TARGETS.kinds())
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(("targets/", "models/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
                names = [n.value for n in [node.left, *node.comparators] if isinstance(n, ast.Constant)]
                offenders += [f"{relative}:{node.lineno}: {name!r}" for name in names if name in kinds]
    assert offenders == []


class _Probe(Target):
    """A kind registered by this test alone: one module's worth of code is all a new target needs."""

    calls_model = False
    checked_by_building = True
    built: list[TargetContext] = []

    def __init__(self, spec: Any, ctx: TargetContext) -> None:
        super().__init__(spec, ctx)
        _Probe.built.append(ctx)

    @classmethod
    def resolve_endpoint(cls, spec: Any, overrides: dict[str, Any] | None = None) -> Endpoint:
        return Endpoint(role="agent", base_url=None, api_key="k", model="probe")

    async def run(self, sample: Any, trajectory: Any = None, *, repeat: int = 0) -> Any:
        return trajectory


class _ProbeSpec(StrictModel):
    kind: Literal["probe"] = "probe"


@pytest.fixture
def probe() -> Any:
    TARGETS.register("probe", spec=_ProbeSpec)(_Probe)
    _Probe.built.clear()
    yield _ProbeSpec()
    TARGETS.unregister("probe")


def test_per_kind_behaviour_is_asked_of_the_class(probe: Any, tmp_path: Path) -> None:
    endpoint = resolve_target_endpoint(probe)
    assert endpoint.model == "probe" and judge_fallback(probe, endpoint) is None
    tools = {"t": ToolSpec.model_validate({"description": "d", "returns": "r"})}
    suite = SuiteSpec.model_construct(target=probe, tools=tools)
    suite._base_dir = tmp_path
    target = build_target(suite, endpoint, ClientPool(), "prompt")
    assert isinstance(target, _Probe) and target.spec is probe
    ctx = _Probe.built[-1]
    assert (ctx.tools, ctx.endpoint, ctx.system_prompt, ctx.base_dir) == (tools, endpoint, "prompt", tmp_path)
    assert validate_builds(probe)  # `evals validate` builds it too


def test_model_driven_kinds_fall_back_to_the_agent_and_every_kind_is_built_by_validate() -> None:
    spec = OpenAIChatTarget(model="m", base_url="http://localhost:1/v1")
    agent = resolve_target_endpoint(spec)
    assert agent.model == "m" and judge_fallback(spec, agent) is agent
    assert validate_builds(OpenAIChatTarget())  # built without calling a model: what would fail at run time shows


def test_a_kind_whose_spec_names_no_model_needs_no_endpoint_and_gets_no_judge_fallback() -> None:
    from evals_cli.targets.base import Target

    class Plain(Target):
        async def run(self, sample: Any, trajectory: Any = None, *, repeat: int = 0) -> Any:
            return trajectory

    class PlainSpec(StrictModel):
        kind: Literal["zz_plain"] = "zz_plain"

    TARGETS.register("zz_plain", spec=PlainSpec)(Plain)
    try:
        agent = resolve_target_endpoint(PlainSpec())  # no model setting, no EVAL_AGENT_MODEL: no error
        assert agent.model == "zz_plain" and agent.base_url is None and "no model endpoint" in agent.describe()
        assert judge_fallback(PlainSpec(), agent) is None  # a judge must be configured: none to fall back to
        assert Plain(PlainSpec(), TargetContext()).max_steps == 20  # the spec declares none: the default
    finally:
        TARGETS.unregister("zz_plain")


def test_a_kind_no_target_runs_is_a_config_error_naming_the_kinds_that_do() -> None:
    spec = type("Spec", (), {"kind": "recorded_sessions"})()
    suite = SuiteSpec.model_construct(target=spec, tools={})
    with pytest.raises(ConfigError, match="target.kind: 'recorded_sessions' has no agent to run here; the kinds "
                                          "that do: command, http, openai_chat, openai_responses, python"):
        build_target(suite, Endpoint(role="agent", base_url=None, api_key="k", model="m"), ClientPool(), None)
