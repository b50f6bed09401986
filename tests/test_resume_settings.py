"""`--resume` continues a run with the options it started with (stored in its run.json) or refuses, exit 2,
naming each option that differs; the printed resume hint, pasted verbatim, continues the same run. Also:
`--rerun-failed` of a run that never finished, and `--replay-user` from a partial run. Every run goes through
the real CLI against the scripted server."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import Reply, ScriptedServer, is_judge, last_user, text

JUDGED = {"answer": {"kind": "tool", "function": "contains"},
          "quality": {"kind": "model_judge", "prompt": "{{ submission }}"}}
JUDGE_OK = text('{"reason": "fine", "score": 10}')
UNAUTHORIZED = Reply({"error": {"message": "bad key"}}, status=401)


def rows_30() -> list[dict[str, Any]]:
    """The issue's dataset: 10 `good-*` samples among 30."""
    good = [{"id": f"good-{i:02d}", "input": f"good question {i}", "ground_truth": "fine"} for i in range(10)]
    other = [{"id": f"other-{i:02d}", "input": f"other question {i}", "ground_truth": "fine"} for i in range(20)]
    return good + other


class Desk:
    """An endpoint that answers "fine" (and judges 10/10), except that `refuse` user messages get a 401 (a fatal
    error: the run stops there, unfinished)."""

    def __init__(self) -> None:
        self.refuse: set[str] = set()

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        if is_judge(body):
            return JUDGE_OK
        if last_user(body) in self.refuse:
            return UNAUTHORIZED
        return text("fine")


@pytest.fixture
def other_server() -> Iterator[ScriptedServer]:
    """A second endpoint: the one the suite names, while the run was started with --base-url the first."""
    srv = ScriptedServer(Desk()).start()
    yield srv
    srv.stop()


def hint(stderr: str, what: str = "to finish the run") -> list[str]:
    """The command a run printed to finish it, as a shell would split it (without the leading `evals`)."""
    line = next(line for line in stderr.splitlines() if line.startswith(what + ":"))
    words = shlex.split(line.split(":", 1)[1], comments=True)  # as a shell reads it: a `# ...` is a comment
    assert words[0] == "evals", line
    return words[1:]


def test_the_printed_hint_of_a_filtered_no_judge_run_continues_that_run(
        server: ScriptedServer, other_server: ScriptedServer, tmp_path: Path) -> None:
    """Issue 24 item 4: started with --sample-id 'good*' --no-judge --base-url X, the run stopped after 4 of 10
    samples; its hint, pasted, ran all 30 samples with the judge against the suite's endpoint and merged them
    into one verdict (exit 1). It must run the 6 missing good-* samples, without the judge, against X."""
    desk = Desk()
    desk.refuse = {"good question 4"}
    server.script = desk
    suite = write_suite(tmp_path, rows_30(), base_url=other_server.url, graders=JUDGED, concurrency=1)
    out = tmp_path / "out"
    first = run_cli("run", str(suite), "-o", str(out), "--sample-id", "good*", "--no-judge", "--base-url",
                    server.url)
    assert first.returncode == 3, first.stdout + first.stderr  # the 401 stopped it: unfinished, no verdict
    assert len(read_jsonl(out / "results.jsonl")) == 5
    desk.refuse = set()
    server.requests.clear()
    resumed = run_cli(*hint(first.stderr))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lines = read_jsonl(out / "results.jsonl")
    assert sorted(r["sample_id"] for r in lines) == [f"good-{i:02d}" for i in range(10)]
    assert all(set(r["grades"]) <= {"answer"} for r in lines)  # no judge grade: the run is --no-judge
    assert other_server.requests == []  # not one call to the suite's endpoint
    assert len(server.requests) == 5 and not any(is_judge(r["body"]) for r in server.requests)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == 10 and summary["coverage"]["selected"] == 10


def killed(out: Path, keep: int) -> None:
    """Leave `out` as `kill -9` would after `keep` results: the first lines of its results, no summary.json."""
    results = out / "results.jsonl"
    results.write_text("".join(results.read_text().splitlines(keepends=True)[:keep]))
    (out / "summary.json").unlink()


def rows_6() -> list[dict[str, Any]]:
    return [{"id": f"s{i}", "input": f"question {i}", "ground_truth": "fine", "tags": ["t"] if i < 5 else []}
            for i in range(6)]


