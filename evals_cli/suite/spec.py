"""`SuiteSpec`, everything suite.yaml can say, composed from the kinds that registered themselves.

A grader or target kind is one module (its spec model and its implementation, registered together); the
suite's `graders:` and `target:` unions are built here from `GRADERS` and `TARGETS` (evals_cli/kinds.py), so
adding a kind touches no list, union or import anywhere else. This lives in the suite layer, above graders and
targets, because building the unions means importing kinds (the registries import them as they discover them,
so this module imports only the registries); the models layer below stays pure data and imports neither.
Commands that need no suite (`evals --help`, `evals list extractors`) never import this module, and modules
that only annotate with `SuiteSpec` import it under TYPE_CHECKING.

The unions are built when this module is first imported (when the first suite is loaded: `import evals_cli`
imports no kind), and built again by `refresh` whenever a kind was registered or unregistered since (a kind a
plug-in or a test registers after that still counts): `load_suite`, `load_target_file` and
`SuiteSpec.model_validate` call it, and comparing two counters is all it costs when nothing moved. A suite
naming only built-in kinds imports only those kinds' modules (about 40 ms less at start-up for a suite of
`kind: tool` graders); any other name discovers every kind first (see `refresh`).

The kinds are listed alphabetically in the unions, hence in `unknown kind '...'; kinds: ...` messages and in
`evals list graders`: an order no one has to keep by hand, and the same whichever module was imported first.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union

from pydantic import Discriminator, Field, PrivateAttr, Tag, field_validator, model_validator

from evals_cli.computer.tools import ComputerTool
from evals_cli.kinds import GRADERS, TARGETS
from evals_cli.mcp.spec import McpServerSpec, server_name_problem
from evals_cli.models.base import StrictModel, SuiteFile
from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.sandbox import SANDBOX_DESCRIPTION, SandboxSpec
from evals_cli.models.simulated_user import UserSimulatorSpec, UserSpec
from evals_cli.models.specs import GateField, JudgeSpec, Price, WeightedAverageGate, cross_check_raw
from evals_cli.models.target_specs import kind_or
from evals_cli.models.tools import ToolSpec
from evals_cli.registry import Registry

DEFAULT_TARGET = "openai_chat"  # the target kind of a `target:` block without `kind:` (as in every earlier version)


def _kind_names(spec: type[Any]) -> tuple[Any, ...]:
    """The values a spec's `kind` field accepts: its default (the kind's name) first, then its aliases."""
    field = getattr(spec, "model_fields", {}).get("kind")
    if field is None:
        return ()
    values = typing.get_args(field.annotation) if typing.get_origin(field.annotation) is Literal else ()
    return (field.default, *(v for v in values if v != field.default))


def registered_specs(registry: Registry[Any], everything: bool = True) -> list[tuple[str, type[Any]]]:
    """(kind, spec model) of every kind of the family that takes options, alphabetically by kind; an alias
    (an old name registered for the same spec) is not a kind of its own here: see `kind_aliases`.

    A spec must declare `kind: Literal["<its kind>", <its aliases>...] = "<its kind>"`: the union tells kinds
    apart by that field, so a spec registered under a name it does not accept would be accepted under one kind
    and run as another (TypeError at import). `everything=False`: the kinds registered so far (the union of a
    suite is built from the kinds it names: see `refresh`)."""
    pairs = []
    for entry in sorted(registry.entries() if everything else registry.loaded(), key=lambda e: e.kind):
        if entry.spec is None:
            continue
        names = _kind_names(entry.spec)
        if entry.kind not in names:
            raise TypeError(f"{registry.family} kind {entry.kind!r} ({entry.module}): its spec "
                            f"{entry.spec.__qualname__} must declare kind: Literal[{entry.kind!r}] = {entry.kind!r}")
        if names[0] == entry.kind:
            pairs.append((entry.kind, entry.spec))
    return pairs


def kind_aliases(registry: Registry[Any], everything: bool = True) -> dict[str, str]:
    """Old name -> kind, for every alias of the family: a name registered for a spec whose `kind` defaults to
    another name (`@GRADERS.register("tool", spec=MatchSpec)` beside `register("match", ...)`). An alias
    validates as that spec and runs that implementation; `evals validate` notes it as deprecated. An alias
    registers with its kind, in one module: `everything=False` (the kinds registered so far) has every alias of
    those kinds."""
    aliases = {}
    for entry in registry.entries() if everything else registry.loaded():
        names = _kind_names(entry.spec) if entry.spec is not None else ()
        if names and names[0] != entry.kind:
            aliases[entry.kind] = names[0]
    return dict(sorted(aliases.items()))


def deprecation_note(alias: str, kind: str) -> str:
    """The words for a deprecated kind name (the same in `evals validate` and `evals list`)."""
    return f"kind '{alias}' is the old name of '{kind}': still accepted, but deprecated; write kind: {kind}"


def _grader_kind(aliases: dict[str, str]) -> Callable[[Any], str | None]:
    """The discriminator of the grader union: `kind`, with an alias read as its kind (so an unknown kind's
    message lists the kinds, not their old names); None (kind missing) is an error."""

    def kind_of(value: Any) -> str | None:
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        if kind is None:
            return None
        kind = kind if isinstance(kind, str) else repr(kind)
        return aliases.get(kind, kind)

    return kind_of


def grader_union(everything: bool = True) -> Any:
    """Every registered grader spec (`everything=False`: those registered so far), told apart by `kind:`
    (required: a grader without one is an error)."""
    members = tuple(Annotated[spec, Tag(kind)] for kind, spec in registered_specs(GRADERS, everything))
    return Annotated[Union[members], Discriminator(_grader_kind(kind_aliases(GRADERS, everything)))]  # noqa: UP007


def target_union(everything: bool = True) -> Any:
    """Every registered target spec (`everything=False`: those registered so far), told apart by `kind:`,
    openai_chat when it is missing (a callable discriminator with a Tag per kind, since a plain `kind`
    discriminator cannot have a default)."""
    members = tuple(Annotated[spec, Tag(kind)] for kind, spec in registered_specs(TARGETS, everything))
    return Annotated[Union[members], Discriminator(kind_or(DEFAULT_TARGET))]  # noqa: UP007


if TYPE_CHECKING:
    # what type checkers see: every grader spec is a GraderBase, every target spec a StrictModel (the unions
    # exist only once the kinds are imported)
    GraderSpec: TypeAlias = GraderBase
    TargetSpec: TypeAlias = StrictModel
    _GraderUnion: TypeAlias = GraderBase
    _TargetUnion: TypeAlias = StrictModel
else:
    # SuiteSpec's unions: of what is registered when this is imported, at least one kind each (a union has
    # members); `refresh` rebuilds them before a suite is validated, from the kinds that suite names
    GRADERS.ensure(("tool",))
    TARGETS.ensure((DEFAULT_TARGET,))
    _GraderUnion = grader_union(everything=False)
    _TargetUnion = target_union(everything=False)

    def __getattr__(name: str) -> Any:
        """`GraderSpec` and `TargetSpec`, read from outside: the unions of every kind (discovered first), as
        they always were; SuiteSpec itself holds the unions of the kinds registered so far (see `refresh`)."""
        if name in ("GraderSpec", "TargetSpec"):
            refresh()
            return _GraderUnion if name == "GraderSpec" else _TargetUnion
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def current_unions() -> tuple[Any, Any]:
    """The grader and target unions SuiteSpec holds now (the kinds registered so far: call `refresh` first)."""
    return _GraderUnion, _TargetUnion


class SuiteSpec(SuiteFile):
    """A whole suite.yaml."""

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> SuiteSpec:
        refresh(obj)  # the kinds it names, and a kind registered since the unions were built, are in its unions
        return super().model_validate(obj, *args, **kwargs)

    name: str = Field(description="Suite name, used in output folder names.")
    description: str | None = Field(default=None, description="Free text.")
    dataset: str = Field(description="JSONL dataset (or tutorial JSON array), relative to the suite file. A "
                         "traces target may leave it out: every traced conversation is then a sample.")
    max_samples: int | None = Field(default=None, ge=1, description="Run at most this many samples.")
    sample_tags: list[str] | None = Field(default=None, description="Run only samples carrying one of these tags.")
    concurrency: int = Field(default=4, ge=1, description="Samples in flight at once.")
    repeats: int = Field(default=1, ge=1, description="Run every sample this many times (independent conversations).")
    target: _TargetUnion = Field(description="The agent under test.")
    tools: dict[str, ToolSpec] = Field(default_factory=dict, description="Mocked tools offered to the agent.")
    user_tools: dict[str, ToolSpec] = Field(
        default_factory=dict, description="Dual control: tools of the simulated user (the same shape as `tools`: "
        "returns, cases, effects, python logic), over the same world as the agent's; offered to the user "
        "simulator as function tools. Names must differ from the agent's tools.")
    mcp_servers: dict[str, McpServerSpec] = Field(
        default_factory=dict, description="MCP servers whose tools the agent is offered, by name: stdio (command, "
        "args, env) or streamable HTTP (url, headers); mode live (calls go to the server) or mock (schemas only).")
    user_mcp_servers: dict[str, McpServerSpec] = Field(
        default_factory=dict, description="Dual control: MCP servers whose tools the simulated user is offered "
        "(the same shape as `mcp_servers`; mode mock takes the results from `user_tools`), started in the same "
        "episode (a {workspace} server works in the agent's workspace). Server names must differ from "
        "`mcp_servers`' and tool names from the agent's tools.")
    computer: list[ComputerTool] = Field(
        default_factory=list, description="Computer tools offered to the agent by name, run in the episode's "
        "sandbox (needs `sandbox:`): bash (a command line run by bash -c in /workspace) and edit (view, create, "
        "str_replace, insert files in /workspace). Their calls are trajectory steps like any tool's.")
    environment: EnvironmentSpec | None = Field(
        default=None, description="The mocked world (files, records) stateful tools act on; copied afresh for every "
        "sample and repeat; a row's `environment` extends it.")
    sandbox: SandboxSpec | None = Field(default=None, description=SANDBOX_DESCRIPTION + " A row's `sandbox` "
                                        "replaces it for that row.")
    judge: JudgeSpec | None = Field(default=None, description="Default endpoint/model for model_judge graders.")
    user_simulator: UserSimulatorSpec | None = Field(
        default=None, description="The model that plays simulated users (rows with a `user:` block); unset fields "
        "fall back to EVAL_USER_*, then the judge's endpoint, then the agent's.")
    user: UserSpec | None = Field(
        default=None, description="Defaults for every row's `user:` block (a row without one stays an ordinary "
        "sample): the row's keys win, `knows` is merged fact by fact.")
    graders: dict[str, _GraderUnion] = Field(
        default_factory=dict, validate_default=True,
        description="Grader name -> grader spec (at least one)."
    )
    gate: GateField = Field(default_factory=WeightedAverageGate, description="The pass/fail decision.")
    pricing: dict[str, Price] = Field(default_factory=dict, description="Model name -> price per million tokens.")
    max_cost: float | None = Field(
        default=None, gt=0, description="Stop scheduling new samples once the run has spent this much (needs pricing)."
    )
    code_dirs: list[str] = Field(
        default_factory=list, description="Folders, relative to the suite file, that custom code (extractors, "
        "@grader functions, rewards, python agents) may be loaded from besides the suite's own; a custom file "
        "anywhere else is refused."
    )
    # set by the loader for a letta-evals suite file: its results keep letta-evals' counting where ours differs
    _letta_format: bool = PrivateAttr(default=False)

    @property
    def letta_format(self) -> bool:
        """Loaded from a letta-evals suite file (see evals_cli/suite/letta.py). Such a suite's per-turn grades count
        a turn as passed at a score of 1.0, as letta-evals counts `turns_passed`, so the numbers its users
        compare with letta-evals' mean the same."""
        return self._letta_format
    # the folder of the --target file, set by the loader: a python agent that file names is relative to it
    _target_dir: Path | None = PrivateAttr(default=None)
    # the key paths whose value is a `${VAR:-default}` default (the variable unset), with the variable: a run
    # whose endpoint is such a default, with nothing listening there, was pointed at no endpoint at all
    _defaults: dict[tuple[str | int, ...], str] = PrivateAttr(default_factory=dict)

    def defaulted(self, *path: str | int) -> str | None:
        """The variable whose `${VAR:-default}` default gave the value at `path` (None: written or set)."""
        return self._defaults.get(path)

    def code_roots(self, target: bool = False) -> list[Path]:
        """The folders custom files may be loaded from: the suite's and its `code_dirs`; for the target (`target`),
        also the folder of the --target file that named it."""
        extra = [self._target_dir] if target and self._target_dir is not None else []
        return [self.base_dir, *(self.resolve(d) for d in self.code_dirs), *extra]

    @model_validator(mode="before")
    @classmethod
    def _dataset_from_target(cls, data: Any) -> Any:
        """A target kind whose samples are its own records (traces) names the dataset when the suite does not."""
        if isinstance(data, dict) and "dataset" not in data and isinstance(data.get("target"), dict):
            entry = TARGETS.get(str(data["target"].get("kind") or ""))
            default = getattr(entry.impl, "default_dataset", None) if entry is not None else None
            dataset = default(data["target"]) if default is not None else None
            if dataset is not None:
                data = {**data, "dataset": dataset}
        return data

    @field_validator("mcp_servers", "user_mcp_servers")
    @classmethod
    def _server_names(cls, servers: dict[str, McpServerSpec]) -> dict[str, McpServerSpec]:
        for name in servers:
            problem = server_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        return servers

    @model_validator(mode="after")
    def _computer_needs_a_sandbox(self) -> SuiteSpec:
        if self.computer and self.sandbox is None:
            raise ValueError(f"computer: [{', '.join(self.computer)}] run in the episode's sandbox, and the suite "
                             "has none; add sandbox: {kind: bwrap} (or kind: none to run them on this machine, "
                             "unisolated)")
        taken = [name for name in self.computer if name in self.tools or name in self.user_tools]
        if taken:
            raise ValueError(f"computer: {taken[0]} is also declared in tools: or user_tools:; a computer tool "
                             "keeps its name: rename the mocked tool")
        return self

    @field_validator("graders")
    @classmethod
    def _graders_for_live_targets(cls, graders: dict[str, Any]) -> dict[str, Any]:
        # a validator, not min_length: a missing key and an empty mapping get the same words (validate_default);
        # every target of a live suite is graded (recorded sessions are a document kind of their own)
        if not graders:
            raise ValueError("required field is missing: give at least one grader")
        return graders

    def naming_notes(self) -> list[tuple[tuple[str, ...], str]]:
        """Deprecated names the suite uses (field path, note): warnings, not problems; the suite runs as is."""
        aliases = kind_aliases(GRADERS, everything=False)  # its kinds are registered, with their old names
        return [(("graders", name, "kind"), deprecation_note(spec.kind, aliases[spec.kind]))
                for name, spec in self.graders.items() if spec.kind in aliases]

    def cross_check(self) -> list[tuple[tuple[str, ...], str]]:
        """Problems between sections (field path, message); see `cross_check_raw` for the loader. Names the agent
        and the user share are the loader's to report for a suite file; a suite built in Python gets them here."""
        from evals_cli.suite.actors import shared_names

        return [*cross_check_raw(self.model_dump(include={"gate", "graders"})),
                *shared_names(self.tools, self.user_tools, self.mcp_servers, self.user_mcp_servers)]


