"""A stable partition of samples by a hash of their id, so that N CI jobs each run one part and every
sample lands in exactly one part, whatever the order of the dataset or the machine.

`--shard auto` takes the part from the environment an orchestrator already sets (a Kubernetes indexed Job, a
GitLab parallel job) or from two variables a CI matrix passes on: the split is decided where the jobs are
counted, so no job has to be told its K by hand. Shards count from 1 everywhere evals-cli shows them ("2/3");
a 0-based index is turned into that once, here. A leaf module: the run reads it to split, `evals merge` to check
that every part came back exactly once."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass

from evals_cli.errors import ConfigError

AUTO = "auto"


@dataclass(frozen=True)
class ShardVariables:
    """A pair of environment variables that says which part a job is and how many parts there are."""

    index: str
    total: str
    first: int  # what the index of the first part is: 0 or 1
    source: str  # who sets them, for the messages

    def described(self) -> str:
        return f"{self.index} and {self.total} (the index counts from {self.first}; {self.source})"


# In this order: the first pair with either variable set decides (the explicit pair over an orchestrator's own).
SHARD_VARIABLES = (
    ShardVariables("EVALS_SHARD_INDEX", "EVALS_SHARD_TOTAL", 0, "set them yourself, e.g. from a GitHub Actions "
                   "matrix's strategy.job-index and strategy.job-total"),
    ShardVariables("JOB_COMPLETION_INDEX", "JOB_COMPLETIONS", 0, "a Kubernetes indexed Job sets the index; set "
                   "JOB_COMPLETIONS to the Job's completions"),
    ShardVariables("CI_NODE_INDEX", "CI_NODE_TOTAL", 1, "a GitLab CI job with parallel: sets both"),
)


def parse_shard(text: str) -> tuple[int, int]:
    """"K/N" with 1 <= K <= N -> (K, N)."""
    try:
        k_text, n_text = text.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise ConfigError(f"--shard {text!r}: expected K/N, e.g. 2/4, or auto (from the environment)") from None
    if not 1 <= k <= n:
        raise ConfigError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def in_shard(sample_id: str, shard: tuple[int, int]) -> bool:
    k, n = shard
    digest = hashlib.sha256(sample_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n == k - 1


def resolve_shard(text: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """--shard as given, with `auto` replaced by the "K/N" the environment says (the process's own unless
    `environ` is given), so that everything after (the split, run.json, a resume's check, the merge's) sees the
    part this job runs. ConfigError (exit 2) naming the variables when none is set, one of a pair is missing, or
    the pair does not make sense. The job's variables are read here, not through settings.py: they are the
    orchestrator's names (Kubernetes, a CI matrix), not evals-cli settings."""
    if text is None or text.strip().lower() != AUTO:
        return text
    if environ is None:
        environ = os.environ
    for pair in SHARD_VARIABLES:
        if pair.index in environ or pair.total in environ:
            k, n = _read_pair(pair, environ)
            return f"{k}/{n}"
    names = "; or ".join(p.described() for p in SHARD_VARIABLES)
    raise ConfigError(f"--shard auto: no shard in the environment; set {names}; or give the part yourself: "
                      "--shard K/N (1-based)")


def _read_pair(pair: ShardVariables, environ: Mapping[str, str]) -> tuple[int, int]:
    """(K, N), 1-based, from one pair; every way it can be wrong said with both names and values."""
    missing = [name for name in (pair.index, pair.total) if name not in environ]
    if missing:
        given = pair.total if missing == [pair.index] else pair.index
        raise ConfigError(f"--shard auto: {given}={environ[given]!r} is set but {missing[0]} is not; set both "
                          f"{pair.described()}, or give --shard K/N")
    values = {name: environ[name].strip() for name in (pair.index, pair.total)}
    shown = f"{pair.index}={environ[pair.index]!r}, {pair.total}={environ[pair.total]!r}"
    if not all(v.isascii() and v.isdigit() for v in values.values()):
        raise ConfigError(f"--shard auto: {shown}: both must be whole numbers ({pair.described()})")
    index, total = int(values[pair.index]), int(values[pair.total])
    if total < 1:
        raise ConfigError(f"--shard auto: {shown}: {pair.total} must be at least 1, the number of parts")
    if not pair.first <= index < total + pair.first:
        last = total - 1 + pair.first
        raise ConfigError(f"--shard auto: {shown}: the index must be between {pair.first} and {last} "
                          f"({pair.described()}); the two do not describe one part of one split")
    return index - pair.first + 1, total
