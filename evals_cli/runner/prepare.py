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
from evals_cli.endpoints.resolve import Endpoint
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
from evals_cli.runner.overrides import read_system_prompt, with_overrides
from evals_cli.runner.resume import failed_samples, resumed_rerun, unreplayable
from evals_cli.runner.row_checks import RowChecks, SampleSelection
from evals_cli.runner.run_secrets import run_secrets, who_answers
from evals_cli.runner.started_with import FailedSamples, record_options
from evals_cli.runner.target_factory import build_target as build_target_for
from evals_cli.runner.target_factory import judge_fallback, resolve_target_endpoint
from evals_cli.sandbox import preflight
from evals_cli.sharding import in_shard, parse_shard
from evals_cli.suite.spec import SuiteSpec
from evals_cli.targets.base import Target

if TYPE_CHECKING:
    from evals_cli.computer.session import Computer
    from evals_cli.mcp.hub import McpHub
    from evals_cli.output.manifest import StartedWith
    from evals_cli.sandbox.factory import SandboxFactory
    from evals_cli.simulation.player import UserPlayerFactory
    from evals_cli.simulation.replay_user import RecordedRun


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
            self.suite = with_overrides(suite, options)
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
        """The run's parts in the order each needs the one before: the pool, the agent and its target (MCP
        servers first, for a run), the graders and the gate, the simulated users, then which samples run."""
        fallback = self._build_parts(suite, options, build_target, import_code)
        self.simulated = 0  # rows with a user: block among those selected (counted by the precheck)
        self.user_endpoint: Endpoint | None = None
        self._user_problem: ConfigError | None = None
        self.user_players: UserPlayerFactory | None = None
        self._user_template: str | None = None
        self.replayed: RecordedRun | None = None  # --replay-user RUN's conversations
        self._simulated_ids: list[str] = []  # the selected samples with a user: block, under --replay-user
        self._setup_users(fallback)
        self.pool.redactor.add(self.secrets())  # recordings mask what the outputs mask
        self._choose_samples(suite, options)
        self.sandboxes: SandboxFactory | None = None  # the run's sandboxes, one per episode: opened by Run.open
        # a kind's program or image missing: exit 2 (a replay makes no sandbox, so it needs neither)
        problems_of_sandboxes = preflight.problems(self.suite) if options.replay is None else []
        if problems_of_sandboxes:
            self._problem(problems_of_sandboxes)
        if options.precheck:
            self._precheck()

    def _build_parts(self, suite: SuiteSpec, options: RunOptions, build_target: bool,
                     import_code: bool) -> Endpoint | None:
        """Pool, agent endpoint, target, graders, gate and choice prompt; the judge fallback they settled on."""
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
        return fallback

    def _choose_samples(self, suite: SuiteSpec, options: RunOptions) -> None:
        """Which samples run, how often, and what the precheck will count of them."""
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
        # model_copy keeps the private fields (the folder, the target's folder, the letta flag, the defaults)
        self.suite = self.suite.model_copy(update={"tools": served, "user_tools": user_served})

    def _open_computer(self) -> None:
        """The run's computer (evals_cli/computer): the episodes' computer tools and sandbox checks, recorded with
        --record and read from --replay; the suite's `computer:` tools offered beside its `tools:`."""
        from evals_cli.computer.session import Computer
        from evals_cli.computer.tools import computer_tools

        try:
            self.computer = Computer(record=self.options.record, replay=self.options.replay,
                                     redact=self.pool.redactor)
        except ConfigError as exc:
            self._problem(exc.problems)
            return
        if self.suite.computer:
            tools = {**computer_tools(self.suite.computer), **self.suite.tools}
            self.suite = self.suite.model_copy(update={"tools": tools})

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

    def open_sandboxes(self) -> None:
        """The sandboxes' start (Run.open): a killed run's leftovers removed, a `build:` image built (exit 2 when
        that fails). A replay makes none: its calls, checks and workspace come from the recording."""
        if self.options.replay is None:
            try:
                self.sandboxes = preflight.prepare(self.suite)
            except RuntimeError as exc:
                raise ConfigError(str(exc)) from None

    def close_servers(self) -> None:
        """Stop the MCP servers (the run is over, or never started) and remove the sandboxes' root; idempotent."""
        sandboxes, self.sandboxes = getattr(self, "sandboxes", None), None
        if sandboxes is not None:
            sandboxes.close()
        if self.mcp is not None:
            self.mcp.close()

    def _setup_users(self, agent_fallback: Endpoint | None) -> None:
        """Resolve the simulator's endpoint and template and hand the target its player factory. A problem with
        them matters only once a row has a `user:` block (the precheck counts them), so it is kept until then."""
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
        """Everything secret the run knows, for the Redactor of every output (runner/run_secrets.py)."""
        return run_secrets(self.suite, self._agent, getattr(self, "user_endpoint", None), self.graders)

    def endpoints(self) -> dict[str, str]:
        """Who answers for each role, as resolved (runner/run_secrets.py), kept in run.json for --resume."""
        return who_answers(self._agent, self.user_endpoint if self.simulated else None, self.graders)

    def started_with(self) -> StartedWith:
        """What run.json keeps of the options this run starts with, for --resume (see `StartedWith`)."""
        cov = self.coverage
        return record_options(self.options, self.endpoints(), self.rerun, cov.selected if cov is not None else None,
                              self.expected, unsharded_samples=cov.limited if cov is not None else None,
                              planned_ids=list(self.shard_ids) if cov is not None and self.shard else None)

    def _precheck(self) -> None:
        checker = RowChecks(self.suite, self.graders, SampleChecker(self.graders), self._where or "suite",
                            self._user_template)
        # a run checks the rows it will run; validate (collecting) checks every row whatever the options
        wanted = set(self.tags or []) if self._running else set()
        selected = tagged = limited = 0
        keep = SelectedRows(self.dataset, self._fill) if self._running and self.dataset.is_file() else None
        # the rows validate counts with a simulated user (every row, up to the suite's max_samples): for_run
        # reports a problem with the simulator whenever validate would, whatever the run's filters
        unfiltered, limit = [0, 0], self.suite.max_samples  # rows counted, of them simulated; the suite's -n
        row_sandboxes: dict[str, tuple[str, object]] = {}

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
                if row.sandbox is not None:  # each distinct row sandbox: checked as the suite's is
                    row_sandboxes.setdefault(row.sandbox.model_dump_json(), (where, row.sandbox))
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
        problems.extend(preflight.row_problems(self.suite, row_sandboxes))
        problems.extend(self._selection_problems(selected, simulated_rows=unfiltered[1]))
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

    def _selection_problems(self, selected: int, simulated_rows: int) -> list[str]:
        """What the rows read say of the options and the users: a simulator that cannot play (once a row needs
        it), --replay-user, --sample-id or --rerun-failed naming what the dataset does not hold."""
        problems: list[str] = []
        if self._user_problem is not None and (self.simulated or (self._collecting and simulated_rows)):
            problems.extend(self._user_problem.problems)
        problems.extend(unreplayable(self.replayed, self._simulated_ids))
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
        return problems

    @property
    def _fill(self) -> RowFill | None:
        """What the target adds to each row before it is checked (a traces target fills `input`)."""
        return getattr(self._target, "fill_row", None)

    def _target_keeps(self, sample: Sample) -> bool:
        """A target that selects samples itself (a traces target's since/until window) keeps this one."""
        keeps = getattr(self._target, "keeps", None)
        return bool(keeps(sample)) if keeps is not None else True

    @property
    def dataset_digest(self) -> str | None:  # the precheck's read of it (None without a precheck: read it)
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
