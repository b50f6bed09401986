"""One settings model for every environment variable (evals_cli/settings.py): a bad value is exit 2 naming the
variable and what it expects (it used to become the default in silence), `evals list settings` lists them all
with defaults and current values (keys masked), and no module reads a knob around the model."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evals_cli import load_suite, run_suite
from evals_cli.errors import ConfigError
from evals_cli.runner import RunOptions
from evals_cli.settings import Settings, env_name, knob, listing
from tests.helpers import ROOT, run_cli, write_suite
from tests.scripted_server import ScriptedServer, text

BAD = [
    ("EVALS_REGEX_TIMEOUT", "abc", "a number of seconds greater than 0"),
    ("EVALS_REGEX_TIMEOUT", "0", "a number of seconds greater than 0"),
    ("EVALS_RUBRIC_TIMEOUT", "-1", "a number of seconds greater than 0"),
    ("EVALS_RUBRIC_MAX_CHARS", "2.5", "a whole number greater than 0"),
    ("EVALS_MAX_FIELD_CHARS", "lots", "a whole number greater than 0"),
    ("EVALS_MAX_RESPONSE_BYTES", "0", "a whole number greater than 0"),
    ("EVALS_MAX_MCP_MESSAGE_BYTES", "-1", "a whole number greater than 0"),
    ("EVALS_DEBUG", "perhaps", "a switch: 1, true, yes or on; 0, false, no or off"),
]


@pytest.mark.parametrize(("variable", "value", "expects"), BAD)
@pytest.mark.parametrize("command", ["validate", "run", "list"])
def test_a_bad_value_is_exit_2_naming_the_variable(tmp_path: Path, command: str, variable: str, value: str,
                                                   expects: str) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "q", "ground_truth": "x"}])
    args = {"list": ["list"], "validate": ["validate", str(suite)],
            "run": ["run", str(suite), "-o", str(tmp_path / "out")]}[command]
    result = run_cli(*args, env={variable: value})
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{variable}={value!r}: expected {expects}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_every_bad_value_is_named_at_once(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [{"id": "a", "input": "q", "ground_truth": "x"}])
    result = run_cli("validate", str(suite), env={"EVALS_REGEX_TIMEOUT": "abc", "EVALS_MAX_FIELD_CHARS": "-3"})
    assert result.returncode == 2
    assert "EVALS_REGEX_TIMEOUT='abc'" in result.stderr and "EVALS_MAX_FIELD_CHARS='-3'" in result.stderr


def test_the_library_refuses_before_the_first_model_call(server: ScriptedServer, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    server.script = lambda path, body: text("x")
    suite = load_suite(write_suite(tmp_path, [{"id": "a", "input": "q", "ground_truth": "x"}], base_url=server.url))
    monkeypatch.setenv("EVALS_RUBRIC_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="EVALS_RUBRIC_TIMEOUT='soon'"):
        run_suite(suite, RunOptions(output=tmp_path / "out"))
    assert server.requests == []


def test_empty_is_unset_and_a_good_value_takes_effect_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_REGEX_TIMEOUT", "")
    monkeypatch.setenv("EVAL_AGENT_MODEL", "")
    assert knob("regex_timeout") == 1.0 and knob("agent_model") is None
    monkeypatch.setenv("EVALS_REGEX_TIMEOUT", "0.25")
    monkeypatch.setenv("EVAL_AGENT_MODEL", "qwen")
    assert knob("regex_timeout") == 0.25 and knob("agent_model") == "qwen"
    monkeypatch.setenv("EVALS_DEBUG", "0")
    assert knob("debug") is False  # a switch: "0" is off (any text used to turn it on)


def test_a_knob_read_without_the_model_is_what_the_model_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset typed knobs and text knobs are read without building the model: the same values it gives."""
    from evals_cli.settings import KNOBS, load

    for spec in KNOBS.values():
        monkeypatch.delenv(spec.env, raising=False)
    for env, value in (("OPENAI_API_KEY", '{"a": 1}'), ("EVAL_AGENT_MODEL", " null "), ("EVAL_JUDGE_MODEL", ""),
                       ("EVAL_USER_MODEL", "0")):
        monkeypatch.setenv(env, value)
    model = load()
    assert {name: knob(name) for name in KNOBS} == {name: getattr(model, name) for name in KNOBS}
    assert knob("agent_model") == " null " and knob("judge_model") is None and knob("max_field_chars") == 262144


def test_list_settings_shows_every_knob_with_default_and_value_keys_masked() -> None:
    secret = "sk-test-0123456789abcdef"
    result = run_cli("list", "settings", env={"EVAL_JUDGE_API_KEY": secret, "EVALS_REGEX_TIMEOUT": "0.5",
                                              "EVAL_AGENT_BASE_URL": "http://me:hunter2@127.0.0.1:8000/v1"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("settings:\n")
    for name in Settings.model_fields:
        assert f"\n{env_name(name)} — " in out, name
    blocks = {b.split(" — ")[0]: b for b in out.split("\n\n")}
    assert "default: 1.0" in blocks["EVALS_REGEX_TIMEOUT"] and "now: 0.5" in blocks["EVALS_REGEX_TIMEOUT"]
    assert "default: off" in blocks["EVALS_DEBUG"] and "now: not set" in blocks["EVALS_DEBUG"]
    assert "now: set (***)" in blocks["EVAL_JUDGE_API_KEY"]
    assert "now: http://me:***@127.0.0.1:8000/v1" in blocks["EVAL_AGENT_BASE_URL"]
    assert secret not in out and "hunter2" not in out
    assert "\nsettings:\n" in run_cli("list").stdout  # one of the sections of the whole listing


def test_the_eighteen_evals_knobs_are_declared_once_with_a_description() -> None:
    names = [k.env for k in listing()]
    ours = [n for n in names if n.startswith(("EVALS_", "EVAL_"))]
    assert len(ours) == 18 and len(set(names)) == len(names)
    assert all(k.description for k in listing())
    # the CLI checks the settings only when an EVALS_* variable is set: every typed knob must be one
    typed = [k.env for k in listing() if k.kind != "text"]
    assert typed and all(n.startswith("EVALS_") for n in typed)


def test_no_module_reads_the_environment_around_the_model() -> None:
    """os.environ / os.getenv only in the settings model, the CLI's cheap check for EVALS_* names, the suite's
    ${VAR} expansion (any variable a suite names), the display (NO_COLOR, COLUMNS: moved later) and the plug-in
    loader (EVALS_PLUGINS, whose empty value is not an unset one, and the import bound: registry.py stands below
    settings.py, which declares both for `evals list settings` and checks the bound before every command) and
    `--shard auto` (sharding.py: an orchestrator's variables, JOB_COMPLETION_INDEX and the like, not settings),
    and the sandbox's launcher (sandbox/envlaunch.py, a script of its own: the environment it hands the sandbox)."""
    allowed = {"settings.py", "cli/guard.py", "suite/envvars.py", "display/terminal.py", "registry.py", "sharding.py",
               "sandbox/envlaunch.py"}
    found = []
    for path in sorted((ROOT / "evals_cli").rglob("*.py")):
        rel = path.relative_to(ROOT / "evals_cli").as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and \
                    isinstance(node.value, ast.Name) and node.value.id == "os" and rel not in allowed:
                found.append(f"{rel}:{node.lineno}")
    assert found == []
