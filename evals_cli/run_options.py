"""What a caller (the CLI or Python) can say about one run, and what it gets back.

`RunOptions` checks its own combinations when it is built, so the Python API refuses what `evals run` refuses,
with the same words (a ConfigError, exit 2): the CLI only parses arguments into it. A leaf module (pydantic and
the result models only), so both pipelines, live and recorded sessions, can take it without importing each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evals_cli.errors import EXIT_PASSED, ConfigError, EvalsError
from evals_cli.models.results import MatrixSummary, RunSummary, SampleResult, SummaryBase
from evals_cli.suite.problems import error_message

if TYPE_CHECKING:
    from evals_cli.endpoints.resolve import JudgeOverrides

ResultCallback = Callable[[SampleResult], None]


class RunOptions(BaseModel):
    """Everything the CLI can override; None means 'as the suite says'."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_assignment=True)

    output: Path | None = Field(default=None, description="Output folder (default results/<suite>-<time>).")
    concurrency: int | None = Field(default=None, ge=1, description="Samples in flight.")
    max_samples: int | None = Field(default=None, ge=1, description="Run at most this many samples.")
    tags: list[str] | None = Field(default=None, description="Only samples carrying one of these tags.")
    sample_ids: list[str] | None = Field(default=None, description="Only these samples: ids or globs (refund-*); "
                                         "one that matches no sample is an error (--sample-id).")
    rerun_failed: Path | None = Field(default=None, description="Only the samples that failed or errored (in any "
                                      "repeat) in this earlier run: its folder or results.jsonl; a new run.")
    repeats: int | None = Field(default=None, ge=1, description="Run every sample this many times.")
    no_judge: bool = Field(default=False, description="Skip model_judge graders: no judge calls at all.")
    record: Path | None = Field(default=None, description="Record every model call to this JSONL file.")
    replay: Path | None = Field(default=None, description="Serve model calls from this recording; no network.")
    cache: Path | None = Field(default=None, description="Serve every call this file (a recording) holds; call and "
                               "append the rest (--cache): a rerun of an unchanged suite calls no model.")
    target_file: Path | None = Field(default=None, description="A YAML file with the agent to test instead of "
                                     "the suite's target (--target).")
    base_url: str | None = Field(default=None, description="Agent endpoint, over the suite's (--base-url).")
    model: str | None = Field(default=None, description="Agent model, over the suite's (--model).")
    models: list[str] | None = Field(default=None, description="Run the whole suite once per model, side by side, "
                                     "each into its own subfolder (--model repeated); over the suite's "
                                     "target.models. One model is the same as model.")
    model_base_urls: dict[str, str] = Field(
        default_factory=dict, description="Model name -> the endpoint it runs on, over --base-url and the suite's "
        "(`--model NAME@URL`; a model or models entry written NAME@URL is read into here).")
    gate: Literal["all", "any"] = Field(default="all", description="With several models: all, exit 0 only when "
                                        "every model passes its gate; any, when at least one does (--gate).")
    judge_model: str | None = Field(default=None, description="Judge model, over every grader's own, the suite's "
                                    "judge block and EVAL_JUDGE_MODEL (--judge-model).")
    judge_base_url: str | None = Field(default=None, description="Judge endpoint, over every grader's own, the "
                                       "suite's judge block and EVAL_JUDGE_BASE_URL (--judge-base-url).")
    judge_api_key: str | None = Field(default=None, description="Judge API key, over every grader's own, the "
                                      "suite's judge block and EVAL_JUDGE_API_KEY (--judge-api-key).")
    timeout: float | None = Field(default=None, gt=0, description="Per-request timeout in seconds.")
    sample_timeout: float | None = Field(default=None, ge=0, description="Seconds one sample may take in all "
                                         "(overrides the suite's; 0: no limit).")
    max_retries: int | None = Field(default=None, ge=0, description="Retries on 429, 5xx, timeouts, drops.")
    since: str | None = Field(default=None, description="A traces target: only conversations that started at or "
                              "after this ISO 8601 date or date-time (over target.since).")
    until: str | None = Field(default=None, description="A traces target: only conversations that started before "
                              "this date or date-time (over target.until).")
    max_error_rate: float = Field(default=0.2, ge=0, le=1, description="Exit 3 past this share of errored samples "
                                  "(with resume and not set here: the run's own).")
    resume: Path | None = Field(default=None, description="Continue a run: its folder or results.jsonl, with the "
                                "options it started with (its run.json); other values are refused.")
    retry_errors: bool = Field(default=False, description="With resume: run errored samples again.")
    grace_s: float = Field(default=10.0, ge=0, description="Seconds in-flight samples get after Ctrl-C.")
    shard: str | None = Field(default=None, description="K/N: run only the K-th of N stable parts of the samples; "
                                "auto: the part the environment names (a Kubernetes indexed Job, a CI matrix).")
    otel: bool = Field(default=False, description="Export OpenTelemetry spans (or OTEL_EXPORTER_OTLP_ENDPOINT).")
    tracer_provider: Any = Field(default=None, description="An OpenTelemetry TracerProvider to use instead of "
                                 "OTLP (tests).")
    replay_user: Path | None = Field(default=None, description="Replay the user messages of this finished run "
                                     "with simulated users (its folder or results.jsonl) while the agent stays on "
                                     "the recorded path (--replay-user): two agent versions, the same user.")
    on_divergence: Literal["continue", "stop"] | None = Field(
        default=None, description="With replay_user, when the agent's turn differs from the recorded one: continue "
        "(default: the user simulator takes over) or stop (the conversation ends, end_reason diverged).")
    precheck: bool = Field(default=True, description="Check every dataset row before the first model call.")
    matrix: bool = Field(default=False, description="Set by the runner of several models on each model's own run: "
                         "simulated-user requests then name the agent's model, so one recording keeps each model's "
                         "conversations apart.")

    def __init__(self, **data: Any) -> None:
        data = _split_model_urls(data)
        try:
            super().__init__(**data)
        except ValidationError as exc:  # a wrong value is a usage error (exit 2), as on the command line
            raise ConfigError([f"{'.'.join(map(str, e['loc'])) or 'options'}: {error_message(e)}"
                               for e in exc.errors()]) from None

    @model_validator(mode="after")
    def _combinations(self) -> RunOptions:
        # ConfigError is not a ValueError: pydantic lets it through unchanged, problems and exit code intact
        if self.record is not None and self.replay is not None:
            raise ConfigError("--record and --replay cannot be used together")
        if self.cache is not None and (self.record is not None or self.replay is not None):
            raise ConfigError(f"--cache with --{'record' if self.record is not None else 'replay'}: --cache already "
                              "serves what its file holds and records what it calls; use one of them")
        if self.resume is not None and self.output is not None:
            raise ConfigError("--resume continues the run in its own folder; drop -o/--output")
        if self.retry_errors and self.resume is None:
            raise ConfigError("--retry-errors only makes sense with --resume RUN")
        if self.replay is not None and not self.replay.is_file():
            raise ConfigError(f"{self.replay}: recording not found (--replay)")
        if self.on_divergence is not None and self.replay_user is None:
            raise ConfigError("--on-divergence says what happens when a replayed conversation leaves the recorded "
                              "path; it needs --replay-user RUN")
        if self.replay_user is not None and not self.replay_user.exists():
            raise ConfigError(f"--replay-user {self.replay_user}: not found; give the folder of a finished run with "
                              "simulated users, or its results.jsonl")
        if self.rerun_failed is not None and self.resume is not None:
            raise ConfigError("--rerun-failed starts a new run with the failed samples of RUN; --resume continues a "
                              "run in its own folder: use one of them")
        if self.model is not None and not self.model.strip():  # not "use the suite's model": say so
            raise ConfigError("--model: an empty model name; give the model to run, or leave --model out")
        if self.models is not None:
            if self.model is not None:
                raise ConfigError("give model (one) or models (several), not both")
            if not self.models or any(not str(m).strip() for m in self.models):
                raise ConfigError("--model: an empty model name; give the model names to run")
            twice = sorted({m for m in self.models if self.models.count(m) > 1})
            if twice:
                raise ConfigError(f"--model {twice[0]}: given twice; each model runs once (use --repeats to run "
                                  "samples again)")
        if self.sample_ids is not None:
            blank = not self.sample_ids or any(not str(i).strip() for i in self.sample_ids)
            if blank:
                raise ConfigError("--sample-id: an empty id; give a sample id or a glob such as 'refund-*'")
        return self

    @property
    def agent_overrides(self) -> dict[str, str | None]:
        """--base-url and --model (with its own endpoint, NAME@URL), as `resolve_target_endpoint` takes them."""
        own = self.model_base_urls.get(self.model) if self.model is not None else None
        return {"base_url": self.base_url, "model": self.model, "model_base_url": own}

    @property
    def judge_overrides(self) -> JudgeOverrides:
        """--judge-model, --judge-base-url and --judge-api-key, as `resolve_judge` takes them."""
        from evals_cli.endpoints.resolve import JudgeOverrides

        return JudgeOverrides(model=self.judge_model, base_url=self.judge_base_url, api_key=self.judge_api_key)


