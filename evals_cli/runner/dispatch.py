"""The one library entry point behind `evals run`: a suite file (or a loaded suite) is prepared (`PreparedRun`; a
recorded-sessions document first becomes the ordinary suite of its `recorded_session` target: runner/sessions.py),
run by `Execution`, and comes back as a `RunOutcome`. The CLI only parses arguments into `RunOptions` and renders
what this returns; Python callers get exactly the same checks and results."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals_cli.errors import ConfigError
from evals_cli.run_options import RunOptions, RunOutcome
from evals_cli.runner.prepare import PreparedRun, with_shard
from evals_cli.runner.started_with import resumed_options
from evals_cli.suite.spec import SuiteSpec

if TYPE_CHECKING:
    from evals_cli.runner.models_matrix import PreparedModels
    from evals_cli.sessions.outcome import SessionsOutcome
    from evals_cli.sessions.suite import SessionsSuiteSpec

OnResult = Callable[[Any], None]
"""Called with each `SampleResult` as it is written, for live suites and recorded sessions alike."""


DEFAULT_SUITES = ("suite.yaml", "evals.yaml")


def default_suite(folder: Path | None = None) -> Path:
    """The suite `evals run` / `evals validate` use when given none: suite.yaml or evals.yaml in `folder` (the
    current one). ConfigError (exit 2) naming both when neither is there, or when both are (which one is meant?)."""
    here = Path(folder) if folder is not None else Path.cwd()
    found = [here / name for name in DEFAULT_SUITES if (here / name).is_file()]
    names = " nor ".join(DEFAULT_SUITES)
    if not found:
        raise ConfigError(f"no suite given, and neither {names} is in {here}; give the suite file: evals run "
                          "SUITE.yaml (or create one with `evals init`)")
    if len(found) > 1:
        raise ConfigError(f"no suite given, and both {' and '.join(DEFAULT_SUITES)} are in {here}; name the one to "
                          "use: evals run SUITE.yaml")
    return Path(found[0].name) if folder is None else found[0]


def prepare(suite: str | Path | SuiteSpec | SessionsSuiteSpec,
            options: RunOptions | None = None) -> PreparedRun | PreparedModels:
    """Load (a path) and check everything that can fail before the first model call, for the pipeline the
    suite's kind names; raises ConfigError listing every problem (what `evals validate` would report). Several
    models (`RunOptions.models`, the suite's `target.models`, or `--resume` of such a run) give a
    `PreparedModels`; one model in a list is an ordinary run of that model."""
    from evals_cli.runner import models_matrix

    options = options or RunOptions()
    if isinstance(suite, str | Path):
        from evals_cli.suite.kind import suite_kind

        if suite_kind(suite) == "recorded_sessions":
            from evals_cli.sessions.suite import load_sessions_suite

            _no_models(options)
            return _sessions(load_sessions_suite(suite), options)
        options = resumed_options(with_shard(options))  # before --target, --base-url and the models are read
        models = models_matrix.models_for_file(Path(suite), options)
        from evals_cli.runner.validate import checked_run, checked_suite
        from evals_cli.suite.loader import TargetOverride

        # every check `evals validate` makes, the same way: a run never starts on a problem validate would report
        if models is not None and len(models) > 1:  # checked with the first model, then every model prepared
            override = TargetOverride(file=options.target_file, base_url=options.base_url, model=models[0])
            return models_matrix.PreparedModels(checked_suite(Path(suite), override, options), options, models)
        if models is not None:
            options = options.model_copy(update={"model": models[0], "models": None})
        override = TargetOverride(file=options.target_file, base_url=options.base_url, model=options.model)
        return checked_run(Path(suite), override, options)
    from evals_cli.sessions.suite import SessionsSuiteSpec  # here: a suite file of live agents never needs it

    if isinstance(suite, SessionsSuiteSpec):
        _no_models(options)
        return _sessions(suite, options)
    if getattr(suite.target, "kind", None) == "recorded_sessions":  # a SuiteSpec built around a sessions target
        _no_models(options)
        return _sessions(SessionsSuiteSpec.from_suite(suite), options)
    options = resumed_options(with_shard(options))
    if options.target_file is not None:
        raise ConfigError("--target (target_file) replaces the target of a suite file; give the suite's path, or "
                          "load it with load_suite(path, TargetOverride(file=...))")
    models = models_matrix.models_for_spec(suite, options)
    if models is not None and len(models) > 1:
        return models_matrix.PreparedModels(suite, options, models)
    if models is not None:
        options = options.model_copy(update={"model": models[0], "models": None})
    return PreparedRun(suite, options)


def _no_models(options: RunOptions) -> None:
    if options.models is not None and len(options.models) > 1:
        raise ConfigError("--model sets the agent model (here several); a recorded_sessions suite has no live agent "
                          "(the judge is set with judge.model or EVAL_JUDGE_MODEL)")


def _sessions(suite: SessionsSuiteSpec, options: RunOptions) -> PreparedRun:
    from evals_cli.runner.sessions import prepare_sessions

    return prepare_sessions(suite, options)


async def execute_prepared(prepared: PreparedRun | PreparedModels,
                           on_result: OnResult | None = None) -> RunOutcome[Any]:
    """Run a prepared suite to the end: results streamed to its folder, the summary written, the exit code set.
    Several models give a `ModelsOutcome` (each model's `RunOutcome` in `outcomes`)."""
    from evals_cli.runner.execution import Execution

    if isinstance(prepared, PreparedRun):
        return await Execution(prepared, on_result).run()
    from evals_cli.runner.models_matrix import execute_models

    return await execute_models(prepared, Execution, on_result)  # one Execution per model


async def arun(suite: str | Path | SuiteSpec | SessionsSuiteSpec, options: RunOptions | None = None,
               on_result: OnResult | None = None) -> RunOutcome[Any]:
    """Run a suite file (or a loaded suite), whichever its kind; ConfigError (exit 2) before anything runs when
    the suite, its dataset or the options are wrong. The outcome's summary is a `RunSummary` (live agents and
    recorded sessions alike: `evals analyze` alone prints the sessions view); a run over several models returns
    a `ModelsOutcome` (a `MatrixSummary`, and each model's own outcome in `outcomes`)."""
    return await execute_prepared(prepare(suite, options), on_result)


def run(suite: str | Path | SuiteSpec | SessionsSuiteSpec, options: RunOptions | None = None,
        on_result: OnResult | None = None) -> RunOutcome[Any]:
    """`arun` from synchronous code (it starts its own event loop)."""
    return asyncio.run(arun(suite, options, on_result))


async def arun_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                        on_result: OnResult | None = None) -> SessionsOutcome:
    """`evals analyze`'s run: a sessions document checked (ConfigError, exit 2, listing every problem; nothing
    written), run to the end as an ordinary suite (`runner/sessions.py`), and the sessions view `evals analyze`
    prints derived from what it wrote (analyze.json marks the folder as one to show so)."""
    from evals_cli.runner.sessions import prepare_sessions, session_order, view_record
    from evals_cli.sessions.outcome import sessions_outcome

    prepared = prepare_sessions(suite, options)
    record = view_record(prepared, suite)
    written: list[str] = []  # the sessions, in the order their lines were written

    def heard(result: Any) -> None:
        written.append(result.sample_id)
        if on_result is not None:
            on_result(result)

    outcome = await execute_prepared(prepared, heard)
    return sessions_outcome(outcome, record, session_order(prepared, written))


def run_sessions(suite: SessionsSuiteSpec, options: RunOptions | None = None,
                 on_result: OnResult | None = None) -> SessionsOutcome:
    """`arun_sessions` to the end, from synchronous code."""
    return asyncio.run(arun_sessions(suite, options, on_result))