STARTED = ["--sample-id", "s*", "-n", "4", "--tag", "t", "--judge-model", "judge-a", "--max-error-rate", "0.5"]


@pytest.mark.parametrize(("given", "named"), [
    (["--sample-id", "x*"], "--sample-id 'x*' is not what that run started with (--sample-id 's*')"),
    (["-n", "2"], "-n/--max-samples 2 is not what that run started with (-n/--max-samples 4)"),
    (["--tag", "u"], "--tag u is not what that run started with (--tag t)"),
    (["--shard", "1/2"], "--shard 1/2 is not what that run started with (without --shard)"),
    (["--no-judge"], "--no-judge: that run started with the judge on"),
    (["--base-url", "http://127.0.0.1:9/v1"], "--base-url http://127.0.0.1:9/v1 is not what that run started with"),
    (["--model", "other"], "that run's agent model is scripted, not other"),
    (["--judge-model", "judge-b"], "--judge-model judge-b is not what that run started with (--judge-model judge-a)"),
    (["--judge-base-url", "http://127.0.0.1:9/v1"], "--judge-base-url http://127.0.0.1:9/v1 is not what that run "
                                                    "started with (without --judge-base-url)"),
    (["--repeats", "2"], "--repeats 2 is not what that run started with (--repeats 1)"),
    (["--max-error-rate", "0.1"], "--max-error-rate 0.1 is not what that run started with (--max-error-rate 0.5)"),
    (["--target", "TARGET"], "--target TARGET is not what that run started with (without --target)"),
    (["--replay", "RECORDING"], "--replay RECORDING is not what that run started with (without --replay)"),
    (["--replay-user", "OUT"], "--replay-user OUT is not what that run started with (without --replay-user)"),
])
def test_a_resume_that_gives_another_value_of_an_option_is_refused_naming_it(
        server: ScriptedServer, tmp_path: Path, given: list[str], named: str) -> None:
    server.script = Desk()
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out), *STARTED).returncode == 0
    killed(out, 2)
    (tmp_path / "target.yaml").write_text(f"kind: openai_chat\nbase_url: {server.url}\nmodel: scripted\n")
    (tmp_path / "calls.jsonl").write_text("")
    places = {"TARGET": str(tmp_path / "target.yaml"), "RECORDING": str(tmp_path / "calls.jsonl"), "OUT": str(out)}
    before = (out / "results.jsonl").read_text()
    server.requests.clear()
    resumed = run_cli("run", str(suite), "--resume", str(out), *[places.get(word, word) for word in given])
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    for word, place in places.items():
        named = named.replace(word, place)
    assert named in resumed.stderr and "Traceback" not in resumed.stderr
    assert server.requests == [] and (out / "results.jsonl").read_text() == before  # nothing ran, nothing changed


def test_every_option_that_differs_is_named(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = Desk()
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out), *STARTED).returncode == 0
    resumed = run_cli("run", str(suite), "--resume", str(out), "--sample-id", "s1", "--no-judge", "-r", "3")
    assert resumed.returncode == 2
    assert "invalid input (3 problems)" in resumed.stderr
    for flag in ("--sample-id s1", "--no-judge", "--repeats 3"):
        assert flag in resumed.stderr


def test_options_not_given_are_taken_from_the_run_not_from_the_defaults(server: ScriptedServer,
                                                                        tmp_path: Path) -> None:
    """-n, --tag, --repeats, --judge-model and --max-error-rate of the run, not the suite's or the defaults."""
    server.script = Desk()
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out), *STARTED, "-r", "2").returncode == 0
    killed(out, 3)
    server.requests.clear()
    resumed = run_cli("run", str(suite), "--resume", str(out))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    lines = read_jsonl(out / "results.jsonl")
    assert sorted((r["sample_id"], r["repeat"]) for r in lines) == [(f"s{i}", k) for i in range(4) for k in (0, 1)]
    judged = [r["body"]["model"] for r in server.requests if is_judge(r["body"])]
    assert judged and set(judged) == {"judge-a"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total"] == 8 and summary["coverage"]["selected"] == 4


def test_a_judge_or_agent_endpoint_that_now_resolves_elsewhere_is_refused(
        server: ScriptedServer, other_server: ScriptedServer, tmp_path: Path) -> None:
    """Not an option: the suite's URL and EVAL_JUDGE_MODEL are read afresh on resume; what they resolved to when the
    run started is in run.json, and results of another endpoint are not merged in."""
    server.script = Desk()
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out), env={"EVAL_JUDGE_MODEL": "judge-a"}).returncode == 0
    killed(out, 2)
    judge = run_cli("run", str(suite), "--resume", str(out), env={"EVAL_JUDGE_MODEL": "judge-b"})
    assert judge.returncode == 2, judge.stdout + judge.stderr
    assert f"the judge of quality is judge-b at {server.url}, but that run started with judge-a at {server.url}" \
        in judge.stderr
    suite.write_text(suite.read_text().replace(server.url, other_server.url))  # not in the suite's fingerprint
    agent = run_cli("run", str(suite), "--resume", str(out), env={"EVAL_JUDGE_MODEL": "judge-a"})
    assert agent.returncode == 2
    assert f"the agent is scripted at {other_server.url}, but that run started with scripted at {server.url}" \
        in agent.stderr
    assert other_server.requests == [] and len(read_jsonl(out / "results.jsonl")) == 2