_MODEL_AT_URL = re.compile(r"^(?P<name>.*?)@(?P<url>https?://\S+)$")
# what follows the @ of a name when it is an address written without its scheme (localhost:8080/v1, 10.0.0.2:80,
# host.example/v1, ftp://...); a name's own @ (a version tag, claude@20240229) has no port and no path
_ADDRESS = re.compile(r"^([a-z][a-z0-9+.-]*://|localhost\b|\[[0-9a-f:]+\]|[\w.-]+:\d|[\w-]+(\.[\w-]+)+/)", re.I)


def split_model_url(text: str) -> tuple[str, str | None]:
    """`NAME@URL` -> (NAME, URL), for a model on an endpoint of its own (`--model llama3@http://localhost:8080/v1`);
    anything else is a plain name. The URL must start with http:// or https://, so a name holding an @ stays whole."""
    found = _MODEL_AT_URL.match(text.strip()) if isinstance(text, str) else None
    if found is None:
        if isinstance(text, str) and "@" in text and _ADDRESS.match(text.rsplit("@", 1)[1].strip()):
            raise ConfigError(f"--model {text}: the URL after @ has no http:// or https:// scheme; write "
                              "NAME@http://HOST:PORT/v1, e.g. llama3@http://localhost:8080/v1")
        return text, None
    name, url = found.group("name").strip(), found.group("url")
    if not name:
        raise ConfigError(f"--model {text}: the model name before @ is empty; write NAME@URL, e.g. "
                          "llama3@http://localhost:8080/v1")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number from 0 to 65535)
    except ValueError as exc:
        raise ConfigError(f"--model {text}: the URL's port is not valid ({exc}); give a port from 1 to 65535, e.g. "
                          f"{name}@http://localhost:8080/v1") from None
    if not parts.hostname:
        raise ConfigError(f"--model {text}: the URL names no host; write NAME@http://HOST:PORT/v1")
    return name, url


