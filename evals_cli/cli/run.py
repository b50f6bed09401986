"""`evals run`: its arguments parsed into `RunOptions`, the run planned and opened (`runner.run.prepare`), then shown
while and after it runs: a run of one model by run_live.py, several models side by side by run_models.py.

`evals --help` imports every command's module: the library a run needs (its models, the runner) is imported
when the command runs, never at the top of this one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evals_cli.cli.options import EXPORT_HELP, TARGET_HELP, exports_asked
from evals_cli.errors import ConfigError

if TYPE_CHECKING:  # annotations only
    from evals_cli.run_options import RunOptions


def run(
    suite: Annotated[Path | None, typer.Argument(metavar="SUITE", show_default=False, help="The suite YAML file (default: suite.yaml or evals.yaml in this folder).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output folder (default results/<suite>-<time>).")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-c", min=1, help="Samples in flight.")] = None,
    max_samples: Annotated[int | None, typer.Option("--max-samples", "-n", min=1, help="Run at most N samples.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Only samples with this tag (repeatable).")] = None,
    sample_id: Annotated[list[str] | None, typer.Option("--sample-id", metavar="ID", help="Only this sample: an id or a glob such as 'refund-*' (repeatable); one that matches no sample is an error.")] = None,
    rerun_failed: Annotated[Path | None, typer.Option("--rerun-failed", metavar="RUN", help="Run only the samples that failed or errored (in any repeat) in an earlier run (its folder or results.jsonl), as a new run.")] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip model_judge graders: no judge calls at all.")] = False,
    record: Annotated[Path | None, typer.Option("--record", help="Record every model call to this JSONL file.")] = None,
    replay: Annotated[Path | None, typer.Option("--replay", help="Serve model calls from a recording; no network.")] = None,
    cache: Annotated[Path | None, typer.Option("--cache", metavar="FILE", help="Serve every model call this file already holds and call (and add) the rest: a rerun of an unchanged suite calls no model; the summary counts hits and misses.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Agent endpoint (overrides the suite).")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", metavar="MODEL", help="Agent model (overrides the suite); NAME@URL runs it on its own endpoint (over --base-url); repeat it to run the whole suite once per model, side by side, each into its own subfolder.")] = None,
    gate: Annotated[str | None, typer.Option("--gate", metavar="all|any", show_default=False, help="With several models: all (exit 0 only when every model passes its gate; the default) or any (when at least one does).")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="Judge model for every model_judge grader (over the graders' own model, the suite's judge block and EVAL_JUDGE_MODEL).")] = None,
    judge_base_url: Annotated[str | None, typer.Option("--judge-base-url", help="Judge endpoint (over the graders' own base_url, the judge block and EVAL_JUDGE_BASE_URL).")] = None,
    judge_api_key: Annotated[str | None, typer.Option("--judge-api-key", help="Judge API key (over the graders' own, the judge block and EVAL_JUDGE_API_KEY).")] = None,
    max_error_rate: Annotated[float | None, typer.Option("--max-error-rate", min=0, max=1, show_default=False, help="Exit 3 past this share of errored samples (default 0.2; a resume keeps the run's).")] = None,
    repeats: Annotated[int | None, typer.Option("--repeats", "-r", min=1, help="Run every sample N times (pass@k, pass^k); gate.reducer makes a sample's N runs one sample before the gate.")] = None,
    keyword: Annotated[str | None, typer.Option("-k", hidden=True)] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help="Per-request timeout in seconds.")] = None,
    sample_timeout: Annotated[float | None, typer.Option("--sample-timeout", min=0, help="Seconds one sample may take in all (default 600; 0: no limit).")] = None,
    max_retries: Annotated[int | None, typer.Option("--max-retries", min=0, help="Retries on 429, 5xx, timeouts, dropped connections.")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue a run: its folder or results.jsonl.")] = None,
    retry_errors: Annotated[bool, typer.Option("--retry-errors", help="With --resume: run errored samples again.")] = False,
    grace: Annotated[float, typer.Option("--grace", min=0, help="Seconds in-flight samples get after Ctrl-C.")] = 10.0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the gate verdict.")] = False,
    target: Annotated[Path | None, typer.Option("--target", help=TARGET_HELP)] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML here, one testcase per sample (= --export junit=PATH).")] = None,
    task_results: Annotated[Path | None, typer.Option("--task-results", help="Also write TaskResult JSONL here (= --export task_results=PATH).")] = None,
    export: Annotated[list[str] | None, typer.Option("--export", metavar="FORMAT=PATH", help=EXPORT_HELP)] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="K/N: run only the K-th of N stable parts of the samples (see `evals merge`); auto: the part the environment names (JOB_COMPLETION_INDEX and JOB_COMPLETIONS of a Kubernetes indexed Job, EVALS_SHARD_INDEX and EVALS_SHARD_TOTAL, or GitLab's CI_NODE_INDEX and CI_NODE_TOTAL).")] = None,
    replay_user: Annotated[Path | None, typer.Option("--replay-user", metavar="RUN", help="Replay the user messages of a finished run with simulated users (its folder or results.jsonl) while the agent stays on the recorded path; compare two agent versions with the same user.")] = None,
    on_divergence: Annotated[str | None, typer.Option("--on-divergence", metavar="continue|stop", help="With --replay-user, when the agent's turn differs from the recorded one: continue (default: the user simulator takes over) or stop (the conversation ends, marked diverged).")] = None,
    otel: Annotated[bool, typer.Option("--otel", help="Export OpenTelemetry spans (OTLP; needs the \\[otel] extra). Also on when OTEL_EXPORTER_OTLP_ENDPOINT is set.")] = False,
    since: Annotated[str | None, typer.Option("--since", metavar="WHEN", help="A traces target: only conversations that started at or after WHEN (ISO 8601 date or date-time, UTC unless it names a zone).")] = None,
    until: Annotated[str | None, typer.Option("--until", metavar="WHEN", help="A traces target: only conversations that started before WHEN.")] = None,
) -> None:
    """Run a suite: drive the agent, grade every trajectory, print the table, exit with the gate's code."""
    arguments = dict(locals())  # the parameters, before this body names anything else
    refuse_choices(keyword, on_divergence, gate)
    from evals_cli.runner.plan import default_suite

    suite = suite if suite is not None else default_suite()
    options = run_options(arguments)
    exports = exports_asked(export, junit, task_results)  # a typo in a format must not cost a whole run
    raise typer.Exit(start(suite, options, quiet, exports))


