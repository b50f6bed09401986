"""`sandbox:` as a suite and a row write it: the JSON Schema (`evals schema`) follows the spec models, a bad value
is exit 2 naming the field, and `evals init --sandbox` writes a suite whose episodes run in bubblewrap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from evals_cli.suite_schema import suite_schema
from tests.helpers import run_cli, write_suite


def test_the_schema_holds_every_kind_and_refuses_a_misspelt_key() -> None:
    validator = jsonschema.Draft202012Validator(suite_schema())
    base = {"name": "s", "dataset": "d.jsonl", "target": {"model": "m"}, "graders": {"a": {"kind": "no_loops"}}}
    for sandbox in ({"kind": "none"}, {"kind": "bwrap", "network": True, "pids": 64},
                    {"kind": "docker", "image": "x", "engine": "podman", "engine_args": ["--runtime", "runc"]}):
        assert list(validator.iter_errors({**base, "sandbox": sandbox})) == [], sandbox
    wrong = list(validator.iter_errors({**base, "sandbox": {"kind": "bwrap", "pid": 64}}))
    assert wrong and any("pid" in e.message for e in wrong)


def test_a_docker_sandbox_without_an_image_or_a_build_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi", "ground_truth": "x"}],
                        sandbox={"kind": "docker", "engine": "podman"})
    done = run_cli("validate", str(suite))
    assert done.returncode == 2
    assert "sandbox" in done.stderr and "give exactly one of image" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_evals_init_sandbox_writes_a_bwrap_suite_that_validates_and_replays(tmp_path: Path) -> None:
    folder = tmp_path / "starter"
    assert run_cli("init", str(folder), "--sandbox").returncode == 0
    suite = yaml.safe_load((folder / "suite.yaml").read_text(encoding="utf-8"))
    assert suite["sandbox"] == {"kind": "bwrap", "pids": 256}
    assert run_cli("validate", str(folder / "suite.yaml")).returncode == 0
    done = run_cli("run", str(folder / "suite.yaml"), "--replay", str(folder / "recording.jsonl"),
                   "-o", str(tmp_path / "out"), env={"EVAL_AGENT_MODEL": "", "EVAL_JUDGE_MODEL": ""})
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_row_sandbox_that_cannot_be_made_is_exit_2_naming_the_row(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "hi", "ground_truth": "x"},
            {"id": "b", "input": "hi", "ground_truth": "x", "sandbox": {"kind": "bwrap", "ro_paths": ["/evals-nope"]}}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "t", "dataset": "rows.jsonl", "target": {"kind": "command", "command": ["cat"], "telemetry": False},
             "graders": {"a": {"kind": "match", "function": "contains", "extractor": "last_assistant"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    done = run_cli("validate", str(tmp_path / "suite.yaml"))
    assert done.returncode == 2
    assert "rows.jsonl:2: sandbox.ro_paths: /evals-nope does not exist" in done.stderr + done.stdout