_built_from = (GRADERS.version, TARGETS.version)  # the registries' versions the unions above were built from
generation = 0  # bumped by every rebuild: a model elsewhere holding a union (the --target file's) compares it


def named_kinds(data: Any) -> tuple[list[str], list[str]] | None:
    """The grader and target kinds a suite's raw mapping names (a target without `kind:` is the default), or
    None when any is not a plain name (missing, not text) or the sections are not mappings."""
    if not isinstance(data, dict):
        return None
    graders, target = data.get("graders", {}), data.get("target", {})
    if not isinstance(graders, dict) or not isinstance(target, dict | None):
        return None
    kinds = [g.get("kind") if isinstance(g, dict) else None for g in graders.values()]
    target_kind = (target or {}).get("kind", DEFAULT_TARGET)
    if not all(isinstance(k, str) for k in (*kinds, target_kind)):
        return None
    return [k for k in kinds if isinstance(k, str)], [str(target_kind)]


def refresh(data: Any = None) -> int:
    """Build the unions again when a grader or target kind was registered or unregistered since they were built
    (a plug-in's or a test's, after the first suite was loaded), and put them into SuiteSpec; the generation.

    With a suite's raw mapping (`data`) that names only built-in kinds (and no plug-in is installed), only those
    kinds' modules are imported (`Registry.ensure`) and the unions hold the kinds registered so far: a suite of
    `kind: tool` graders does not import the judge. Every kind the suite names is in them, so it validates as
    against every kind; a name that is not a built-in kind (a plug-in's, a typo, a missing `kind:`) discovers
    every kind first, so an unknown kind's message still lists them all."""
    global _GraderUnion, _TargetUnion, _built_from, generation
    named = named_kinds(data) if data is not None else None
    if named is None:
        GRADERS.discover()
        TARGETS.discover()
    else:
        GRADERS.ensure(named[0])
        TARGETS.ensure(named[1])
    if (GRADERS.version, TARGETS.version) == _built_from:
        return generation
    _GraderUnion, _TargetUnion = grader_union(everything=False), target_union(everything=False)
    _built_from = (GRADERS.version, TARGETS.version)
    retype(SuiteSpec, {"graders": dict[str, _GraderUnion], "target": _TargetUnion})
    generation += 1
    return generation


def retype(model: type[Any], annotations: dict[str, Any]) -> None:
    """Give fields of a built model new annotations (a union with more members), keeping their defaults and
    descriptions, and rebuild its validator: pydantic does not read a class's annotations again by itself."""
    import copy

    from pydantic.fields import FieldInfo

    for name, annotation in annotations.items():
        field = copy.copy(model.__pydantic_fields__[name])
        fresh = FieldInfo.from_annotation(annotation)
        field.annotation, field.metadata = fresh.annotation, fresh.metadata
        model.__pydantic_fields__[name] = field
    model.model_rebuild(force=True)