def test_keys_are_not_stored_and_a_resume_asks_for_them_again(server: ScriptedServer, tmp_path: Path) -> None:
    desk = Desk()
    desk.refuse = {"question 3"}
    server.script = desk
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED, concurrency=1)
    out = tmp_path / "out"
    secret_url = server.url.replace("http://", "http://me:pw-secret-77@")
    first = run_cli("run", str(suite), "-o", str(out), "--judge-api-key", "sk-judge-secret-42",
                    "--judge-base-url", secret_url)
    assert first.returncode == 3, first.stdout + first.stderr
    manifest = (out / "run.json").read_text()
    assert "sk-judge-secret-42" not in manifest and "pw-secret-77" not in manifest
    words = hint(first.stderr)
    assert words[-4:] == ["--judge-api-key", "KEY", "--judge-base-url", "URL"]  # and a comment that says why
    assert "run.json keeps no keys" in first.stderr
    desk.refuse = set()
    bare = run_cli("run", str(suite), "--resume", str(out))
    assert bare.returncode == 2
    assert "started with --judge-api-key given on the command line; run.json does not keep keys, so give it again" \
        in bare.stderr
    assert "started with --judge-base-url given on the command line, with credentials" in bare.stderr
    again = run_cli("run", str(suite), "--resume", str(out), "--judge-api-key", "sk-judge-secret-42",
                    "--judge-base-url", secret_url)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(read_jsonl(out / "results.jsonl")) == 6


def test_a_resumed_rerun_keeps_the_samples_it_chose(server: ScriptedServer, tmp_path: Path) -> None:
    """A `--rerun-failed A -o B` run stopped half-way resumes with A's failed samples, not every sample."""
    server.script = lambda path, body: JUDGE_OK if is_judge(body) else text(
        "wrong" if last_user(body) in ("question 1", "question 4") else "fine")
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED)
    assert run_cli("run", str(suite), "-o", str(tmp_path / "a")).returncode in (0, 1)  # s1 and s4 fail
    server.script = Desk()
    b = tmp_path / "b"
    assert run_cli("run", str(suite), "-o", str(b), "--rerun-failed", str(tmp_path / "a")).returncode == 0
    killed(b, 1)
    resumed = run_cli("run", str(suite), "--resume", str(b))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert sorted(r["sample_id"] for r in read_jsonl(b / "results.jsonl")) == ["s1", "s4"]


def test_a_run_over_several_models_resumes_with_its_options(server: ScriptedServer, tmp_path: Path) -> None:
    server.script = Desk()
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out), "--model", "m1", "--model", "m2", "-n", "3",
                   "--no-judge").returncode == 0
    killed(out / "m1", 1)
    server.requests.clear()
    wider = run_cli("run", str(suite), "--resume", str(out), "-n", "5")
    assert wider.returncode == 2 and "-n/--max-samples 5 is not what that run started with" in wider.stderr
    resumed = run_cli("run", str(suite), "--resume", str(out))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert sorted(r["body"]["model"] for r in server.requests) == ["m1", "m1"]  # m1's two missing, no judge
    for model in ("m1", "m2"):
        assert sorted(r["sample_id"] for r in read_jsonl(out / model / "results.jsonl")) == ["s0", "s1", "s2"]


