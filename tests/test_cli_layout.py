"""The command line as a package of thin commands: `evals run`'s parameters all reach RunOptions under the names
the runner reads, and importing every command's module (what `evals --help` and `evals --version` do) costs
neither the suite's models nor Rich."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from evals_cli.cli.run import COMMAND_ONLY, FIELD_OF, run, run_options
from evals_cli.run_options import RunOptions
from tests.helpers import ROOT


def _defaults() -> dict[str, object]:
    """`run`'s parameters as Typer passes them when none is given on the command line."""
    signature = inspect.signature(inspect.unwrap(run))
    return {name: param.default for name, param in signature.parameters.items()}


def test_run_with_no_option_is_the_default_run() -> None:
    assert run_options(_defaults()) == RunOptions()


def test_every_run_option_reaches_its_field(tmp_path: Path) -> None:
    """Each parameter given a value lands in the field of its name (or of FIELD_OF's): a parameter
    added to the command and not to RunOptions is refused (extra="forbid"), not silently dropped."""
    given = {"output": Path("out"), "concurrency": 3, "max_samples": 7, "tag": ["t"], "sample_id": ["s-*"],
             "rerun_failed": Path("old"), "no_judge": True, "record": Path("rec.jsonl"), "replay": tmp_path / "rep.jsonl",
             "cache": Path("cache.jsonl"), "base_url": "http://127.0.0.1:9/v1", "gate": "any",
             "judge_model": "judge", "judge_base_url": "http://127.0.0.1:8/v1", "judge_api_key": "k",
             "max_error_rate": 0.5, "repeats": 2, "timeout": 1.5, "sample_timeout": 9.0, "max_retries": 4,
             "resume": Path("run"), "retry_errors": True, "grace": 3.0, "target": Path("target.yaml"),
             "shard": "1/2", "replay_user": tmp_path, "on_divergence": "stop", "otel": True,
             "since": "2026-01-01", "until": "2026-02-01"}
    (tmp_path / "rep.jsonl").write_text("")
    assert set(given) | COMMAND_ONLY == set(_defaults())  # every parameter is given here or is the command's own
    needs = {"retry_errors": {"resume": given["resume"]}, "on_divergence": {"replay_user": given["replay_user"]}}
    for name, value in given.items():  # one at a time: some refuse others (--record with --replay)
        options = run_options({**_defaults(), **needs.get(name, {}), name: value})
        assert getattr(options, FIELD_OF.get(name, name)) == value, name


@pytest.mark.parametrize(("models", "one", "several"), [([], None, None), (["m"], "m", None),
                                                        (["a", "b"], None, ["a", "b"])])
def test_model_names_the_one_model_or_the_models_side_by_side(models: list[str], one: str | None,
                                                               several: list[str] | None) -> None:
    options = run_options({**_defaults(), "model": models})
    assert (options.model, options.models) == (one, several)


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_the_command_modules_import_no_models_and_version_no_rich(argv: list[str]) -> None:
    probe = (f"import sys\nsys.argv = ['evals', *{argv!r}]\nfrom evals_cli.cli import app\n"
             "try:\n    app()\nexcept SystemExit:\n    pass\nprint(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    modules = set(out.stdout.split())
    assert {"evals_cli.cli.run", "evals_cli.cli.analyze", "evals_cli.cli.report"} <= modules
    assert not {m for m in modules if m.split(".")[0] == "pydantic" or m.startswith("evals_cli.models")}
    if argv == ["--version"]:
        assert not {m for m in modules if m.split(".")[0] == "rich"}
