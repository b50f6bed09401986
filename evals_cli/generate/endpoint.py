"""Which model writes the rows. Writing test cases is a judge's kind of work (a capable model reading a policy),
so the generator is found where the judge is, the command line first: `--model NAME[@URL]`, `--base-url`,
`--api-key`; then the suite's `judge:` block; EVAL_JUDGE_*; then the suite's agent endpoint (endpoints/resolve.py
`resolve_judge`, the same order `evals run` uses for its judge)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from evals_cli.endpoints.resolve import Endpoint, JudgeOverrides, resolve_agent, resolve_judge
from evals_cli.errors import ConfigError
from evals_cli.run_options import split_model_url


def _agent(suite: Any) -> Endpoint | None:
    """The suite's agent endpoint, when its target is a model with one (a python agent has none)."""
    if suite is None:
        return None
    try:
        return resolve_agent(suite.target)
    except (ConfigError, AttributeError):
        return None


def generator_endpoint(suite: Any, model: str | None, base_url: str | None, api_key: str | None) -> Endpoint:
    """The generator's endpoint; ConfigError (exit 2) when no model is named anywhere."""
    name, own_url = split_model_url(model) if model else (None, None)
    overrides = JudgeOverrides(model=name, base_url=own_url or base_url, api_key=api_key)
    nobody = SimpleNamespace(model=None, base_url=None, api_key=None, provider=None)
    try:
        found = resolve_judge(nobody, suite.judge if suite is not None else None, _agent(suite), overrides)
    except ConfigError:
        raise ConfigError("no generator model: give --model NAME (NAME@URL for a model on its own endpoint), or "
                          "a judge block in the --tools suite, or EVAL_JUDGE_MODEL") from None
    where = found.base_url_from
    if own_url:
        where = f"--model {name}@URL"
    elif base_url:
        where = "--base-url"
    return replace(found, role="generator", base_url_from=where)