def _split_model_urls(data: dict[str, Any]) -> dict[str, Any]:
    """`model` and `models` entries written NAME@URL as the name, with the URL in `model_base_urls`."""
    urls = dict(data.get("model_base_urls") or {})
    out = dict(data)
    if isinstance(data.get("model"), str):
        out["model"], url = split_model_url(data["model"])
        if url is not None:
            urls[out["model"]] = url
    if isinstance(data.get("models"), list | tuple):
        names = []
        for entry in data["models"]:
            name, url = split_model_url(entry) if isinstance(entry, str) else (entry, None)
            names.append(name)
            if url is not None:
                urls[name] = url
        out["models"] = names
    if urls:
        out["model_base_urls"] = urls
    return out


class NothingToRun(EvalsError):
    """The options select no sample on purpose (`--rerun-failed` of a run where nothing failed): not an error;
    the CLI prints the message and exits 0 without starting a run."""

    exit_code = EXIT_PASSED


Summary = TypeVar("Summary", bound=SummaryBase)


@dataclass
class RunOutcome(Generic[Summary]):
    """What a run returns, whichever pipeline ran it: the summary (a `RunSummary` for a live suite, a
    `SessionsSummary` for recorded sessions; both say status, gate verdict and exit code the same way), where
    the results are, the exit code, and messages for stderr."""

    summary: Summary
    output_dir: Path
    exit_code: int
    messages: list[str] = field(default_factory=list)

    @property
    def made_no_call(self) -> bool:
        """A live run in which no model answered at all (see `RunSummary.made_no_call`)."""
        return isinstance(self.summary, RunSummary) and self.summary.made_no_call()


LiveOutcome = RunOutcome[RunSummary]


@dataclass
class ModelsOutcome(RunOutcome[MatrixSummary]):
    """What a run over several models returns: the matrix summary (each model's status and gate verdict, the
    combined verdict and exit code), the top folder, and each model's own `RunOutcome` by model name, in the
    order the models were given (`folders` names each model's subfolder)."""

    outcomes: dict[str, RunOutcome[RunSummary]] = field(default_factory=dict)
    folders: dict[str, Path] = field(default_factory=dict)

    @property
    def made_no_call(self) -> bool:
        """No model answered anything: every model's run made no call."""
        return bool(self.outcomes) and all(o.made_no_call for o in self.outcomes.values())