def test_a_run_over_several_models_keeps_its_gate_mode(tmp_path: Path) -> None:
    """--gate any decides the combined verdict: a resume without it judged the run with --gate all."""
    server = ScriptedServer(lambda path, body: text("wrong" if body.get("model") == "bad" else "fine")).start()
    try:
        suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders={"answer": JUDGED["answer"]})
        out = tmp_path / "out"
        first = run_cli("run", str(suite), "-o", str(out), "--model", "good", "--model", "bad", "--gate", "any")
        assert first.returncode == 0, first.stdout + first.stderr  # good passes: enough for --gate any
        killed(out / "bad", 2)
        other = run_cli("run", str(suite), "--resume", str(out), "--gate", "all")
        assert other.returncode == 2
        assert "--gate all is not what that run started with (--gate any)" in other.stderr
        resumed = run_cli("run", str(suite), "--resume", str(out))
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert json.loads((out / "matrix.json").read_text())["gate_mode"] == "any"
    finally:
        server.stop()


def test_rerun_failed_of_a_run_that_never_finished_says_how_many_never_ran(server: ScriptedServer,
                                                                          tmp_path: Path) -> None:
    desk = Desk()
    desk.refuse = {"question 3"}
    server.script = desk
    suite = write_suite(tmp_path, rows_6(), base_url=server.url, graders=JUDGED, concurrency=1)
    out = tmp_path / "out"
    assert run_cli("run", str(suite), "-o", str(out)).returncode == 3  # stopped at s3: s4 and s5 never ran
    aborted = run_cli("run", str(suite), "-o", str(tmp_path / "r1"), "--rerun-failed", str(out))
    assert aborted.returncode == 2, aborted.stdout + aborted.stderr
    assert "that run never finished (aborted after 4 of 6 sample runs: 2 of its 6 samples never ran)" \
        in aborted.stderr
    assert f"evals run SUITE --resume {out}" in aborted.stderr and "nothing to rerun" not in aborted.stdout
    killed(out, 2)  # killed instead: no summary.json; run.json says what was planned
    gone = run_cli("run", str(suite), "-o", str(tmp_path / "r2"), "--rerun-failed", str(out))
    assert gone.returncode == 2
    assert "never finished (stopped before it finished (no summary.json): 4 of its 6 samples never ran)" \
        in gone.stderr
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()
    desk.refuse = set()
    assert run_cli("run", str(suite), "--resume", str(out)).returncode == 0
    done = run_cli("run", str(suite), "-o", str(tmp_path / "r3"), "--rerun-failed", str(out))
    assert done.returncode == 0 and "nothing to rerun" in done.stdout  # finished, every sample passed


def test_replay_user_from_a_partial_run_names_the_conversations_it_cannot_replay(server: ScriptedServer,
                                                                              tmp_path: Path) -> None:
    """A sample RUN holds no conversation of was played by the simulator afresh, next to replayed ones, unsaid."""
    from tests.test_replay_user import REFUND_TOOL, ROW
    from tests.test_replay_user import Desk as UserDesk

    server.script = UserDesk()
    rows = [{**ROW, "id": f"refund-{i}"} for i in (1, 2, 3)]
    suite = write_suite(tmp_path, rows, base_url=server.url, tools={"issue_refund": REFUND_TOOL},
                        graders={"answer": {"kind": "tool", "function": "contains"}}, gate={"value": 0.5})
    a = tmp_path / "a"
    assert run_cli("run", str(suite), "-o", str(a), "--model", "v1", "-c", "1").returncode == 0
    killed(a, 1)
    [kept] = [r["sample_id"] for r in read_jsonl(a / "results.jsonl")]
    server.requests.clear()
    partial = run_cli("run", str(suite), "-o", str(tmp_path / "b"), "--model", "v1", "--replay-user", str(a))
    assert partial.returncode == 2, partial.stdout + partial.stderr
    missing = sorted({"refund-1", "refund-2", "refund-3"} - {kept})
    assert (f"2 of the 3 simulated conversations this run would play have no recorded user to replay (2 never ran "
            f"there: that run never finished (stopped before it finished (no summary.json): 2 of its 3 samples never "
            f"ran)): {', '.join(missing)}") in partial.stderr
    assert f"evals run SUITE --resume {a}" in partial.stderr
    assert server.requests == []  # refused before any call: no conversation was simulated afresh
    only = run_cli("run", str(suite), "-o", str(tmp_path / "c"), "--model", "v1", "--replay-user", str(a),
                   "--sample-id", kept)
    assert only.returncode == 0, only.stdout + only.stderr
    assert "replay-user: all 1 conversations stayed on the recorded path" in only.stdout
