"""One suite across several models (`--model a --model b`, `target.models`): a run per model in its own
subfolder, one side-by-side table, the combined exit code (`--gate all|any`), `evals report` (text and HTML)
and `evals compare` on the folders, against the scripted loopback server where each model answers its own way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.errors import ConfigError
from evals_cli.runner.models_matrix import MATRIX_NAME, combined_exit, folder_names
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, is_judge, last_user, text

ROWS = [
    {"id": "capital", "input": "capital of France?", "ground_truth": "Paris"},
    {"id": "sum", "input": "math: 2+2?", "ground_truth": "4"},
    {"id": "color", "input": "sky color?", "ground_truth": "blue"},
]
GRADERS = {"answer": {"kind": "tool", "function": "contains"}}
RIGHT = {"capital": "Paris", "math": "4", "sky": "blue"}
# "good" answers every sample right; "half" gets only the capital; "down" is an endpoint that refuses every call
MODELS = ("good", "half", "down")


def answer(model: str, user: str) -> Any:
    if model == "down":
        return Reply({"error": {"message": "model down is not served here"}}, status=404)
    for key, right in RIGHT.items():
        if key in user:
            return text(right if model == "good" or key == "capital" else "no idea")
    return Reply({"error": {"message": "unscripted"}}, status=400)


def script(path: str, body: dict[str, Any]) -> Any:
    if is_judge(body):
        return Reply({"error": {"message": "no judge here"}}, status=500)
    return answer(str(body.get("model")), last_user(body))


@pytest.fixture
def models_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer(script).start()
    yield server
    server.stop()


def _suite(tmp: Path, url: str, **overrides: Any) -> Path:
    return write_suite(tmp, ROWS, base_url=url, graders=GRADERS,
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.9},
                       **overrides)


def _models(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--model", name)]


def test_three_models_side_by_side(tmp_path: Path, models_server: ScriptedServer) -> None:
    suite = _suite(tmp_path, models_server.url)
    out = tmp_path / "run"
    result = run_cli("run", str(suite), "-o", str(out), *_models(*MODELS))
    # "down" answered nothing: no verdict can say every model passed, so the run is incomplete
    assert result.returncode == 3, result.stdout + result.stderr
    matrix = json.loads((out / MATRIX_NAME).read_text())
    assert [(m["model"], m["folder"], m["exit_code"]) for m in matrix["models"]] == [
        ("good", "good", 0), ("half", "half", 1), ("down", "down", 3)]
    assert matrix["exit_code"] == 3 and matrix["gate"]["passed"] is None
    for name in MODELS:  # each an ordinary run folder
        assert {p.name for p in (out / name).iterdir()} >= {"results.jsonl", "summary.json", "run.json"}
    good = {r["sample_id"]: r["passed"] for r in read_jsonl(out / "good" / "results.jsonl")}
    half = {r["sample_id"]: r["passed"] for r in read_jsonl(out / "half" / "results.jsonl")}
    assert good == {"capital": True, "sum": True, "color": True}
    assert half == {"capital": True, "sum": False, "color": False}
    assert all(r["error"] for r in read_jsonl(out / "down" / "results.jsonl"))
    # each model's requests carried its own name, and only its own
    sent = {r["body"]["model"] for r in models_server.requests}
    assert sent == set(MODELS)
    # the side-by-side table: a column per model, rows of numbers, then which models passed each sample
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "good" in line and "half" in line and "down" in line)
    assert header.index("good") < header.index("half") < header.index("down")
    rate = next(line for line in lines if line.strip().startswith("pass rate"))
    assert "100%" in rate and "33%" in rate
    capital = next(line for line in lines if line.strip().startswith("capital"))
    assert "2/3" in capital or "good, half" in capital
    assert "error" in result.stderr.lower() and "down" in result.stderr


def test_gate_any_passes_when_one_model_passes(tmp_path: Path, models_server: ScriptedServer) -> None:
    suite = _suite(tmp_path, models_server.url)
    page = tmp_path / "page.html"
    both = run_cli("run", str(suite), "-o", str(tmp_path / "all"), *_models("good", "half"), "--export", f"html={page}")
    assert both.returncode == 1, both.stdout + both.stderr  # half failed its gate
    assert "Gate FAILED: 1 of 2 models passed" in page.read_text()
    any_ = run_cli("run", str(suite), "-o", str(tmp_path / "any"), *_models("good", "half"), "--gate", "any")
    assert any_.returncode == 0, any_.stdout + any_.stderr
    none = run_cli("run", str(suite), "-o", str(tmp_path / "none"), *_models("half", "down"), "--gate", "any")
    assert none.returncode == 3  # nobody passed, and one model could not be judged at all


def test_models_in_yaml_and_cli_replaces_them(tmp_path: Path, models_server: ScriptedServer) -> None:
    suite = _suite(tmp_path, models_server.url)
    data = yaml.safe_load(suite.read_text())
    del data["target"]["model"]
    data["target"]["models"] = ["good", "half"]
    suite.write_text(yaml.safe_dump(data))
    listed = run_cli("run", str(suite), "-o", str(tmp_path / "yaml"))
    assert listed.returncode == 1, listed.stdout + listed.stderr
    assert [m["model"] for m in json.loads((tmp_path / "yaml" / MATRIX_NAME).read_text())["models"]] == ["good", "half"]
    one = run_cli("run", str(suite), "-o", str(tmp_path / "one"), "--model", "good")
    assert one.returncode == 0, one.stdout + one.stderr  # --model replaces the list: a plain run, as before
    assert (tmp_path / "one" / "results.jsonl").is_file() and not (tmp_path / "one" / MATRIX_NAME).exists()


def test_bad_model_lists_are_config_errors(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1")
    data = yaml.safe_load(suite.read_text())
    data["target"]["models"] = ["a", "b"]  # and model: scripted
    suite.write_text(yaml.safe_dump(data))
    both = run_cli("run", str(suite))
    assert both.returncode == 2 and "not both" in both.stderr and "suite.yaml" in both.stderr
    del data["target"]["model"]
    for models, words in ((["a", "a"], "listed twice"), ([], "empty list"), (["a", " "], "empty model name")):
        data["target"]["models"] = models
        suite.write_text(yaml.safe_dump(data))
        bad = run_cli("run", str(suite))
        assert bad.returncode == 2 and words in bad.stderr, bad.stderr
    twice = run_cli("run", str(_suite(tmp_path, "http://127.0.0.1:9/v1")), *_models("a", "a"))
    assert twice.returncode == 2 and "given twice" in twice.stderr
    from evals_cli import RunOptions

    with pytest.raises(ConfigError, match="not both"):
        RunOptions(model="a", models=["b", "c"])


def test_folder_names_are_safe_and_distinct() -> None:
    names = folder_names(["openai/gpt-4o", "openai:gpt-4o", "GPT", "gpt", "..", "matrix.json"])
    assert names["openai/gpt-4o"] == "openai-gpt-4o" and names["openai:gpt-4o"] == "openai-gpt-4o-2"
    assert names["GPT"] == "GPT" and names["gpt"] == "gpt-2" and names[".."] == "model"
    assert names["matrix.json"] == "matrix.json-2"
    assert len({n.casefold() for n in names.values()}) == len(names)


def test_combined_exit_codes() -> None:
    assert combined_exit([0, 0], "all") == 0 and combined_exit([0, 1], "all") == 1
    assert combined_exit([0, 3], "all") == 3 and combined_exit([0, 3], "any") == 0
    assert combined_exit([1, 1], "any") == 1 and combined_exit([1, 3], "any") == 3
    assert combined_exit([0, 130], "any") == 130


def test_report_text_and_html_and_compare_of_two_models(tmp_path: Path, models_server: ScriptedServer) -> None:
    suite = _suite(tmp_path, models_server.url)
    out = tmp_path / "run"
    assert run_cli("run", str(suite), "-o", str(out), *_models(*MODELS)).returncode == 3
    report = run_cli("report", str(out), "--html", str(tmp_path / "matrix.html"))
    assert report.returncode == 0, report.stderr
    assert "3 models side by side" in report.stdout and "per sample: which models passed" in report.stdout
    assert "down:" in report.stdout  # why the model has no verdict
    page = (tmp_path / "matrix.html").read_text()
    assert all(f"<th>{name}</th>" in page for name in MODELS) and "passed by" in page
    assert "Gate not evaluated: 1 of 3 models passed" in page
    # each model's folder is an ordinary run: report and compare take it as it is
    single = run_cli("report", str(out / "half"))
    assert single.returncode == 0 and "capital" in single.stdout
    compared = run_cli("compare", str(out / "good"), str(out / "half"), "--json")
    assert compared.returncode == 0, compared.stderr
    comparison = json.loads(compared.stdout)
    assert comparison["graders"][0]["mean_a"] == 1.0 and abs(comparison["graders"][0]["mean_b"] - 1 / 3) < 1e-9
    top = run_cli("compare", str(out), str(out / "good"))
    assert top.returncode == 2 and "compare two of its model folders" in top.stderr


def test_record_then_replay_offline_gives_the_same_matrix(tmp_path: Path) -> None:
    server = ScriptedServer(script).start()
    suite = _suite(tmp_path, server.url)
    recording = tmp_path / "rec.jsonl"
    try:
        live = run_cli("run", str(suite), "-o", str(tmp_path / "live"), *_models(*MODELS), "--record", str(recording))
    finally:
        server.stop()
    assert live.returncode == 3
    entries = read_jsonl(recording)  # one file holds every model's calls, each line whole
    assert {e["request"]["model"] for e in entries} == set(MODELS) and len(entries) == len(server.requests)
    replay = run_cli("run", str(suite), "-o", str(tmp_path / "replay"), *_models(*MODELS), "--replay", str(recording))
    assert replay.returncode == 3, replay.stdout + replay.stderr
    for name in ("good", "half"):  # down stops at its first refusal: how many samples started before is timing
        live_rows = {r["sample_id"]: (r["passed"], r["score"], bool(r["error"]))
                     for r in read_jsonl(tmp_path / "live" / name / "results.jsonl")}
        replay_rows = {r["sample_id"]: (r["passed"], r["score"], bool(r["error"]))
                       for r in read_jsonl(tmp_path / "replay" / name / "results.jsonl")}
        assert live_rows == replay_rows, name
    down = read_jsonl(tmp_path / "replay" / "down" / "results.jsonl")
    assert down and all(r["error"]["category"] == "endpoint" or "404" in r["error"]["message"] for r in down)
    codes = [(m["model"], m["exit_code"]) for m in json.loads((tmp_path / "replay" / MATRIX_NAME).read_text())["models"]]
    assert codes == [("good", 0), ("half", 1), ("down", 3)]
    other = run_cli("run", str(suite), "-o", str(tmp_path / "miss"), *_models("good", "other"), "--replay",
                    str(recording))
    assert other.returncode == 3  # a model never recorded: every sample says so, none is scored
    missed = read_jsonl(tmp_path / "miss" / "other" / "results.jsonl")
    assert missed and all("no recorded response" in r["error"]["message"] for r in missed)


def test_resume_continues_every_model(tmp_path: Path) -> None:
    fixed = {"down": False}

    def flaky(path: str, body: dict[str, Any]) -> Any:
        model = str(body.get("model"))
        return answer("good" if model == "down" and fixed["down"] else model, last_user(body))

    server = ScriptedServer(flaky).start()
    try:
        suite = _suite(tmp_path, server.url)
        out = tmp_path / "run"
        assert run_cli("run", str(suite), "-o", str(out), *_models(*MODELS)).returncode == 3
        half = out / "half" / "results.jsonl"  # as if half had been killed after one sample: capital
        [kept] = [line for line in half.read_text().splitlines(keepends=True)
                  if json.loads(line)["sample_id"] == "capital"]  # lines come in finishing order, not row order
        half.write_text(kept)
        (out / "half" / "summary.json").unlink()
        fixed["down"] = True
        server.requests.clear()
        resumed = run_cli("run", str(suite), "--resume", str(out), "--retry-errors")
        assert resumed.returncode == 1, resumed.stdout + resumed.stderr  # half fails its gate; down now passes
        sent = [(r["body"]["model"], last_user(r["body"])) for r in server.requests]
        assert not [m for m, _ in sent if m == "good"]  # nothing of good ran again
        assert sorted(u for m, u in sent if m == "half") == ["math: 2+2?", "sky color?"]
        assert len([m for m, _ in sent if m == "down"]) == 3
        matrix = json.loads((out / MATRIX_NAME).read_text())
        assert [m["exit_code"] for m in matrix["models"]] == [0, 1, 0]
        assert len(read_jsonl(out / "half" / "results.jsonl")) == 3
        wrong = run_cli("run", str(suite), "--resume", str(out), "--model", "good")
        assert wrong.returncode == 2 and "continues every one of them" in wrong.stderr
    finally:
        server.stop()


def test_shards_merge_model_by_model(tmp_path: Path, models_server: ScriptedServer) -> None:
    suite = _suite(tmp_path, models_server.url)
    for k in (1, 2):
        done = run_cli("run", str(suite), "-o", str(tmp_path / f"s{k}"), *_models("good", "half"), "--shard", f"{k}/2")
        assert done.returncode in (0, 1, 3), done.stderr
    merged = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(tmp_path / "m"))
    assert merged.returncode == 1, merged.stdout + merged.stderr
    for name in ("good", "half"):
        assert sorted(r["sample_id"] for r in read_jsonl(tmp_path / "m" / name / "results.jsonl")) == [
            "capital", "color", "sum"]
    matrix = json.loads((tmp_path / "m" / MATRIX_NAME).read_text())
    assert [(m["model"], m["exit_code"]) for m in matrix["models"]] == [("good", 0), ("half", 1)]
    assert "2 models side by side" in merged.stdout
    mixed = run_cli("run", str(suite), "-o", str(tmp_path / "s3"), *_models("good", "down"), "--shard", "1/2")
    assert mixed.returncode == 3
    refused = run_cli("merge", str(tmp_path / "s1"), str(tmp_path / "s3"), "-o", str(tmp_path / "m2"))
    assert refused.returncode == 2 and "merge only shards of one run" in refused.stderr


def test_repeats_and_the_python_api(tmp_path: Path, models_server: ScriptedServer) -> None:
    import evals_cli
    from evals_cli import ModelsOutcome, RunOptions

    suite = _suite(tmp_path, models_server.url)
    outcome = evals_cli.run(suite, RunOptions(models=["good", "half"], repeats=2, output=tmp_path / "api",
                                              gate="any"))
    assert isinstance(outcome, ModelsOutcome)
    assert outcome.exit_code == 0 and outcome.summary.gate is not None and outcome.summary.gate.passed is True
    assert {m: o.exit_code for m, o in outcome.outcomes.items()} == {"good": 0, "half": 1}
    assert outcome.outcomes["half"].summary.reliability is not None
    assert outcome.outcomes["half"].summary.reliability.repeats == 2
    assert len(read_jsonl(outcome.folders["good"] / "results.jsonl")) == 6
    report = run_cli("report", str(tmp_path / "api"))
    capital = next(line for line in report.stdout.splitlines() if line.strip().startswith("sum"))
    assert "2/2" in capital and "0/2" in capital  # good passed both repeats, half neither


def test_samples_in_flight_across_models_stay_within_concurrency(tmp_path: Path) -> None:
    import threading
    import time

    lock = threading.Lock()
    now = {"in": 0, "max": 0}

    def slow(path: str, body: dict[str, Any]) -> Any:
        with lock:
            now["in"] += 1
            now["max"] = max(now["max"], now["in"])
        time.sleep(0.03)
        with lock:
            now["in"] -= 1
        return answer(str(body.get("model")), last_user(body))

    server = ScriptedServer(slow).start()
    try:
        suite = _suite(tmp_path, server.url, concurrency=2)
        done = run_cli("run", str(suite), "-o", str(tmp_path / "run"), *_models("good", "half", "good2"))
    finally:
        server.stop()
    assert done.returncode in (1, 3)
    assert now["max"] == 2  # two in flight at once, never more, over three models


@pytest.mark.slow
def test_sigint_stops_every_model_and_resume_finishes(tmp_path: Path) -> None:
    """A real subprocess: one Ctrl-C reaches every model's run (one signal handler for all), each keeps what
    finished, matrix.json says interrupted, and --resume on the top folder finishes every model."""
    import signal

    from tests.helpers import start_run, wait_for_lines

    def slow(path: str, body: dict[str, Any]) -> Any:
        reply = answer(str(body.get("model")), last_user(body))
        return Reply(reply, delay=0.3) if isinstance(reply, dict) else reply

    rows = [{"id": f"s{i}", "input": f"capital of France? {i}", "ground_truth": "Paris"} for i in range(12)]
    server = ScriptedServer(slow).start()
    try:
        suite = write_suite(tmp_path, rows, base_url=server.url, graders=GRADERS, concurrency=2)
        out = tmp_path / "run"
        proc = start_run(suite, out, *_models("good", "half"), "--grace", "5")
        wait_for_lines(out / "good" / "results.jsonl", 1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr and f"--resume {out}" in stderr
        matrix = json.loads((out / MATRIX_NAME).read_text())
        assert matrix["status"] == "interrupted" and matrix["exit_code"] == 130
        kept = sum(len(read_jsonl(out / m / "results.jsonl")) for m in ("good", "half")
                   if (out / m / "results.jsonl").exists())
        assert 1 <= kept < 24
        server.script = script
        done = run_cli("run", str(suite), "--resume", str(out))
        assert done.returncode == 0, done.stdout + done.stderr  # every sample asks the capital: both pass
        for m in ("good", "half"):
            assert sorted(r["sample_id"] for r in read_jsonl(out / m / "results.jsonl")) == sorted(r["id"] for r in rows)
    finally:
        server.stop()


def test_a_judge_that_is_each_model_itself_is_said(tmp_path: Path, models_server: ScriptedServer) -> None:
    graders = {**GRADERS, "judge": {"kind": "model_judge", "prompt": "Grade {{ submission }}."}}
    suite = write_suite(tmp_path, ROWS[:1], base_url=models_server.url, graders=graders)
    own = run_cli("run", str(suite), "-o", str(tmp_path / "own"), *_models("good", "half"), "--no-judge")
    assert "judge differs" not in own.stderr
    from evals_cli.run_options import RunOptions
    from evals_cli.runner.models_matrix import PreparedModels
    from evals_cli.runner.run import prepare

    prepared = prepare(suite, RunOptions(models=["good", "half"]))
    assert isinstance(prepared, PreparedModels) and "each model judges itself" in prepared.warnings[0]
    fixed = prepare(suite, RunOptions(models=["good", "half"], judge_model="referee"))
    assert isinstance(fixed, PreparedModels) and fixed.warnings == []


def test_options_several_models_refuse(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1")
    gate = run_cli("run", str(suite), *_models("a", "b"), "--gate", "most")
    assert gate.returncode == 2 and "--gate most: choose all" in gate.stderr
    export = run_cli("run", str(suite), "-o", str(tmp_path / "x"), *_models("a", "b"), "--junit", str(tmp_path / "j.xml"))
    assert export.returncode == 2 and "--export junit" in export.stderr and not (tmp_path / "x").exists()
    rerun = run_cli("run", str(suite), *_models("a", "b"), "--rerun-failed", str(tmp_path))
    assert rerun.returncode == 2 and "--rerun-failed with several models" in rerun.stderr
    helped = run_cli("run", "--help")
    assert "--gate" in helped.stdout and "repeat it to run the whole suite once per model" in helped.stdout


def test_a_target_that_calls_no_model_refuses_several(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text("def agent(messages, tools):\n    return 'Paris'\n")
    suite = write_suite(tmp_path, ROWS, graders=GRADERS)
    data = yaml.safe_load(suite.read_text())
    data["target"] = {"kind": "python", "callable": "agent.py:agent"}
    suite.write_text(yaml.safe_dump(data))
    refused = run_cli("run", str(suite), "-o", str(tmp_path / "x"), *_models("a", "b"))
    assert refused.returncode == 2 and "calls no model" in refused.stderr and not (tmp_path / "x").exists()


def test_validate_accepts_models_and_the_judge_refuses_them(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1")
    data = yaml.safe_load(suite.read_text())
    del data["target"]["model"]
    data["target"]["models"] = ["a", "b"]
    suite.write_text(yaml.safe_dump(data))
    assert run_cli("validate", str(suite)).returncode == 0
    data["judge"] = {"models": ["x", "y"]}
    suite.write_text(yaml.safe_dump(data))
    bad = run_cli("validate", str(suite))
    assert bad.returncode == 2 and "this endpoint is one model" in bad.stderr


def test_resume_continues_with_the_model_and_repeats_the_run_started_with(tmp_path: Path,
                                                                         models_server: ScriptedServer) -> None:
    """--resume once resolved the model afresh (the suite's 'scripted', which knows nothing) and the suite's
    repeats (1): another model's results were filed under 'good', and the missing second repeats never ran."""
    suite = _suite(tmp_path, models_server.url)
    out = tmp_path / "r"
    assert run_cli("run", str(suite), "-o", str(out), "--model", "good", "-r", "2").returncode == 0
    results = out / "results.jsonl"
    kept = [line for line in results.read_text().splitlines() if json.loads(line)["repeat"] == 0][:2]
    results.write_text("".join(line + "\n" for line in kept))  # 2 of 6 sample runs finished
    resumed = run_cli("run", str(suite), "--resume", str(out))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lines = read_jsonl(results)
    assert sorted((r["sample_id"], r["repeat"]) for r in lines) == sorted(
        (row["id"], k) for row in ROWS for k in (0, 1))
    assert all(r["passed"] for r in lines)  # every one answered by "good"
    other = run_cli("run", str(suite), "--resume", str(out), "--model", "half")
    assert other.returncode == 2 and "that run's agent model is good, not half" in other.stderr


def test_merge_refuses_shards_of_different_models(tmp_path: Path, models_server: ScriptedServer) -> None:
    suite = _suite(tmp_path, models_server.url)
    one, two = tmp_path / "s1", tmp_path / "s2"
    run_cli("run", str(suite), "-o", str(one), "--shard", "1/2", "--model", "good")
    run_cli("run", str(suite), "-o", str(two), "--shard", "2/2", "--model", "half")
    merged = run_cli("merge", str(one), str(two), "-o", str(tmp_path / "m"))
    assert merged.returncode == 2 and "a run of the model half, not good" in merged.stderr


def test_an_empty_model_name_is_refused_not_replaced_by_the_suites(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "http://127.0.0.1:9/v1")
    result = run_cli("run", str(suite), "--model", "", "-o", str(tmp_path / "o"))
    assert result.returncode == 2 and "--model: an empty model name" in result.stderr
