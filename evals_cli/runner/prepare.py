"""Everything that can fail before the first model call is checked here: suite, endpoints, graders,
every dataset row, every rubric against every sample. Streaming, so a huge dataset costs no memory; the rows
the run will run are kept by that same read (datasets/selected.py), so the run does not read the file again."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from evals_cli import custom_code
from evals_cli.datasets.reader import RowFill, Span, check_dataset, iter_rows, select_samples
from evals_cli.datasets.selected import SelectedRows
from evals_cli.endpoints.pool import ClientPool
from evals_cli.endpoints.resolve import NO_KEY, Endpoint
from evals_cli.errors import ConfigError, DatasetChanged
from evals_cli.gate.gate import Gate
from evals_cli.graders.base import Grader
from evals_cli.graders.choices import ChoicePrompt
from evals_cli.graders.functions import bind_extractor, load_reward
from evals_cli.graders.rubric_check import SampleChecker
from evals_cli.models.results import Coverage
from evals_cli.models.sample import RowNotes, Sample
from evals_cli.registry import plugin_code
from evals_cli.run_options import NothingToRun, RunOptions
from evals_cli.runner.build_graders import build_graders
from evals_cli.runner.resume import failed_samples, resumed_rerun, unfinished_run
from evals_cli.runner.row_checks import RowChecks, SampleSelection
from evals_cli.runner.started_with import FailedSamples, record_options, resume_command, resumed_options
from evals_cli.runner.target_factory import build_target as build_target_for
from evals_cli.runner.target_factory import judge_fallback, resolve_target_endpoint
from evals_cli.sharding import in_shard, parse_shard, resolve_shard
from evals_cli.suite.spec import SuiteSpec
from evals_cli.targets.base import Target

if TYPE_CHECKING:
    from evals_cli.computer.session import Computer
    from evals_cli.mcp.hub import McpHub
    from evals_cli.output.manifest import StartedWith
    from evals_cli.simulation.player import UserPlayerFactory
    from evals_cli.simulation.replay_user import RecordedRun


def with_shard(options: RunOptions) -> RunOptions:
    """`--shard auto` read from the environment before anything else sees the options (a resume's check, the
    split, run.json): the folder keeps the part this job ran ("2/3"), which `evals merge` counts. A K/N, or a part
    already read, passes through unchanged."""
    shard = resolve_shard(options.shard)
    return options if shard == options.shard else options.model_copy(update={"shard": shard})


def read_system_prompt(suite: SuiteSpec) -> str | None:
    """The agent's system prompt, from the suite or its file (a kind without one has none)."""
    target = suite.target
    prompt_file: str | None = getattr(target, "system_prompt_file", None)
    if prompt_file is None:
        return getattr(target, "system_prompt", None)
    path = suite.resolve(prompt_file)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"target.system_prompt_file: {prompt_file} not found "
                          "(the path is relative to the suite file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"target.system_prompt_file: cannot read {path}: {type(exc).__name__}") from None


def _with_overrides(suite: SuiteSpec, options: RunOptions) -> SuiteSpec:
    """CLI overrides of target settings, validated like the YAML (a bad value is a ConfigError)."""
    update = {k: v for k, v in (("timeout", options.timeout), ("sample_timeout", options.sample_timeout),
                                ("max_retries", options.max_retries), ("since", options.since),
                                ("until", options.until))
              if v is not None and k in type(suite.target).model_fields}  # only settings this kind has
    for flag, value in (("since", options.since), ("until", options.until)):
        if value is not None and flag not in type(suite.target).model_fields:
            raise ConfigError(f"--{flag}: a time window over recorded conversations; this suite's target "
                              f"(kind {getattr(suite.target, 'kind', '?')}) runs its samples live. Use -n, --tag "
                              "or --sample-id to pick samples")
    if not update:
        return suite
    try:
        target = suite.target.model_validate({**suite.target.model_dump(), **update})
    except ValueError as exc:  # pydantic's ValidationError: the flag's value, named as the flag
        flags = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in update.items())
        errors = getattr(exc, "errors", None)
        reason = "; ".join(str(e.get("msg")) for e in errors()) if callable(errors) else str(exc)
        raise ConfigError(f"{flags}: {reason}") from None
    copy = suite.model_copy(update={"target": target})
    copy._base_dir = suite.base_dir
    return copy


