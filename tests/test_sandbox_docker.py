"""`sandbox: {kind: docker}` with real podman (a docker-CLI-compatible engine) and a test image made from this
machine's own programs (tests/sandbox_image.py): one container per episode, setup and a command agent inside,
its telemetry out through the sandbox's socket only, an absent image refused before any sample, a fork bomb
held by the pids limit, a command past its timeout killed inside, a killed run's containers removed."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.models.sample import Sample
from evals_cli.models.sandbox import DockerSandboxSpec
from evals_cli.sandbox import docker
from evals_cli.sandbox.factory import SandboxFactory
from tests.helpers import ROOT, read_jsonl, run_cli

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed: apt-get install "
                                 "podman runc uidmap")]

# what this machine's podman needs (crun fails on its hybrid cgroups): the suite's extra engine arguments
ENGINE_ARGS = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
AGENT = (ROOT / "tests" / "agents" / "sandbox_agent.py").read_text(encoding="utf-8")
ANSWER = {"answer": {"kind": "match", "function": "contains", "extractor": "last_assistant"}}


@pytest.fixture(scope="module")
def image() -> str:
    from tests.sandbox_image import test_image

    return test_image("podman")


def box_spec(image: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "docker", "engine": "podman", "image": image, "engine_args": ENGINE_ARGS, **extra}


def docker_suite(tmp: Path, rows: list[dict[str, Any]], sandbox: dict[str, Any], **target: Any) -> Path:
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "contained", "dataset": "rows.jsonl", "concurrency": 2, "sandbox": sandbox,
             "environment": {"files": {"agent.py": AGENT}},
             "target": {"kind": "command", "command": ["python3", "agent.py"], "telemetry": False, **target},
             "graders": ANSWER, "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte",
                                         "value": 0.5}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


def results(out: Path) -> dict[str, dict[str, Any]]:
    return {r["sample_id"]: r for r in read_jsonl(out / "results.jsonl")}


def containers_of(pid: int) -> list[str]:
    listed = subprocess.run(["podman", "ps", "-a", "--filter", f"label={docker.LABEL}={pid} {socket.gethostname()}",
                             "--format", "{{.ID}}"], capture_output=True, text=True, check=False)
    return listed.stdout.split()


def test_an_agent_in_a_container_works_in_its_workspace_and_reaches_only_the_receiver(tmp_path: Path,
                                                                                     image: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret", encoding="utf-8")
    rows = [{"id": "a", "input": ["write new.txt hello", "delete old.txt", "probe"], "ground_truth": "export: 200",
             "environment": {"files": {"old.txt": "bye"},
                             "setup": {"commands": [["sh", "-c", "echo made > setup.txt"]]}}}]
    suite = docker_suite(tmp_path, rows, box_spec(image), telemetry=True, env={"HOST_FILE": str(secret)})
    done = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    row = results(tmp_path / "out")["a"]
    said = [s["content"] for t in row["trajectory"]["turns"] for s in t["steps"] if s.get("content")][-1]
    assert "host-file: unreadable" in said and "net 1.1.1.1: unreachable" in said and "export: 200" in said
    assert "1 span(s)" in row["trajectory"]["not_observed"]
    assert [(c["target"], c["after"]) for c in row["trajectory"]["setup_changes"]] == [("setup.txt", "made\n")]
    changes = {c["target"]: (c["before"], c["after"]) for c in row["trajectory"]["state_changes"]}
    assert changes == {"new.txt": (None, "hello"), "old.txt": ("bye", None)}
    import os

    assert containers_of(os.getpid()) == []  # each episode's container removed with it


def test_an_image_that_does_not_exist_is_exit_2_before_any_sample(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "hi", "ground_truth": "echo: hi"}]
    suite = docker_suite(tmp_path, rows, box_spec("localhost/evals-no-such-image:never"))
    done = run_cli("run", str(suite), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "sandbox.image: no image 'localhost/evals-no-such-image:never'" in done.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists() and "Traceback" not in done.stderr


def test_a_fork_bomb_in_a_container_is_held_by_its_pids_limit(tmp_path: Path, image: str) -> None:
    bomb = "i=0; while [ $i -lt 5000 ]; do sleep 300 & i=$((i+1)); done; wait"
    rows: list[dict[str, Any]] = [
        {"id": "bomb", "input": "hi", "ground_truth": "echo: hi",
         "environment": {"setup": {"commands": [["sh", "-c", bomb]], "timeout": 60}}},
        {"id": "calm", "input": "hi", "ground_truth": "echo: hi"}]
    started = time.monotonic()
    run_cli("run", str(docker_suite(tmp_path, rows, box_spec(image, pids=64))), "-o", str(tmp_path / "out"))
    found = results(tmp_path / "out")
    assert time.monotonic() - started < 120
    assert found["bomb"]["error"]["category"] == "setup" and "fork" in found["bomb"]["error"]["message"].lower()
    assert found["calm"]["passed"] is True


def test_a_command_past_its_timeout_is_killed_inside_the_container(image: str) -> None:
    spec = DockerSandboxSpec.model_validate(box_spec(image))

    async def go() -> None:
        factory = SandboxFactory(spec, Path.cwd())
        box = await factory.open(Sample(id="t", input="x"), 0)
        assert box is not None
        try:
            stuck = await box.exec(["sh", "-c", "trap '' TERM; sleep 600"], timeout=1)
            assert stuck.timed_out and stuck.exit_code is None
            listing = "import os; print(sorted(open(f'/proc/{p}/cmdline').read() for p in os.listdir('/proc') " \
                      "if p.isdigit()))"
            left = await box.exec(["python3", "-c", listing], timeout=30)
            assert "600" not in left.stdout and "sleep" in left.stdout  # only the container's own `sleep infinity`
        finally:
            await box.close()
            factory.close()

    asyncio.run(go())


def test_the_containers_of_a_killed_run_are_removed_by_the_next(image: str) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    subprocess.run(["podman", "run", "-d", *ENGINE_ARGS, "--label", f"{docker.LABEL}={dead} {socket.gethostname()}",
                    "--entrypoint", "sleep", image, "infinity"], capture_output=True, check=True)
    assert len(containers_of(dead)) == 1
    docker.clean_orphans("podman")
    assert containers_of(dead) == []


def test_a_second_sigterm_while_containers_close_leaves_none(tmp_path: Path, image: str) -> None:
    from tests.helpers import start_run

    rows = [{"id": f"h{i}", "input": "hang", "ground_truth": "x"} for i in range(2)]
    run = start_run(docker_suite(tmp_path, rows, box_spec(image), sample_timeout=120), tmp_path / "out",
                    "--grace", "0")
    deadline = time.monotonic() + 120
    while len(containers_of(run.pid)) < 2 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.2)
    assert len(containers_of(run.pid)) == 2, "the containers never started"
    while time.monotonic() < deadline:  # the agent of the first container hangs (pid.txt written)
        agents = subprocess.run(["podman", "exec", containers_of(run.pid)[0], "ls", "/workspace"],
                                capture_output=True, text=True, check=False).stdout
        if "pid.txt" in agents:
            break
        time.sleep(0.2)
    run.send_signal(signal.SIGTERM)
    time.sleep(0.3)  # the second lands while the sandboxes close: a fixed wait is the case itself
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=120)
    assert containers_of(run.pid) == []
