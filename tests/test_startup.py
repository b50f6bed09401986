"""Start-up stays light: `evals --help` and `evals validate` import neither the openai SDK nor the HTTP
stack nor rich.live (checked in a fresh interpreter), and the benchmark harness still runs (smoke, marked slow)."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

HEAVY = ("openai", "httpx", "httpx2", "rich.live")


@functools.cache
def loaded_after(code: str) -> tuple[str, ...]:
    """The modules a fresh interpreter holds after running `code`; the same probe is run once per process (two
    checks read what validating suites/multi_turn.yaml imports)."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return tuple(out.stdout.split())


def test_help_imports_nothing_heavy() -> None:
    modules = loaded_after("import sys\nsys.argv = ['evals', '--help']\nfrom evals_cli.cli import app\n"
                           "try:\n    app()\nexcept SystemExit:\n    pass")
    assert "evals_cli.cli" in modules
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m == "rich.live"]
    assert "pydantic_settings" not in modules  # the settings model is imported where a knob is read


def test_a_command_with_no_evals_variable_set_does_not_build_the_settings_model() -> None:
    modules = loaded_after("import os\nfor k in [k for k in os.environ if k.startswith('EVALS_')]:\n"
                           "    del os.environ[k]\nimport sys\nsys.argv = ['evals', 'list', 'gates']\n"
                           "from evals_cli.cli import app\ntry:\n    app()\nexcept SystemExit:\n    pass")
    assert "evals_cli.catalog" in modules and "pydantic_settings" not in modules


def test_a_run_start_with_no_evals_variable_set_reads_its_knobs_without_the_settings_model() -> None:
    """Knobs read and checked with only text variables set (keys, models) cost no pydantic-settings import."""
    modules = loaded_after("import os\nfor k in [k for k in os.environ if k.startswith(('EVALS_', 'EVAL_'))]:\n"
                           "    del os.environ[k]\nos.environ['OPENAI_API_KEY'] = 'sk-x'\n"
                           "os.environ['EVAL_JUDGE_MODEL'] = 'judge'\n"
                           "from pathlib import Path\nfrom evals_cli.runner.plan import validate_suite\n"
                           "from evals_cli.settings import check, knob\ncheck()\n"
                           "assert knob('max_field_chars') == 256 * 1024 and knob('debug') is False\n"
                           "assert knob('openai_api_key') == 'sk-x' and knob('agent_model') is None\n"
                           "assert not validate_suite(Path('suites/multi_turn.yaml')).problems")
    assert "evals_cli.runner.plan" in modules and "pydantic_settings" not in modules


def test_validate_imports_nothing_heavy() -> None:
    modules = loaded_after("from pathlib import Path\nfrom evals_cli.runner.plan import validate_suite\n"
                           "assert not validate_suite(Path('suites/multi_turn.yaml')).problems")
    assert "evals_cli.runner.plan" in modules and "jinja2" in modules
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m == "rich.live"]


def test_tools_in_the_shorthand_need_no_json_schema_engine(tmp_path: Path) -> None:
    """A schema evals-cli builds from `{name: description}` is valid by construction: checking it against the
    meta-schema would import jsonschema (and referencing, rpds, attrs) for nothing, at every run's start."""
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\ndataset: data.jsonl\ntarget: {kind: openai_chat, model: m, base_url: 'http://127.0.0.1:9/v1'}\n"
                     "tools:\n  lookup: {description: Look up., parameters: {key: The key, type: what kind}, "
                     "returns: 42}\ngraders:\n  answer: {kind: tool, function: contains}\n")
    modules = loaded_after(f"from pathlib import Path\nfrom evals_cli.runner.plan import validate_suite\n"
                           f"assert not validate_suite(Path({str(suite)!r})).problems")
    assert "evals_cli.runner.plan" in modules
    assert not [m for m in modules if m.split(".")[0] in ("jsonschema", "referencing", "rpds")]


def test_a_suite_of_live_agents_imports_no_sessions_analysis() -> None:
    """A suite naming no recorded-session grader kind imports none of their modules (the suite's unions hold the
    kinds it names: registry.BUILTIN_KINDS); their analysis, detectors and episode reader are imported only when
    one grades."""
    modules = loaded_after("from pathlib import Path\nfrom evals_cli.runner.plan import validate_suite\n"
                           "assert not validate_suite(Path('suites/multi_turn.yaml')).problems")
    assert "evals_cli.runner.plan" in modules and "evals_cli.sessions.graders" not in modules
    assert not [m for m in modules if m.startswith("evals_cli.sessions.")
                and m not in ("evals_cli.sessions.spec", "evals_cli.sessions.suite")]


