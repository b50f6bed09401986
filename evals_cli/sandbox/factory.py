"""The run's maker of sandboxes, handed to every Episode as the runner hands it other per-run pieces: one sandbox
per episode, of the sample's kind (the row's `sandbox:`, else the suite's), in a folder of the run's root."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from evals_cli.models.sample import Sample
from evals_cli.models.sandbox import BwrapSandboxSpec, DockerSandboxSpec, NoSandboxSpec
from evals_cli.sandbox.base import HostedSandbox, SandboxUnavailable
from evals_cli.sandbox.folders import Folders

AnySpec = NoSandboxSpec | BwrapSandboxSpec | DockerSandboxSpec


class SandboxFactory:
    """`default` the suite's sandbox (None: kind none); `built` the images preflight built, by `build:` folder."""

    def __init__(self, default: AnySpec | None, base_dir: Path, built: dict[str, str] | None = None) -> None:
        self.default = default
        self.base_dir = base_dir
        self.built = dict(built or {})
        self.folders = Folders()
        self.engines: set[str] = set()  # the engines this run made containers with (close removes what is left)

    def spec_for(self, sample: Sample) -> BwrapSandboxSpec | DockerSandboxSpec | None:
        spec = sample.sandbox or self.default
        return None if spec is None or isinstance(spec, NoSandboxSpec) else spec

    async def open(self, sample: Sample, repeat: int) -> HostedSandbox | None:
        """The episode's sandbox, started (None: kind none); SandboxUnavailable when it cannot be made."""
        spec = self.spec_for(sample)
        if spec is None:
            return None
        folder = self.folders.new(str(sample.id), repeat)
        if isinstance(spec, BwrapSandboxSpec):
            from evals_cli.sandbox.bwrap import BwrapSandbox, programs

            for program, package in programs(os.geteuid() == 0):
                if shutil.which(program) is None:
                    raise SandboxUnavailable(f"sandbox bwrap: {program} is not installed; install the {package} "
                                             "package, or set sandbox: {kind: none}")
            return BwrapSandbox(spec, folder)
        from evals_cli.sandbox.docker import DockerSandbox, find_engine

        engine = find_engine(spec)
        if engine is None:
            raise SandboxUnavailable(f"sandbox docker: {spec.engine or 'docker or podman'} is not on PATH; install "
                                     "it, or set sandbox: {kind: none}")
        image = spec.image or self.built.get(str(spec.build))
        if image is None:
            raise SandboxUnavailable(f"sandbox docker: build: {spec.build} is built only for the suite's sandbox; "
                                     "give this row an image: instead")
        self.engines.add(engine)
        return await DockerSandbox.create(spec, folder, engine, image)

    def close(self) -> None:
        """The run's root removed, with every episode folder left in it, and every container of this process
        still there removed, synchronously: an episode's own close cut off (a second SIGTERM cancels it), or a
        create cancelled while the engine was making its container, leaves none behind."""
        from evals_cli.sandbox.docker import remove_mine

        for engine in sorted(self.engines):
            remove_mine(engine)
        self.folders.close()