class PreparedRun:
    """A suite with its target, graders, gate and dataset checked: nothing left to fail but the endpoints.

    Without `problems` the first problem raises ConfigError (a run never starts on one). With `problems` every
    step appends what it finds and preparation goes on: that is `evals validate`, the same steps on the same
    path, so validate cannot accept what a run refuses. `where` (the suite file) prefixes those problems;
    `build_target` False skips building the agent (validate builds only those whose building checks something).

    `for_run` (with `problems`): `evals run`'s own check, one pass that is both: every problem collected as
    validate collects it, and, when none is found, the run prepared from the same read (its rows kept, its
    filters applied), so the dataset is read and checked once. Only for a run `single_pass` allows.
    """

    def __init__(self, suite: SuiteSpec, options: RunOptions, *, problems: list[str] | None = None,
                 where: str = "", build_target: bool = True, import_code: bool = True, for_run: bool = False) -> None:
        self.problems: list[str] = problems if problems is not None else []
        self._collecting = problems is not None
        self._running = not self._collecting or for_run  # prepares what the run needs (pool, rows, filters)
        options = resumed_options(with_shard(options))  # a resumed run continues with the options it started with
        self._where = where
        try:  # EVALS_* bounds and the EVAL_* endpoints: a bad value stops the run before it starts
            from evals_cli.settings import check

            check()
        except ConfigError as exc:
            self._problem(exc.problems)
        crossed = suite.cross_check()
        if crossed:
            self._problem([f"{'.'.join(map(str, path))}: {message}" for path, message in crossed])
        try:
            self.suite = _with_overrides(suite, options)
        except ConfigError as exc:  # only a run has these flags (for_run collects it with validate's problems)
            self._problem(exc.problems)
            self.suite = suite
        self.options = options
        self.mcp: McpHub | None = None  # the run's MCP servers, started here (a run), never by validate
        try:
            self._init(suite, options, problems, build_target, import_code)
        except BaseException:
            self.close_servers()
            raise

    def _init(self, suite: SuiteSpec, options: RunOptions, problems: list[str] | None, build_target: bool,
              import_code: bool) -> None:
        self.dataset: Path = suite.resolve(suite.dataset)
        self.concurrency = options.concurrency or suite.concurrency
        # one limit per server for every model call (agent and judges alike): the run's concurrency
        try:
            self.pool = ClientPool(record=options.record, replay=options.replay, concurrency=self.concurrency,
                                   cache=options.cache if self._running else None)
        except ConfigError as exc:  # --replay or --cache cannot be read: for_run lists it with the rest
            self._problem(exc.problems)
            self.pool = ClientPool(concurrency=self.concurrency)  # the run is refused; the checks go on
        self._agent: Endpoint | None = None
        self._target: Target | None = None
        self.computer: Computer | None = None
        if self.suite.sandbox is not None:
            self._open_computer()
        if (suite.mcp_servers or suite.user_mcp_servers) and not self._collecting:
            self._open_servers()
        try:
            self._agent = resolve_target_endpoint(self.suite.target, options.agent_overrides)
        except ConfigError as exc:
            self._problem(exc.problems)
        fallback = judge_fallback(self.suite.target, self._agent) if self._agent is not None else None
        # custom code (a python agent, extractors, @grader functions, a reward) is loaded only from the suite's
        # folders, and run only when `import_code` (evals validate only reads it unless --import-code)
        self.code_read: list[str] = []  # the custom functions only read, not imported (file.py:function)
        with custom_code.policy(suite.code_roots(), run=import_code, read=self.code_read):
            self._load_tool_functions()
        try:
            prompt = read_system_prompt(suite)
            if build_target and self._agent is not None:  # an endpoint that did not resolve is reported above
                agent = self._agent
                with custom_code.policy(suite.code_roots(target=True), run=import_code, read=self.code_read):
                    self._target = build_target_for(self.suite, agent, self.pool, prompt, self.mcp,
                                                    self.computer)
        except ConfigError as exc:
            self._problem(exc.problems, located=True)
        self.graders: dict[str, Grader] = {}
        with custom_code.policy(suite.code_roots(), run=import_code, read=self.code_read):
            try:
                self.graders = build_graders(self.suite, self.pool if self._running else None, fallback,
                                             no_judge=options.no_judge, judge_overrides=options.judge_overrides,
                                             bind=bind_extractor,
                                             agent_model=self._agent.model if self._agent is not None else None)
            except ConfigError as exc:
                self._problem(exc.problems, located=True)
            self.gate = self._gate(suite)
        try:  # a choice grader shows each row's options to the agent (graders/choices.py)
            self.choice_prompt = ChoicePrompt(self.graders)
        except ConfigError as exc:
            self._problem(exc.problems, located=True)
            self.choice_prompt = ChoicePrompt({})
        # simulated users: the simulator's endpoint and prompt; a problem with them matters only once a row has a
        # `user:` block (the precheck counts them), so it is kept until then
        self.simulated = 0  # rows with a user: block among those selected (counted by the precheck)
        self.user_endpoint: Endpoint | None = None
        self._user_problem: ConfigError | None = None
        self.user_players: UserPlayerFactory | None = None
        self._user_template: str | None = None
        self.replayed: RecordedRun | None = None  # --replay-user RUN's conversations
        self._simulated_ids: list[str] = []  # the selected samples with a user: block, under --replay-user
        self._setup_users(fallback)
        self.pool.redactor.add(self.secrets())  # recordings mask what the outputs mask
        self.tags = options.tags if options.tags is not None else suite.sample_tags
        self.max_samples = options.max_samples or suite.max_samples
        self.repeats = options.repeats or suite.repeats
        reducer = self.gate.reducer
        if reducer is not None and reducer.kind == "at_least" and reducer.n > self.repeats:
            given = f"--repeats {options.repeats}" if options.repeats else f"repeats: {suite.repeats}"
            self._problem([f"gate.reducer: {reducer.name} needs {reducer.n} repeats of every sample, and {given} "
                           f"runs each sample {self.repeats} time(s); set repeats (or -r) to {reducer.n} or more, or "
                           "lower N"], located=True)
        self.shard = parse_shard(options.shard) if options.shard else None
        # --sample-id and --rerun-failed: a run keeps the samples they name; validate checks every row
        self.rerun: FailedSamples | None = None
        if options.rerun_failed is not None and not self._collecting:
            self.rerun = failed_samples(options.rerun_failed)
            if not self.rerun.ids:
                raise NothingToRun(f"nothing to rerun: no sample failed or errored in {self.rerun.path} "
                                   f"({self.rerun.samples} samples); no run started")
        elif options.resume is not None and not self._collecting:  # a resumed rerun keeps the samples it chose
            self.rerun = resumed_rerun(options.resume)
        self.selection = SampleSelection(options.sample_ids if self._running else None,
                                         self.rerun.ids if self.rerun is not None else None)
        self.rows = 0  # valid dataset rows, counted by the precheck
        self.row_notes = RowNotes()  # deprecated row spellings seen by the precheck (evals validate says them)
        self.expected: int | None = None
        self.coverage: Coverage | None = None  # rows, tag filter, -n, shard: counted by the precheck
        self.shard_ids: list[str] = []  # under --shard, the ids of the part's samples (run.json, for evals merge)
        # the rows the run will run, kept by the precheck (it reads the dataset; the run then reads it no more)
        self.selected: SelectedRows | None = None
        if options.precheck:
            self._precheck()

    def _gate(self, suite: SuiteSpec) -> Gate:
        """The gate over the graders built; a letta-evals suite counts a turn passed at 1.0, as letta-evals does."""
        turn_pass = 1.0 if suite.letta_format else None
        try:  # a custom reward gate loads its function from the suite's folder and checks its signature
            return Gate(suite.gate, self.graders, load_reward=partial(load_reward, base_dir=suite.base_dir),
                        turn_pass=turn_pass)
        except ConfigError as exc:
            self._problem(exc.problems, located=True)
            return Gate(suite.gate, self.graders, turn_pass=turn_pass)

    def _open_servers(self) -> None:
        """Start the suite's MCP servers (or read them from --replay) and offer their tools: the suite seen by
        the target and the graders from here on has the servers' tools in `tools`, and the user's servers'
        (`user_mcp_servers`, dual control) in `user_tools`."""
        from evals_cli.mcp.hub import McpHub

        self.mcp = McpHub(self.suite.mcp_servers, self.suite.tools, base_dir=self.suite.base_dir,
                          record=self.options.record, replay=self.options.replay, redact=self.pool.redactor,
                          user_servers=self.suite.user_mcp_servers, user_tools=self.suite.user_tools)
        served, user_served = self.mcp.tools(), self.mcp.user_tools()
        copy = self.suite.model_copy(update={"tools": served, "user_tools": user_served})
        copy._base_dir, copy._target_dir = self.suite.base_dir, self.suite._target_dir
        copy._letta_format = self.suite.letta_format
        self.suite = copy

    def _open_computer(self) -> None:
        """The run's computer (evals_cli/computer): the episodes' computer tools and sandbox checks, recorded with
        --record and read from --replay; the suite's `computer:` tools offered beside its `tools:`."""
        from evals_cli.computer.session import Computer
        from evals_cli.computer.tools import computer_tools

        assert self.suite.sandbox is not None
        if self.suite.sandbox.kind != "none" and self.options.replay is None and self._running:
            self._problem([f"sandbox.kind: {self.suite.sandbox.kind} cannot run here yet (only kind: none runs "
                           "live in this evals-cli; --replay needs no sandbox); use kind: none"], located=True)
        try:
            self.computer = Computer(record=self.options.record, replay=self.options.replay,
                                     redact=self.pool.redactor)
        except ConfigError as exc:
            self._problem(exc.problems)
            return
        if self.suite.computer:
            copy = self.suite.model_copy(update={"tools": {**computer_tools(self.suite.computer),
                                                            **self.suite.tools}})
            copy._base_dir, copy._target_dir = self.suite.base_dir, self.suite._target_dir
            copy._letta_format = self.suite.letta_format
            self.suite = copy

    def _load_tool_functions(self) -> None:
        """Tools with logic (`python:`) and the environment's setup function: each loaded once, from the suite's
        folders, under the custom-code policy (evals validate only reads the file unless --import-code); a problem
        names the tool or the setup."""
        from evals_cli.tools.logic import load_logic

        problems = load_logic({"tools": self.suite.tools, "user_tools": self.suite.user_tools}, self.suite.base_dir)
        setup = self.suite.environment.setup if self.suite.environment is not None else None
        if setup is not None and setup.python is not None:  # a row's own setup function is loaded when it runs
            from evals_cli.tools.setup import load_setup_function

            try:
                load_setup_function(setup.python, self.suite.base_dir)
            except (ValueError, ConfigError, custom_code.CustomCodeError) as exc:
                problems.append(f"environment.setup.python: {exc}")
        if problems:
            self._problem(problems, located=True)

    def close_servers(self) -> None:
        """Stop the MCP servers (the run is over, or never started); idempotent."""
        if self.mcp is not None:
            self.mcp.close()

    def _setup_users(self, agent_fallback: Endpoint | None) -> None:
        """Resolve the simulator's endpoint and template and hand the target its player factory."""
        from evals_cli.endpoints.resolve import resolve_user
        from evals_cli.simulation.player import DEFAULT_PLAYER, USER_PLAYERS
        from evals_cli.simulation.prompt import load_template
        from evals_cli.simulation.simulator import SimulatorSettings

        spec = self.suite.user_simulator
        kind = spec.player if spec is not None else DEFAULT_PLAYER
        player_kind = USER_PLAYERS.get(kind)
        if player_kind is None:
            self._user_problem = ConfigError(f"user_simulator.player: unknown user player kind {kind!r}; kinds: "
                                             f"{', '.join(USER_PLAYERS.kinds())} (evals list users)")
            return
        try:
            self.user_endpoint = resolve_user(spec, self.suite.judge, agent_fallback, self.options.judge_overrides)
        except ConfigError as exc:
            if kind == DEFAULT_PLAYER:  # a plug-in's player may need no model: its endpoint stays None
                self._user_problem = exc
                return
        try:
            prompt_file = spec.system_prompt_file if spec is not None else None
            template = load_template(self.suite.resolve(prompt_file) if prompt_file else None, prompt_file or "")
        except ConfigError as exc:
            self._user_problem = exc
            return
        self._user_template = template
        agent_model = self.options.model if self.options.matrix else None  # see SimulatorSettings.agent_model
        settings = SimulatorSettings(self.user_endpoint, self.pool, spec, template, agent_model)  # type: ignore[arg-type]
        try:
            with plugin_code(player_kind, "building the run's user players", at="user_simulator.player"):
                factory: UserPlayerFactory = player_kind.impl(settings)
        except ConfigError as exc:  # a plug-in's factory raised: a problem once a row has a user: block
            self._user_problem = exc
            return
        if not callable(factory):
            self._user_problem = ConfigError(f"user_simulator.player: {player_kind.named()} returned "
                                             f"{type(factory).__name__}, not a function (sample, repeat) -> "
                                             "UserPlayer; fix the kind")
            return
        wrap = getattr(self.options, "replay_user", None)
        if wrap is not None:  # --replay-user RUN: the user messages of that run, while the agent stays on its path
            from evals_cli.simulation.replay_user import ReplayingPlayers, load_recorded_run

            self.replayed = load_recorded_run(wrap)
            factory = ReplayingPlayers(factory, self.replayed, self.options.on_divergence or "continue")
        self.user_players = factory  # handed to every Episode by the runner (never patched into the target)

    @property
    def agent(self) -> Endpoint:
        assert self._agent is not None, "the agent endpoint did not resolve (see problems)"
        return self._agent

    @property
    def target(self) -> Target:
        assert self._target is not None, "the target was not built (see problems)"
        return self._target

    def _problem(self, problems: list[str], located: bool = False) -> None:
        """Raise, or (validate) collect; `located` problems get the suite file's name in front."""
        if not self._collecting:
            raise ConfigError(problems)
        self.problems.extend(f"{self._where}: {p}" if located and self._where else p for p in problems)

    def secrets(self) -> list[str]:
        """Everything secret the run knows, for the Redactor of every output: the resolved keys and URL
        credentials of the agent and of every judge (from the suite, the CLI or the environment), and what the
        suite states (api_key, base_url credentials, secret-looking extra_body values)."""
        from evals_cli.endpoints.secrets import spec_secrets

        endpoints: list[Endpoint] = [self._agent] if self._agent is not None else []
        if getattr(self, "user_endpoint", None) is not None:
            endpoints.append(self.user_endpoint)  # type: ignore[arg-type]
        for grader in self.graders.values():
            endpoints += [e for e in getattr(grader, "endpoints", None) or [getattr(grader, "endpoint", None)]
                          if isinstance(e, Endpoint)]
        found = {s for e in endpoints for s in e.secrets()}
        found.update(spec_secrets(self.suite.model_dump(mode="json")))
        if self.suite.mcp_servers or self.suite.user_mcp_servers:
            from evals_cli.mcp.hub import mcp_secrets

            found.update(mcp_secrets({**self.suite.mcp_servers, **self.suite.user_mcp_servers}))
        return sorted(s for s in found if s and s != NO_KEY)

    def endpoints(self) -> dict[str, str]:
        """Who answers for each role, as resolved (model and URL, credentials masked): kept in run.json, so that
        a resume whose suite URLs or EVAL_* variables now name another endpoint is refused."""
        from evals_cli.endpoints.resolve import DEFAULT_URL
        from evals_cli.endpoints.secrets import mask_url

        def shown(endpoint: Endpoint) -> str:
            return f"{endpoint.model} at {mask_url(endpoint.base_url or DEFAULT_URL)}"

        found = {"agent": shown(self._agent)} if self._agent is not None else {}
        for name, grader in self.graders.items():
            judges = [e for e in getattr(grader, "endpoints", None) or [getattr(grader, "endpoint", None)]
                      if isinstance(e, Endpoint)]
            if judges:
                found[f"judge of {name}"] = ", ".join(shown(e) for e in judges)
        if self.simulated and self.user_endpoint is not None:
            found["user simulator"] = shown(self.user_endpoint)
        return found

    def started_with(self) -> StartedWith:
        """What run.json keeps of the options this run starts with, for --resume (see `StartedWith`)."""
        cov = self.coverage
        return record_options(self.options, self.endpoints(), self.rerun, cov.selected if cov is not None else None,
                              self.expected, unsharded_samples=cov.limited if cov is not None else None,
                              planned_ids=list(self.shard_ids) if cov is not None and self.shard else None)

    def _unreplayable(self) -> list[str]:
        """Under --replay-user: the selected simulated samples RUN holds no conversation of, as one problem (they
        would be played by the simulator afresh, next to replayed ones, with nothing said)."""
        run = self.replayed
        if run is None or not self._simulated_ids:
            return []
        missing = [i for i in self._simulated_ids if i not in run.replayable]
        if not missing:
            return []
        never = [i for i in missing if i not in run.samples]
        shown = ", ".join(missing[:10]) + (f" (+{len(missing) - 10} more)" if len(missing) > 10 else "")
        why, fix = [], "run only the samples it holds (--sample-id)"
        if never:
            unfinished = unfinished_run(run.path.parent, run.results, len(run.samples))
            why.append(f"{len(never)} never ran there" + (f": that run never finished ({unfinished.describe()})"
                                                         if unfinished is not None else ""))
            if unfinished is not None:
                finish = resume_command("SUITE", run.path.parent, comment=False)
                fix = f"finish that run first ({finish}), or {fix}"
        if len(never) < len(missing):
            why.append(f"{len(missing) - len(never)} have a result there but no recorded conversation")
        return [f"--replay-user {run.path}: {len(missing)} of the {len(self._simulated_ids)} simulated "
                f"conversations this run would play have no recorded user to replay ({'; '.join(why)}): {shown}; "
                f"{fix}"]

    def _precheck(self) -> None:
        checker = RowChecks(self.suite, self.graders, SampleChecker(self.graders), self._where or "suite",
                            self._user_template)
        # a run checks the rows it will run; validate (collecting) checks every row whatever the options
        wanted = set(self.tags or []) if self._running else set()
        selected = tagged = limited = 0
        keep = SelectedRows(self.dataset, self._fill) if self._running and self.dataset.is_file() else None
        # the rows validate counts with a simulated user (every row, up to the suite's max_samples): for_run
        # reports a problem with the simulator whenever validate would, whatever the run's filters
        unfiltered = [0, 0]  # rows counted, of them simulated
        limit = self.suite.max_samples

        def on_row(row: Sample, where: str, span: Span | None) -> list[str]:
            # counted in the order rows are dropped (tag and id filters, then -n, then shard), so "N of M" is exact
            nonlocal selected, tagged, limited
            self.row_notes.add(row, where)
            sample = row.with_user_defaults(self.suite.user)
            picked = self.selection.keeps(str(sample.id)) if self.selection else True
            kept_by_target = self._target_keeps(sample)
            picked = picked and kept_by_target
            if kept_by_target and (limit is None or unfiltered[0] < limit):
                unfiltered[0] += 1
                unfiltered[1] += sample.user is not None
            chosen = picked and (not wanted or wanted.intersection(sample.tags))
            if chosen:
                tagged += 1
                if self.max_samples is None or tagged <= self.max_samples:
                    limited += 1
                    if self.shard is None or in_shard(str(sample.id), self.shard):
                        selected += 1
                        if self.shard is not None:
                            self.shard_ids.append(str(sample.id))
                        self.simulated += sample.user is not None
                        if self.replayed is not None and sample.user is not None and self._running:
                            self._simulated_ids.append(str(sample.id))
                        if keep is not None:
                            keep.add(row, span)
            # validate (and for_run) checks every row the target keeps; a run, those its filters keep
            if kept_by_target if self._collecting else chosen:
                return checker(sample.with_environment(self.suite.environment), where)
            return []

        try:
            rows, problems = check_dataset(self.dataset, on_row=on_row, seen=keep.seen if keep else None,
                                           fill=self._fill)
        except ConfigError as exc:  # the dataset cannot be read at all
            self._problem(exc.problems)
            return
        self.rows = rows
        problems.extend(checker.problems())
        if self._user_problem is not None and (self.simulated or (self._collecting and unfiltered[1])):
            problems.extend(self._user_problem.problems)
        problems.extend(self._unreplayable())
        replay_user = getattr(self.options, "replay_user", None)
        if replay_user is not None and self._running and selected and not self.simulated:  # a flag doing nothing
            problems.append(f"--replay-user {replay_user}: none of the {selected} samples this run would play has a "
                            "simulated user (a user: block), so there is no user to replay; drop --replay-user, or "
                            "select the simulated samples")
        problems += [f"--sample-id {p}: matches no sample id in {self.dataset}" for p in self.selection.unmatched()]
        missing = self.selection.missing()
        if missing and self.rerun is not None:
            shown = ", ".join(missing[:10]) + (f" (+{len(missing) - 10} more)" if len(missing) > 10 else "")
            problems.append(f"--rerun-failed {self.rerun.path}: {len(missing)} of the samples that failed there are "
                            f"not in {self.dataset}: {shown}; was the run made with another dataset?")
        if problems:
            self._problem(problems)
            return
        if selected == 0 and self.shard is None:
            what = [f"any of the tags {', '.join(sorted(wanted))}"] if wanted else []
            what += [self.selection.describe()] if self.selection else []
            self._problem([f"{self.dataset}: no sample matches {' and '.join(what) or 'the options'}"])
            return
        self.expected = selected * self.repeats
        self.selected = keep
        self.coverage = Coverage(dataset_rows=rows, tagged=tagged, limited=limited, selected=selected,
                                 expected_results=self.expected, tags=sorted(wanted),
                                 id_filter=self.selection.describe() if self.selection else None,
                                 max_samples=self.max_samples, shard=self.options.shard)

    @property
    def _fill(self) -> RowFill | None:
        """What the target adds to each row before it is checked (a traces target fills `input`)."""
        return getattr(self._target, "fill_row", None)

    def _target_keeps(self, sample: Sample) -> bool:
        """A target that selects samples itself (a traces target's since/until window) keeps this one."""
        keeps = getattr(self._target, "keeps", None)
        return bool(keeps(sample)) if keeps is not None else True

    @property
    def dataset_digest(self) -> str | None:
        """The dataset's digest from the precheck's read (None without a precheck: read it for the digest)."""
        return self.selected.digest if self.selected is not None else None

    def dataset_unchanged(self) -> None:
        """ConfigError when the rows will be read back from a dataset file that changed since the precheck."""
        if self.selected is not None and not self.selected.kept:
            self.selected.unchanged()

    def _samples(self) -> Iterator[Sample]:
        """The selected samples in dataset order: those the precheck kept (or read back by their place in the
        file), else the file read again with the same filters (no precheck, or a large CSV/JSON array)."""
        kept = self.selected.rows() if self.selected is not None else None
        if kept is not None:
            yield from kept
            return
        where = [str(self.dataset)]  # the row read last: the one the filters below hand on, if any

        def located() -> Iterator[Sample]:
            for where[0], _, row in iter_rows(self.dataset, self._fill):
                if isinstance(row, list):
                    if self.selected is not None:  # it was valid when checked
                        raise DatasetChanged([f"{p} (the file changed since it was checked)" for p in row])
                    raise ConfigError(row)
                yield row

        samples: Iterator[Sample] = located()
        if self.selection:
            samples = (s for s in samples if self.selection.keeps(str(s.id)))
        samples = (s for s in samples if self._target_keeps(s))
        index = 0
        for sample in select_samples(samples, self.tags, self.max_samples):
            if self.shard is None or in_shard(str(sample.id), self.shard):
                if self.selected is not None:  # read again past the bound: each row must be the one checked
                    sample = self.selected.checked(index, sample, where[0])
                index += 1
                yield sample
        if self.selected is not None:
            self.selected.all_checked(index)

    def work(self) -> Iterator[tuple[Sample, int]]:
        """(sample, repeat) pairs in dataset order; repeats of a sample run back to back."""
        for sample in self._samples():
            sample = sample.with_environment(self.suite.environment)  # targets and graders see the merged world
            sample = sample.with_user_defaults(self.suite.user)  # and the user: block with the suite's defaults
            if self.options.matrix and sample.agent_model is not None:  # each column asks its own model
                sample = sample.model_copy(update={"agent_model": None})
            for repeat in range(self.repeats):  # a multiple-choice row shows its options, in this repeat's order
                yield self.choice_prompt.shown(sample, repeat), repeat
