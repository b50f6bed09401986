"""Telemetry bound to its episode (evals_cli/traces/peers.py, receiver.py): a command agent's spans belong to the
episode whose process tree holds the connection they came on, whatever they are tagged with. One episode's agent
that reads another's id from /proc/<pid>/environ and posts spans tagged with it feeds nobody and is an error; a
process outside every episode is refused and counted. Real agent processes, real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.traces import receiver as receiver_module
from evals_cli.traces.receiver import OtlpReceiver
from tests.agents.span_agent import export_request
from tests.helpers import ROOT, read_jsonl, run_cli

FORGER = ROOT / "tests" / "agents" / "forging_agent.py"
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the binding reads Linux's /proc")


def _forgery_suite(tmp: Path) -> Path:
    fifo = tmp / "forged.fifo"
    os.mkfifo(fifo)
    rows = [{"id": "victim", "input": "Which port does the database use?", "ground_truth": "5433"},
            {"id": "forger", "input": "forge", "ground_truth": "forged"}]
    (tmp / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite: dict[str, Any] = {
        "name": "forgery", "dataset": "rows.jsonl", "concurrency": 2,
        "target": {"kind": "command", "command": [sys.executable, str(FORGER)], "env": {"FORGE_FIFO": str(fifo)},
                   "sample_timeout": 60},
        "graders": {"order": {"kind": "tool_order", "expected": ["list_files", "read_file"], "mode": "strict",
                              "required": True}},
        "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return tmp / "suite.yaml"


@LINUX
def test_spans_forged_for_another_episode_feed_nobody_and_error_the_forger(tmp_path: Path) -> None:
    result = run_cli("run", str(_forgery_suite(tmp_path)), "-o", str(tmp_path / "out"))
    rows = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "results.jsonl")}
    victim, forger = rows["victim"], rows["forger"]
    assert victim["error"] is None, victim["error"]
    calls = [c["name"] for t in victim["trajectory"]["turns"] for s in t["steps"] for c in s["tool_calls"]]
    assert calls == []  # none of the forged spans reached it
    assert victim["trajectory"]["not_observed"] == "trajectory not observed (no telemetry from the agent)"
    assert victim["grades"]["order"]["applicable"] is False and victim["passed"] is not True
    message = forger["error"]["message"]
    assert "named another episode" in message and "refused 1 export request" in message, message
    assert forger["passed"] is not True
    assert "Traceback" not in result.stdout + result.stderr


POSTER = """
import subprocess, sys, urllib.error, urllib.request
url, body, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
if depth:  # a grandchild does the posting: the episode's whole tree is its
    sys.exit(subprocess.run([sys.executable, "-c", sys.argv[4], url, body, str(depth - 1), sys.argv[4]]).returncode)
