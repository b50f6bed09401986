"""A run's start, for its sandboxes: what stops the run before any sample (`problems`, exit 2: a program or image
missing, namespaces refused), and the run-level side effects (`prepare`: the leftovers of a killed run removed,
the `build:` image built), each in one function so the start (runner/prepare.py) calls each from one place."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from evals_cli.models.sandbox import BwrapSandboxSpec, DockerSandboxSpec, NoSandboxSpec
from evals_cli.sandbox import docker
from evals_cli.sandbox.bwrap import programs, system_mounts
from evals_cli.sandbox.factory import SandboxFactory

TRIAL_TIMEOUT = 30.0


class SuiteSpec(Protocol):
    """What the start reads of a suite (suite/spec.py's SuiteSpec, named by what it holds: no import of the
    suite layer, which stands above the targets that use sandboxes)."""

    @property
    def sandbox(self) -> NoSandboxSpec | BwrapSandboxSpec | DockerSandboxSpec | None: ...

    @property
    def mcp_servers(self) -> Mapping[str, Any]: ...

    @property
    def user_mcp_servers(self) -> Mapping[str, Any]: ...

    @property
    def base_dir(self) -> Path: ...


def problems(suite: SuiteSpec, spec: Any = None) -> list[str]:
    """Why the suite's sandbox (or `spec`, a row's) cannot be made on this machine, each naming the field and the
    fix ([]: it can)."""
    spec = suite.sandbox if spec is None else spec
    if isinstance(spec, BwrapSandboxSpec | DockerSandboxSpec):
        stdio = sorted(name for name, server in {**suite.mcp_servers, **suite.user_mcp_servers}.items()
                       if server.command is not None and server.mode == "live")
        if stdio:
            return [f"mcp_servers.{stdio[0]}: a live stdio MCP server runs on this machine, outside the episode's "
                    f"{spec.kind} sandbox, which evals-cli does not do yet; give the server by url, use mode: "
                    "mock, or set sandbox: {kind: none}"]
    if isinstance(spec, BwrapSandboxSpec):
        absent = [f"sandbox.ro_paths: {path} does not exist on this machine; name a path that does"
                  for path in spec.ro_paths if not Path(path).is_absolute() or not Path(path).exists()]
        return absent or _bwrap_problems()
    if isinstance(spec, DockerSandboxSpec):
        return _docker_problems(spec, suite.base_dir)
    return []


def row_problems(suite: SuiteSpec, specs: dict[str, tuple[str, Any]]) -> list[str]:
    """Each distinct row `sandbox:` (by its JSON, with the first row naming it) checked as the suite's is."""
    return [f"{where}: {problem}" for where, spec in specs.values() for problem in problems(suite, spec)]


def _bwrap_problems() -> list[str]:
    missing = [f"sandbox: kind bwrap needs {program}, which is not installed; install the {package} package "
               "(apt-get install bubblewrap), or set sandbox: {kind: none}"
               for program, package in programs(os.geteuid() == 0) if shutil.which(program) is None]
    if missing:
        return missing
    trial = ["bwrap", "--unshare-all", "--die-with-parent", *system_mounts(), "--proc", "/proc", "--dev", "/dev",
             "--", "true"]
    if os.geteuid() == 0:
        trial = ["setpriv", "--reuid=1600000000", "--regid=1600000000", "--clear-groups", "--", *trial]
    try:
        done = subprocess.run(trial, capture_output=True, text=True, timeout=TRIAL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [f"sandbox: kind bwrap: bubblewrap could not be tried ({exc}); set sandbox: {{kind: none}}"]
    if done.returncode != 0:
        said = done.stderr.strip()[-400:]
        return [f"sandbox: kind bwrap: bubblewrap cannot make a sandbox on this machine ({said}); unprivileged "
                "user namespaces must be allowed (sysctl kernel.unprivileged_userns_clone=1, "
                "user.max_user_namespaces > 0), or set sandbox: {kind: none}"]
    return []


def _docker_problems(spec: DockerSandboxSpec, base_dir: Path) -> list[str]:
    program = docker.find_engine(spec)
    if program is None:
        wanted = spec.engine or "docker or podman"
        return [f"sandbox.engine: {wanted} is not on PATH; install it (apt-get install podman), or set "
                "sandbox: {kind: none}"]
    if spec.build is not None:
        context = base_dir / spec.build
        if not (context / "Dockerfile").is_file() and not (context / "Containerfile").is_file():
            return [f"sandbox.build: {context} holds no Dockerfile; give a folder with one, or image:"]
        return []
    assert spec.image is not None
    if not docker.image_exists(program, spec.image):
        return [f"sandbox.image: no image {spec.image!r} on this machine ({program} image inspect found none; "
                f"evals-cli never pulls): {program} pull or build it first, or give build: a Dockerfile folder"]
    return []


def prepare(suite: SuiteSpec) -> SandboxFactory | None:
    """The run's sandbox factory (None: the suite asks for none and no row may): the leftovers of killed runs
    removed first, and the `build:` image built. RuntimeError when the build fails (the run cannot start)."""
    from evals_cli.sandbox.folders import clean_orphans

    clean_orphans()
    spec = suite.sandbox
    built: dict[str, str] = {}
    if isinstance(spec, DockerSandboxSpec):
        program = docker.find_engine(spec)
        if program is not None:
            docker.clean_orphans(program)
            if spec.build is not None:
                context = (suite.base_dir / spec.build).resolve()
                tag = "evals-build-" + hashlib.sha256(str(context).encode()).hexdigest()[:12]
                done = docker.build_image(program, context, tag)
                if done.returncode != 0:
                    raise RuntimeError(f"sandbox.build: {program} build {context} failed: "
                                       f"{(done.stderr or done.stdout).strip()[-800:]}")
                built[str(spec.build)] = tag
    return SandboxFactory(spec, suite.base_dir, built)
