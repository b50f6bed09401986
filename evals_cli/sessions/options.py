"""The options of a sessions evaluation: `RunOptions` (one option model for both pipelines) plus the judge
settings `evals analyze` takes on its command line. The options that need a live agent are refused here, in the
library, so the Python API and `evals run` say the same thing."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evals_cli.errors import ConfigError
from evals_cli.run_options import RunOptions

# RunOptions fields that mean nothing without a live agent: (field, value that means "not given", why)
AGENT_ONLY: tuple[tuple[str, Any, str], ...] = (
    ("model", None, "--model sets the agent model"), ("base_url", None, "--base-url sets the agent endpoint"),
    ("tags", None, "--tag filters samples by tag"), ("repeats", 1, "--repeats re-runs live agents"),
    ("resume", None, "--resume continues a live run"), ("retry_errors", False, "--retry-errors needs --resume"),
    ("sample_timeout", None, "--sample-timeout bounds a live sample"),
    ("shard", None, "--shard splits a live run"), ("otel", False, "--otel traces a live run"),
    ("target_file", None, "--target names a live agent"),
    ("sample_ids", None, "--sample-id picks live samples"), ("rerun_failed", None, "--rerun-failed reruns live samples"),
    ("cache", None, "--cache serves a live run's calls (use --record / --replay for the judge's)"),
)


class SessionsOptions(RunOptions):
    """`RunOptions` and the judge settings of `evals analyze`; None means 'as the suite (or EVAL_JUDGE_*) says'."""

    judge_confirms: bool | None = Field(default=None, description="None: as the suite says "
                                        "(target.judge_confirms).")

    @classmethod
    def of(cls, options: RunOptions | None) -> SessionsOptions:
        """The options of a run on a recorded_sessions suite; ConfigError for those that need a live agent."""
        if options is None:
            return cls()
        wrong = [why for name, unset, why in AGENT_ONLY if getattr(options, name) not in (unset, None)]
        if wrong:
            raise ConfigError([f"{why}; a recorded_sessions suite has no live agent (the judge is set with "
                               "judge.model or EVAL_JUDGE_MODEL)" for why in wrong])
        if isinstance(options, SessionsOptions):
            return options
        return cls(**{name: getattr(options, name) for name in RunOptions.model_fields})
