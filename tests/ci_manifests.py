"""The Kubernetes manifests and GitHub Actions workflows the docs ship (docs/scaling.md), checked as far as they
can be without a cluster or a runner: their structure, every `evals` command in them parsed by the CLI itself
(an option it lacks or a value it refuses fails here, not on the cluster), and `--shard auto` given variables
that name every part of the split exactly once."""

from __future__ import annotations

import re
import shlex
from typing import Any

from evals_cli.sharding import resolve_shard

GITHUB_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
SHELL_PUNCTUATION = set(";|&()<>")


def is_kubernetes(data: Any) -> bool:
    return isinstance(data, dict) and {"apiVersion", "kind"} <= set(data)


def is_workflow(data: Any) -> bool:
    """A GitHub Actions workflow (YAML 1.1 reads its `on:` key as True)."""
    return isinstance(data, dict) and "jobs" in data and ("on" in data or True in data)


def evals_commands(script: str) -> list[list[str]]:
    """The arguments of every `evals ...` command in a shell script, one list per command (what follows `evals`
    up to `;`, `||`, `&&`, `|` or the end of the line); GitHub `${{ ... }}` expressions read as one word."""
    commands = []
    for line in GITHUB_EXPRESSION.sub("0", script).splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segment: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= SHELL_PUNCTUATION:
                if "evals" in segment:
                    commands.append(segment[segment.index("evals") + 1:])
                segment = []
            else:
                segment.append(token)
    return commands


def parse_evals(argv: list[str], where: str) -> dict[str, Any]:
    """The options `evals` parses from argv (its subcommand's), as it would on the command line; AssertionError
    naming the command when it refuses them."""
    from typer.main import get_command

    from evals_cli.cli import app

    group = get_command(app)
    assert argv, f"{where}: `evals` with no command"
    context = group.context_class(group, info_name="evals")
    command = group.get_command(context, argv[0])
    assert command is not None, f"{where}: evals has no command {argv[0]!r}"
    try:
        return dict(command.make_context(argv[0], argv[1:], parent=context).params)
    except Exception as exc:  # typer's own click raises its UsageError kinds
        raise AssertionError(f"{where}: evals {shlex.join(argv)}: {exc}") from None


def _split_is_whole(environ_for: list[dict[str, str]], where: str) -> None:
    """`--shard auto` under each job's environment gives parts 1..N of one N, each once."""
    parts = [resolve_shard("auto", environ) for environ in environ_for]
    total = len(parts)
    assert parts == [f"{k}/{total}" for k in range(1, total + 1)], f"{where}: --shard auto gives {parts}"


def check_kubernetes(data: dict[str, Any], where: str) -> None:
    if data["kind"] == "PersistentVolumeClaim":
        spec = data["spec"]
        assert data["apiVersion"] == "v1" and spec["accessModes"] and spec["resources"]["requests"]["storage"], where
        return
    if data["kind"] == "Service":  # docs/online.md: the watch replicas behind one name
        spec = data["spec"]
        assert data["apiVersion"] == "v1" and spec["selector"] and spec["ports"], where
        return
    if data["kind"] == "Deployment":  # docs/online.md: evals watch replicas, long-running
        assert data["apiVersion"] == "apps/v1", where
        spec = data["spec"]
        pod = spec["template"]["spec"]
        assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items(), where
        _check_containers(spec, pod, where)
        return
    assert data["kind"] == "Job" and data["apiVersion"] == "batch/v1", f"{where}: teach ci_manifests.py this kind"
    spec = data["spec"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] in ("Never", "OnFailure"), where
    _check_containers(spec, pod, where)


def _check_containers(spec: dict[str, Any], pod: dict[str, Any], where: str) -> None:
    volumes = {v["name"] for v in pod.get("volumes", [])}
    for container in pod["containers"]:
        assert container["name"] and container["image"], where
        assert {m["name"] for m in container.get("volumeMounts", [])} <= volumes, f"{where}: a mount with no volume"
        command = [*container.get("command", []), *container.get("args", [])]
        scripts = command[2:] if command[:2] == ["sh", "-c"] else [shlex.join(command)]
        for argv in (argv for script in scripts for argv in evals_commands(script)):
            if parse_evals(argv, where).get("shard") == "auto":
                assert spec.get("completionMode") == "Indexed", f"{where}: --shard auto outside an indexed Job"
                env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
                assert env.get("JOB_COMPLETIONS") == str(spec["completions"]), f"{where}: JOB_COMPLETIONS"
                _split_is_whole([{"JOB_COMPLETION_INDEX": str(i), "JOB_COMPLETIONS": env["JOB_COMPLETIONS"]}
                                 for i in range(spec["completions"])], where)


def check_workflow(data: dict[str, Any], where: str) -> None:
    jobs = data["jobs"]
    for name, job in jobs.items():
        assert job["runs-on"] and job["steps"], f"{where}: job {name}"
        needs = job.get("needs", [])
        assert set([needs] if isinstance(needs, str) else needs) <= set(jobs), f"{where}: {name} needs {needs}"
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), f"{where}: a step of {name} neither uses nor runs, or both"
            for argv in evals_commands(step.get("run", "")):
                if parse_evals(argv, f"{where} job {name}").get("shard") == "auto":
                    _check_matrix(job, f"{where} job {name}")


def _check_matrix(job: dict[str, Any], where: str) -> None:
    """`--shard auto` in a matrix job: the job passes its place in the matrix on, and the matrix has the one
    dimension that names the parts (strategy.job-total counts every combination)."""
    env = job.get("env", {})
    assert env.get("EVALS_SHARD_INDEX") == "${{ strategy.job-index }}", where
    assert env.get("EVALS_SHARD_TOTAL") == "${{ strategy.job-total }}", where
    matrix = job["strategy"]["matrix"]
    assert len(matrix) == 1, f"{where}: a matrix of {len(matrix)} dimensions: strategy.job-total counts them all"
    total = len(next(iter(matrix.values())))
    _split_is_whole([{"EVALS_SHARD_INDEX": str(i), "EVALS_SHARD_TOTAL": str(total)} for i in range(total)], where)