def test_a_suite_imports_only_the_grader_and_target_kinds_it_names(tmp_path: Path) -> None:
    """Every grader kind module was imported at the first suite load (the judge's among them, about 40 ms of a
    run's start); a suite of `kind: tool` graders now imports the tool kind, the default target's, and what the
    run's own checks need, and `evals list graders` still lists every kind."""
    (tmp_path / "data.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\ndataset: data.jsonl\ntarget: {model: m, base_url: 'http://127.0.0.1:9/v1'}\n"
                     "graders:\n  answer: {kind: tool, function: contains}\n")
    modules = loaded_after(f"from pathlib import Path\nfrom evals_cli.runner.plan import validate_suite\n"
                           f"assert not validate_suite(Path({str(suite)!r})).problems")
    kinds = {m for m in modules if m.startswith(("evals_cli.graders.kinds.", "evals_cli.targets.",
                                                  "evals_cli.sessions.graders"))}
    assert "evals_cli.graders.kinds.tool" in kinds and "evals_cli.targets.openai_chat" in kinds
    assert not kinds & {"evals_cli.graders.kinds.model_judge", "evals_cli.graders.kinds.final_state",
                        "evals_cli.sessions.graders", "evals_cli.targets.python_agent", "evals_cli.targets.traces",
                        "evals_cli.targets.openai_responses"}
    listed = subprocess.run([sys.executable, "-m", "evals_cli", "list", "graders"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    assert "model_judge" in listed and "session_score" in listed and "tool_order" in listed


@pytest.mark.slow  # half a dozen interpreters, one after the other: `make test-slow` runs it
def test_benchmark_harness_smoke() -> None:
    result = subprocess.run([sys.executable, "bench/run.py", "--smoke", "--scenarios", "a,c"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "a c=32" in result.stdout and "replay:" in result.stdout
    assert "wall time, scenario a, c=32" in result.stdout and "replay throughput" in result.stdout


def test_a_replayed_run_of_a_chat_suite_imports_no_openai_sdk(tmp_path: Path) -> None:
    """Replay answers every call from the recording: importing the SDK (every type of every API) was a tenth of a
    replay of 10,000 samples. A plain recorded chat completion is read from its JSON (endpoints/recorded_chat.py)."""
    from tests.helpers import run_cli, write_suite
    from tests.scripted_server import ScriptedServer, agent_script, call, text

    server = ScriptedServer(agent_script({"host": [call("read_file", {"path": ".env"}), text("localhost")]})).start()
    suite = write_suite(tmp_path, [{"id": "host", "input": "db host?", "ground_truth": "localhost"}],
                        base_url=server.url)
    recording = tmp_path / "rec.jsonl"
    try:
        assert run_cli("run", str(suite), "-o", str(tmp_path / "live"), "--record", str(recording)).returncode == 0
    finally:
        server.stop()
    modules = loaded_after(f"import sys\nsys.argv = ['evals', 'run', {str(suite)!r}, '-o', {str(tmp_path / 'r')!r}, "
                           f"'-q', '--replay', {str(recording)!r}]\nfrom evals_cli.cli import app\n"
                           "try:\n    app()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code")
    assert "evals_cli.endpoints.replay" in modules
    assert not [m for m in modules if m.split(".")[0] == "openai"]
    assert not [m for m in modules if m.startswith("evals_cli.sessions")]  # a suite of live agents: none of it
    assert "regex" not in modules  # no pattern to match: safe_regex imports `regex` at the first one compiled
    assert "rich" not in modules  # a quiet run prints its verdict without Rich (display/plain.py)


def _spied_run(tmp_path: Path, spy: str, extra: list[str] | None = None) -> str:
    """The last line a real `evals run -q` process printed, of a one-row suite against a scripted server, with `spy`
    (code seeing `gc`, `sys` and evals_cli.shutdown as `s`) run before the command starts."""
    from tests.helpers import write_suite
    from tests.scripted_server import ScriptedServer, agent_script, text

    server = ScriptedServer(agent_script({"host": [text("localhost")]})).start()
    suite = write_suite(tmp_path, [{"id": "host", "input": "db host?", "ground_truth": "localhost"}],
                        base_url=server.url)
    code = ("import gc, sys, runpy\nimport evals_cli.shutdown as s\n" + spy +
            f"sys.argv = ['evals', 'run', {str(suite)!r}, '-o', {str(tmp_path / 'out')!r}, '-q', *{extra or []!r}]\n"
            "runpy.run_module('evals_cli', run_name='__main__')")
    try:
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    finally:
        server.stop()
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("models", [[], ["--model", "m1", "--model", "m2"]], ids=["one-model", "several-models"])
def test_a_live_run_settles_the_sdk_with_the_rest_and_collects_rarely_until_then(tmp_path: Path,
                                                                                  models: list[str]) -> None:
    """The SDK was imported at the first model call, after the heap was settled (gc.freeze), so every full
    collection walked its objects again; and start-up ran some 150 young and two full collections at the default
    thresholds (shutdown.py). Now: collections held until settle_heap, the SDK imported before it, the default
    thresholds back for the samples; with several models too (their path settled before importing it)."""
    spy = ("seen = []\nsettle = s.settle_heap\n"
           "def spy():\n    seen.append(('openai' in sys.modules, gc.get_threshold()))\n    settle()\n"
           "    seen.append(gc.get_threshold())\n"
           "s.settle_heap = spy\ndefault = gc.get_threshold()\n"
           "import atexit\natexit.register(lambda: print(repr((seen, default, gc.get_freeze_count() > 0))))\n")
    import ast

    (before, after), default, frozen = ast.literal_eval(_spied_run(tmp_path, spy, models))
    assert before[0] is True and before[1][0] >= 50_000  # the SDK in, collections held
    assert after == default and frozen  # the defaults back for the samples; the start-up heap frozen


def test_the_run_loop_imports_the_calibration_maths_only_for_a_suite_with_labels() -> None:
    modules = loaded_after("import evals_cli.runner.execution")
    assert "evals_cli.runner.execution" in modules
    assert not [m for m in modules if m in ("evals_cli.calibration.calibrate", "evals_cli.calibration.items")]


def _threshold_when_typer_is_imported(start: str) -> int:
    """The gen-0 collection threshold at the moment the command's first heavy import (typer) begins."""
    code = ("import gc, sys\nseen = []\nclass Spy:\n    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'typer' and not seen:\n            seen.append(gc.get_threshold()[0])\n"
            "        return None\nsys.meta_path.insert(0, Spy())\nimport atexit\natexit.register(lambda: print(seen))\n"
            f"sys.argv = ['evals', '--version']\n{start}")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    seen = out.stdout.strip().splitlines()[-1]
    assert seen.startswith("[") and seen != "[]", out.stdout
    return int(seen.strip("[]"))


def test_the_installed_evals_script_holds_collections_before_the_command_imports() -> None:
    """The `evals` script called `evals_cli.cli:main`, so typer, rich and the rest were imported (their objects
    walked by some hundred young collections) before `main` held them; only `python -m evals_cli` held them
    first. Both now start in `evals_cli.__main__`."""
    import tomllib

    script = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["evals"]
    module, _, function = script.partition(":")
    assert _threshold_when_typer_is_imported(f"from {module} import {function}\n{function}()") >= 50_000
    assert _threshold_when_typer_is_imported("import runpy\nrunpy.run_module('evals_cli', run_name='__main__')") \
        >= 50_000



def _commands_built(*argv: str) -> tuple[int, int]:
    """How many commands Typer built to run `evals ARGV`, and the exit code."""
    code = ("import sys, typer.main as tm\nbuilt = []\nbuild = tm.get_command_from_info\n"
            "def spy(*a, **k):\n    built.append(1)\n    return build(*a, **k)\ntm.get_command_from_info = spy\n"
            f"sys.argv = ['evals', *{list(argv)!r}]\nfrom evals_cli.cli import app\n"
            "try:\n    app()\nexcept SystemExit as exc:\n    print(len(built), exc.code or 0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    built, exit_code = out.stdout.split()[-2:]
    return int(built), int(exit_code)


def test_a_command_named_on_the_command_line_is_the_only_one_built() -> None:
    """Typer built all twelve commands' parameters to run one (about 7 ms of a run's start); the help and a
    misspelt command still see them all."""
    assert _commands_built("validate", "suites/multi_turn.yaml") == (1, 0)
    every, code = _commands_built("--help")
    assert every >= 12 and code == 0
    assert _commands_built("validat", "suites/multi_turn.yaml") == (every, 2)  # "Did you mean 'validate'?"


def test_a_live_run_starts_without_a_collection(tmp_path: Path) -> None:
    """A young collection walks every object made since the last: at the held threshold of 50,000 a run's start
    (some 250,000 objects: the SDK's classes, ours, the suite) ran five of them, some 20 ms that freed nothing.
    None runs now between the command's start and the settled heap."""
    spy = ("runs = []\nsettled = []\n"
           "gc.callbacks.append(lambda phase, info: runs.append(info['generation']) "
           "if phase == 'start' and not settled and gc.get_threshold()[0] > 10_000 else None)\n"  # held
           "settle = s.settle_heap\ndef spy():\n    settled.append(len(runs))\n    settle()\ns.settle_heap = spy\n"
           "import atexit\natexit.register(lambda: print(settled))\n")
    assert _spied_run(tmp_path, spy) == "[0]"
