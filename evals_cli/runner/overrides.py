"""What the command line changes in a suite before it is prepared: `--shard auto` read from the environment, the
target settings a flag overrides (validated as the YAML is), and the agent's system prompt read from its file."""

from __future__ import annotations

from evals_cli.errors import ConfigError
from evals_cli.run_options import RunOptions
from evals_cli.sharding import resolve_shard
from evals_cli.suite.spec import SuiteSpec


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


def with_overrides(suite: SuiteSpec, options: RunOptions) -> SuiteSpec:
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
    return suite.model_copy(update={"target": target})  # the private fields (the suite's folder...) kept
