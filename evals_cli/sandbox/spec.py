"""The suite's `sandbox:` block, as far as the computer tools need it: which kind of machine each episode gets.
The sandbox kinds' own options (network, image, limits) are the sandbox kinds' to add."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals_cli.models.base import StrictModel


class SandboxSpec(StrictModel):
    """One isolated machine per episode, its `/workspace` the world's files."""

    kind: Literal["none", "bwrap", "docker"] = Field(
        default="none", description="none: commands run on this machine, in the episode's folder, unisolated; "
        "bwrap: bubblewrap (Linux); docker: a docker-compatible engine.")
