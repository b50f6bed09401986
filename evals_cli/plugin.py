"""The public plug-in contract: everything a kind written outside evals-cli needs, from one module.

A plug-in (an installed package with an entry point in the group `evals_cli`, or code that registers kinds after
`import evals_cli`) imports only from here: the base classes and spec bases of the four kinds (target, grader,
user player, effect) and of exporters, the types they receive and return, the toolbox they call tools through,
and the registries they register with. Everything else in `evals_cli` is internal and may move between releases;
these names are what docs/plugins.md documents and tests/fixtures/plugin_pkg uses (tests/test_plugins.py checks
that the example imports nothing else).

Registering: a decorator per family, the kind's name and, where the kind takes options, its spec model (whose
`kind` field is a `Literal` of that name)::

    @GRADERS.register("acme_shout", spec=ShoutSpec)       # class Shout(Grader[ShoutSpec])
    @TARGETS.register("acme_echo", spec=EchoSpec)         # class Echo(Target), EchoSpec(TargetBase)
    @USER_PLAYERS.register("acme_polite")                 # settings -> (sample, repeat) -> UserPlayer
    @effect("acme.count", summary=..., arguments=...)     # (world, spec, args) -> (text, EffectRecord)
    @EXPORTERS.register("acme_csv")                       # (FinishedRun, path) -> None
"""

from __future__ import annotations

from evals_cli.endpoints.resolve import Endpoint
from evals_cli.environment.effects import EffectError, effect
from evals_cli.environment.world import World
from evals_cli.errors import ConfigError
from evals_cli.exporters.base import EXPORTERS, Exporter, FinishedRun
from evals_cli.graders.base import GRADERS, GradeContext, Grader, GraderContext
from evals_cli.graders.functions import grader
from evals_cli.models.effects import Effect, EffectSpec
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import Grade, RunSummary, SampleResult
from evals_cli.models.sample import Sample
from evals_cli.models.simulated_user import UserSpec
from evals_cli.models.target_specs import EndpointSpec, TargetBase
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import EffectRecord, Step, StopReason, ToolCall, Trajectory, Turn, Usage
from evals_cli.registry import PluginError
from evals_cli.simulation.player import USER_PLAYERS, ConversationView, UserMove, UserPlayer, UserSimulatorError
from evals_cli.targets.base import TARGETS, Agent, SampleFailed, Target, TargetContext, Toolbox
from evals_cli.targets.episode import Episode
from evals_cli.targets.openai_chat import OpenAIChat, OpenAIChatTarget

__all__ = [
    # registering kinds
    "EXPORTERS", "GRADERS", "TARGETS", "USER_PLAYERS", "effect", "grader",
    # targets: a spec base (no model: no endpoint needed), the class, what it is built with and calls tools through
    "Agent", "Endpoint", "EndpointSpec", "Episode", "OpenAIChat", "OpenAIChatTarget", "SampleFailed", "Target",
    "TargetBase", "TargetContext", "Toolbox",
    # graders
    "Grade", "GradeContext", "Grader", "GraderBase", "GraderContext",
    # user players
    "ConversationView", "UserMove", "UserPlayer", "UserSimulatorError", "UserSpec",
    # effects: the kind, what it reads, the world it acts on, the record it returns, the error it raises
    "Effect", "EffectError", "EffectRecord", "EffectSpec", "World",
    # exporters
    "Exporter", "FinishedRun", "RunSummary", "SampleResult",
    # what every kind receives and returns
    "Sample", "Step", "StopReason", "ToolCall", "ToolSpec", "Trajectory", "Turn", "Usage",
    # errors
    "ConfigError", "PluginError",
]
