"""A stable partition of samples by a hash of their id, so that N CI jobs each run one part and every
sample lands in exactly one part, whatever the order of the dataset or the machine."""

from __future__ import annotations

import hashlib

from evals_cli.errors import ConfigError


def parse_shard(text: str) -> tuple[int, int]:
    """"K/N" with 1 <= K <= N -> (K, N)."""
    try:
        k_text, n_text = text.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise ConfigError(f"--shard {text!r}: expected K/N, e.g. 2/4") from None
    if not 1 <= k <= n:
        raise ConfigError(f"--shard {text!r}: K must be between 1 and N")
    return k, n


def in_shard(sample_id: str, shard: tuple[int, int]) -> bool:
    k, n = shard
    digest = hashlib.sha256(sample_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n == k - 1