with open(body, "rb") as fh:
    request = urllib.request.Request(url, fh.read(), {"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=30) as response:
        print(response.status)
except urllib.error.HTTPError as exc:
    print(exc.code, exc.read().decode())
"""


def _poster(receiver: OtlpReceiver, body: Path, depth: int = 0) -> subprocess.Popen[str]:
    """A real process posting the export request in `body` (from its grandchild when depth is 1)."""
    return subprocess.Popen([sys.executable, "-c", POSTER, f"{receiver.endpoint}/v1/traces", str(body), str(depth),
                             POSTER], stdout=subprocess.PIPE, text=True)


def _episode_posts(receiver: OtlpReceiver, tag: str, body: bytes, tmp: Path, depth: int = 0) -> str:
    """Episode `tag` started as a real process tree that posts `body`: what it was answered."""
    (tmp / f"{tag}.json").write_bytes(body)
    receiver.expect(tag)
    poster = _poster(receiver, tmp / f"{tag}.json", depth)
    receiver.started(tag, poster.pid)
    return poster.communicate(timeout=60)[0].strip()


def _session_request(session: str) -> bytes:
    """An export with no episode tag whose span names `session` as its session."""
    request = json.loads(export_request("x", 1, 64))
    request["resourceSpans"][0]["resource"]["attributes"] = []
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"].append({"key": "session.id", "value": {"stringValue": session}})
    return json.dumps(request).encode()


def _post_here(receiver: OtlpReceiver, tag: str) -> tuple[int, str]:
    request = urllib.request.Request(f"{receiver.endpoint}/v1/traces", export_request(tag, 1, 64),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def bound() -> Iterator[tuple[OtlpReceiver, list[str]]]:
    said: list[str] = []
    running = OtlpReceiver(bind=True, on_foreign=said.append).start()
    yield running, said
    running.stop()


@LINUX
def test_an_episodes_processes_feed_it_and_an_outsider_is_refused_and_counted(
        bound: tuple[OtlpReceiver, list[str]], tmp_path: Path) -> None:
    receiver, said = bound
    assert receiver.bound
    opened = time.monotonic()
    assert _episode_posts(receiver, "b", export_request("b", 1, 64), tmp_path, depth=1) == "200"  # its grandchild
    assert _episode_posts(receiver, "c", _session_request("own-id"), tmp_path) == "200"  # untagged: its sender's
    status, reason = _post_here(receiver, "b")  # this process is in no episode's tree
    assert status == 403 and "no process of an open episode" in reason
    assert receiver.foreign == 1 and len(said) == 1 and f"pid {os.getpid()} " in said[0]
    for tag in ("b", "c"):
        receiver.ended(tag)
        assert len(receiver.requests_for(tag, opened=opened)) == 1  # its own, and no error for the outsider's
    assert receiver.held_bytes == 0


@LINUX
@pytest.mark.parametrize("body", [export_request("not-mine", 1, 64), _session_request("victim")],
                         ids=["another-tag", "another-episodes-session"])
def test_spans_naming_another_episode_are_refused_and_error_their_sender(
        bound: tuple[OtlpReceiver, list[str]], tmp_path: Path, body: bytes) -> None:
    receiver, _ = bound
    opened = time.monotonic()
    receiver.expect("victim")
    answer = _episode_posts(receiver, "forger", body, tmp_path)
    assert answer.startswith("403") and "names episode" in answer and "'forger'" in answer
    assert receiver.requests_for("victim", opened=opened) == []  # not fed, not errored
    with pytest.raises(InvalidResponse, match=r"named another episode: .* refused 1 export request"):
        receiver.requests_for("forger", opened=opened)
    assert receiver.foreign == 0


@LINUX
def test_a_refused_request_errors_its_own_episode_alone(tmp_path: Path) -> None:
    receiver = OtlpReceiver(bind=True, max_body=16 * 1024).start()
    try:
        opened = time.monotonic()
        receiver.expect("other")
        assert _episode_posts(receiver, "big", export_request("big", 1, 64 * 1024), tmp_path).startswith("413")
        assert _episode_posts(receiver, "other", export_request("other", 1, 64), tmp_path) == "200"
        assert len(receiver.requests_for("other", opened=opened)) == 1  # open meanwhile, and complete
        with pytest.raises(InvalidResponse, match=r"incomplete: .* refused 1 export request\(s\) of this episode"):
            receiver.requests_for("big", opened=opened)
    finally:
        receiver.stop()


GATED = "import subprocess, sys; sys.stdin.readline(); sys.exit(subprocess.run(sys.argv[1:]).returncode)"


@LINUX
def test_an_episode_with_a_second_root_takes_what_is_below_either(bound: tuple[OtlpReceiver, list[str]],
                                                                  tmp_path: Path) -> None:
    receiver, _ = bound
    (tmp_path / "two.json").write_bytes(export_request("two", 1, 64))
    url = f"{receiver.endpoint}/v1/traces"
    roots = [subprocess.Popen([sys.executable, "-c", GATED, sys.executable, "-c", POSTER, url,
                               str(tmp_path / "two.json"), "0", POSTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    receiver.expect("two")
    for root in roots:  # say, the process evals started and a sandbox's own monitor
        receiver.started("two", root.pid)
    assert [root.communicate("go\n", timeout=60)[0].strip() for root in roots] == ["200", "200"]
    assert len(receiver.requests_for("two")) == 2


@LINUX
def test_a_connection_before_its_episode_has_a_pid_waits_for_it(bound: tuple[OtlpReceiver, list[str]],
                                                                  tmp_path: Path) -> None:
    receiver, _ = bound
    (tmp_path / "early.json").write_bytes(export_request("early", 1, 64))
    receiver.expect("early")
    poster = _poster(receiver, tmp_path / "early.json")
    episodes = receiver.episodes
    assert episodes is not None
    with episodes.changed:  # its request is in, placed nowhere yet: it waits for the episode still starting
        assert episodes.changed.wait_for(lambda: episodes.waiting == 1, 30)
    receiver.started("early", poster.pid)
    assert poster.communicate(timeout=60)[0].strip() == "200"
    assert len(receiver.requests_for("early")) == 1 and receiver.foreign == 0


class _CommandLike:
    """What receiver_for reads of a target: a kind that binds its telemetry, no fixed port."""

    binds_telemetry = True
    default_otlp_port = 0
    spec = None


@LINUX
def test_the_first_outsider_is_said_on_stderr_naming_it(capfd: pytest.CaptureFixture[str]) -> None:
    from evals_cli.targets.external import receiver_for

    target = _CommandLike()
    receiver = receiver_for(target)
    try:
        assert receiver.bound
        assert [_post_here(receiver, "x")[0] for _ in range(2)] == [403, 403]
        err = capfd.readouterr().err
        assert err.count("OTLP receiver:") == 1 and f"held by pid {os.getpid()} (" in err and "outside every" in err
        assert receiver.foreign == 2 and receiver.refused == 2 and receiver.accepted == 0
    finally:
        receiver.stop()


@LINUX
def test_a_connection_held_open_elsewhere_does_not_hold_up_an_episodes_end(
        bound: tuple[OtlpReceiver, list[str]], tmp_path: Path) -> None:
    receiver, _ = bound
    port = int(receiver.endpoint.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as slow:  # headers never finished
        slow.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        with receiver.changed:
            assert receiver.changed.wait_for(lambda: receiver.in_flight == 1, 30)
        assert _episode_posts(receiver, "quick", export_request("quick", 1, 64), tmp_path) == "200"
        receiver.ended("quick")
        started = time.monotonic()
        assert len(receiver.requests_for("quick")) == 1  # not "still arriving": that connection is not its
        assert time.monotonic() - started < receiver_module.SETTLE_S
