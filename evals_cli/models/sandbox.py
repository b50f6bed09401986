"""`sandbox:`, the machine each episode runs in (suite level, a row may override): the options of each kind. The
kinds themselves live in evals_cli/sandbox/; this module holds only their settings, so the suite and the sample
models name them without standing on any runtime code."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from evals_cli.models.base import StrictModel

DEFAULT_PIDS = 256
DEFAULT_FILE_MB = 256


class NoSandboxSpec(StrictModel):
    """No sandbox: setup, a command agent and its tools run on this machine as the user running evals-cli."""

    kind: Literal["none"] = "none"


class _Limits(StrictModel):
    pids: int = Field(default=DEFAULT_PIDS, ge=8, le=65536, description="The most processes (and threads) alive "
                      "inside at once: a fork bomb stops here and errors its sample.")
    max_file_mb: int = Field(default=DEFAULT_FILE_MB, ge=1, description="The largest file a process inside may "
                             "write, in MiB (a command writing without end gets EFBIG).")


class BwrapSandboxSpec(_Limits):
    """bubblewrap: the system's programs and libraries read-only, a fresh writable /workspace, a private /tmp, no
    home, no network (unless `network: true`), its own process tree, killed whole with the sandbox."""

    kind: Literal["bwrap"] = "bwrap"
    network: bool = Field(default=False, description="Share this machine's network with the sandbox (off: only a "
                          "private loopback).")
    ro_paths: list[str] = Field(default_factory=list, description="More host paths mounted read-only at the same "
                                "place (e.g. /opt/tool); /usr and /etc are mounted already (/opt is not).")


class DockerSandboxSpec(_Limits):
    """A container of a docker-CLI-compatible engine (docker, podman) per episode, from `image` or built from
    `build` once per run; the workspace is bind-mounted at /workspace."""

    kind: Literal["docker"] = "docker"
    engine: Literal["docker", "podman"] | None = Field(default=None, description="The engine's program (default: "
                                                       "docker if on PATH, else podman).")
    image: str | None = Field(default=None, description="The image each episode's container starts from (it must "
                              "exist on this machine: evals-cli never pulls). Give `image` or `build`.")
    build: str | None = Field(default=None, description="A folder holding a Dockerfile, relative to the suite: "
                              "built once per run, before any sample. Give `image` or `build`.")
    network: str = Field(default="none", description="The engine's --network (none: no network at all).")
    cpus: float | None = Field(default=None, gt=0, description="CPUs the container may use (--cpus).")
    memory: str | None = Field(default=None, pattern=r"^[0-9]+[bkmgBKMG]?$", description="Memory the container may "
                               "use (--memory), e.g. 512m.")
    user: str | None = Field(default=None, description="The user commands run as inside (--user), e.g. 1000:1000.")
    engine_args: list[str] = Field(default_factory=list, description="More arguments for the engine's `run`, for "
                                   "machines that need them (e.g. [--runtime, runc]).")

    @model_validator(mode="after")
    def _one_source(self) -> DockerSandboxSpec:
        if (self.image is None) == (self.build is None):
            raise ValueError("give exactly one of image (an image on this machine) or build (a folder with a "
                             "Dockerfile)")
        return self


SandboxSpec = Annotated[NoSandboxSpec | BwrapSandboxSpec | DockerSandboxSpec, Field(discriminator="kind")]
SANDBOX_DESCRIPTION = ("The machine each episode runs in: kind none (this machine, the default), bwrap "
                       "(bubblewrap) or docker (a docker-compatible engine). Setup commands and a command agent run "
                       "inside; its /workspace is the world's files.")
