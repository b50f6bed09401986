"""`--model NAME@URL` checked before anything runs: a URL without its scheme or a name left empty used to become a
model name at the default endpoint (the error then blamed target.base_url), and a port out of range ended the run in
`internal error: ExceptionGroup`. Each is exit 2 naming the part that is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_cli, write_suite


@pytest.mark.parametrize("model,expected", [
    ("m@localhost:8080/v1", "the URL after @ has no http:// or https:// scheme"),
    ("m@127.0.0.1:8080", "the URL after @ has no http:// or https:// scheme"),
    ("@http://127.0.0.1:8080/v1", "the model name before @ is empty"),
    ("m@http://127.0.0.1:99999/v1", "the URL's port is not valid"),
    ("m@http://127.0.0.1:port/v1", "the URL's port is not valid"),
    ("m@http:///v1", "the URL names no host"),
])
def test_a_bad_model_at_url_is_exit_2_naming_the_part(model: str, expected: str, tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "hi", "ground_truth": "x"}], base_url="http://127.0.0.1:9/v1")
    result = run_cli("run", str(suite), "--model", model, "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"--model {model}: {expected}" in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr and "ExceptionGroup" not in result.stdout + result.stderr


def test_a_name_with_its_own_at_stays_a_name() -> None:
    from evals_cli.run_options import split_model_url

    assert split_model_url("claude-3@20240229") == ("claude-3@20240229", None)
    assert split_model_url("llama3@http://localhost:8080/v1") == ("llama3", "http://localhost:8080/v1")