def refuse_choices(keyword: str | None, on_divergence: str | None, gate: str | None) -> None:
    """Options whose values are words, checked before anything is read; -k named by what the user meant."""
    if keyword is not None:  # pytest's -k is a keyword filter; here it was once --repeats: say which is which
        raise ConfigError(f"-k {keyword}: evals run has no -k; to run every sample N times use --repeats N (-r N), "
                          "to pick samples use --sample-id ID (globs such as 'refund-*' work)")
    if on_divergence is not None and on_divergence not in ("continue", "stop"):
        raise ConfigError(f"--on-divergence {on_divergence}: choose continue (the user simulator takes over) or stop "
                          "(the conversation ends, marked diverged)")
    if gate is not None and gate not in ("all", "any"):
        raise ConfigError(f"--gate {gate}: choose all (every model must pass its gate) or any (at least one)")


# the parameters of `run` that are RunOptions fields of another name, and those that are the command's own
FIELD_OF = {"tag": "tags", "sample_id": "sample_ids", "target": "target_file", "grace": "grace_s"}
COMMAND_ONLY = frozenset({"suite", "keyword", "quiet", "junit", "task_results", "export", "model"})
DEFAULT_UNLESS_GIVEN = ("max_error_rate", "gate")  # not given: the run's own (a resume keeps the run's)


def run_options(arguments: dict[str, Any]) -> RunOptions:
    """The RunOptions of `run`'s parameters: each is the field of its name (or of `FIELD_OF`'s), an empty
    repeatable option is none given, and --model names the one model, or the models run side by side."""
    from evals_cli.run_options import RunOptions

    fields = {FIELD_OF.get(name, name): value for name, value in arguments.items() if name not in COMMAND_ONLY}
    models = arguments["model"] or []
    fields.update(tags=fields["tags"] or None, sample_ids=fields["sample_ids"] or None,
                  model=models[0] if len(models) == 1 else None, models=models if len(models) > 1 else None)
    return RunOptions(**{name: value for name, value in fields.items()
                         if value is not None or name not in DEFAULT_UNLESS_GIVEN})


def start(suite: Path, options: RunOptions, quiet: bool, exports: dict[str, Path]) -> int:
    """The run prepared, then run and shown by the view of its kind (one model, several); the exit code."""
    from evals_cli.run_options import NothingToRun
    from evals_cli.runner.models_matrix import PreparedModels
    from evals_cli.runner.run import prepare

    try:
        prepared = prepare(suite, options)
    except NothingToRun as done:  # --rerun-failed of a run where nothing failed: say so, run nothing
        print(str(done))
        return 0
    if isinstance(prepared, PreparedModels):  # several models: one run each, one side-by-side view
        other = sorted(set(exports) - {"html"})
        if other:
            raise ConfigError(f"--export {', '.join(other)} (or --junit, --task-results) with several models: not "
                              "supported; export each model's folder afterwards, or run one --model (--export "
                              "html=PATH writes the side-by-side report)")
        from evals_cli.cli.run_models import run_models

        return run_models(prepared, suite, quiet, exports.get("html"))
    from evals_cli.cli.run_live import run_live

    return run_live(prepared, suite, quiet, exports)
