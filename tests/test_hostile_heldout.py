"""Held-out style attacks on issue 12 that the first round of tests did not cover.

Rubric templates: a list holding the same big string many times costs nothing to build (references), but turning
it into text (`{{ l }}`, `~`, `|string`, `|tojson`, `|join` of lists, `"%s" % l`, `.format(l)`) is one C-level
allocation the deadline cannot interrupt: nested lists of references reach 10^12 characters in three lines.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from evals_cli.graders.rubric import RubricLimitError, render_rubric
from tests.helpers import TOOLS, read_jsonl, run_cli, run_cli_process, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text

_BIG = '{% set s = "a" * 1000000 %}{% set l = [s] * 1000 %}{% set m = [l] * 1000 %}'
_LITERAL = '{% set s = "a" * 1000000 %}{% set a = [s, s, s, s, s, s, s, s, s, s] %}' \
           "{% set b = [a, a, a, a, a, a, a, a, a, a] %}{% set c = [b, b, b, b, b, b, b, b, b, b] %}"

REPR_BOMBS = {
    "tilde_of_nested_list": _BIG + '{{ (m ~ "")|length }}',
    "output_of_list": _BIG + "{{ l }}",
    "output_in_loop": _BIG + "{% for x in m %}{{ x }}{% endfor %}",
    "string_filter": _BIG + "{{ l|string|length }}",
    "tojson_filter": _BIG + "{{ l|tojson|length }}",
    "pprint_filter": _BIG + "{{ l|pprint|length }}",
    "join_of_lists": _BIG + "{{ m|join|length }}",
    "printf_of_list": _BIG + '{{ ("%s" % (l,))|length }}',
    "format_of_list": _BIG + '{{ "{}".format(l)|length }}',
    "map_string": _BIG + '{{ m|map("string")|list|length }}',
    "literal_fan_out": _LITERAL + "{{ c|string|length }}",
    "dict_of_lists": _BIG + '{{ {"k": m}|string|length }}',
}

# the same by comparison: `==` on two equal (not identical) lists of 10^6 references to 1 MB strings runs
# 10^12 byte comparisons in C (5 s at 10^5 references, uninterruptible)
_TWINS = '{% set s = "a" * 1000000 %}{% set t = "a" * 999999 ~ "a" %}' + "".join(
    f"{{% set {v}{i} = [{', '.join([f'{v}{i - 1}' if i > 1 else v] * 10)}] %}}" for v in "st" for i in range(1, 7))
COMPARE_BOMBS = {"eq": _TWINS + "{{ s6 == t6 }}", "lt": _TWINS + "{{ s6 < t6 }}", "in": _TWINS + "{{ t in s6 }}",
                 "is_eq_test": _TWINS + "{{ s6 is eq t6 }}", "if": _TWINS + "{% if s6 != t6 %}x{% endif %}"}


@pytest.mark.parametrize("rubric", list(COMPARE_BOMBS.values()), ids=list(COMPARE_BOMBS))
def test_comparing_shared_list_bombs_is_refused_at_once(rubric: str) -> None:
    started = time.monotonic()
    with pytest.raises(RubricLimitError, match="EVALS_RUBRIC_MAX_CHARS"):
        render_rubric(rubric, {})
    assert time.monotonic() - started < 2


def test_ordinary_comparisons_still_work() -> None:
    rubric = ('{{ 1 < 2 < 3 }} {{ "a" in ["a"] }} {{ [1] == [1] }} {% if 2 is gt 1 %}y{% endif %} '
              "{{ 3 not in [1] }} {{ submission == 's' }}")
    assert render_rubric(rubric, {"submission": "s"}) == "True True True y True True"


# One child process imports the renderer once, then forks a fresh process per bomb: each bomb still renders in
# a process of its own (its own memory high-water mark, its own wall-clock limit: SIGALRM's default action ends
# even a C-level allocation), without paying an interpreter start and the imports twelve times.
_BOMB_CHILD = """
import json, os, resource, signal, sys, time
from evals_cli.graders.rubric import RubricLimitError, render_rubric
report = {}
for name, rubric in json.loads(sys.stdin.read()).items():
    read, write = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        signal.alarm(60)
        out = []
        try:
            render_rubric(rubric, {'submission': 's'})
        except RubricLimitError as exc:
            out.append('LIMIT ' + str(exc))
        out.append('RSS ' + str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024))
        os.write(write, '\\n'.join(out).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    report[name] = {'exit': os.waitstatus_to_exitcode(status), 'stdout': b''.join(chunks).decode(),
                    'seconds': time.monotonic() - started}
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def bomb_reports() -> dict[str, dict[str, object]]:
    """Each REPR_BOMBS rubric rendered in a forked child: its exit code, what it printed, how long it took."""
    done = subprocess.run([sys.executable, "-c", _BOMB_CHILD], input=json.dumps(REPR_BOMBS), capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", list(REPR_BOMBS))
def test_text_of_a_shared_list_bomb_is_refused_before_building(bomb_reports: dict[str, dict[str, object]],
                                                               name: str) -> None:
    """Run in a child with a hard wall-clock limit: a regression would otherwise take the test worker down."""
    report = bomb_reports[name]
    stdout = str(report["stdout"])
    assert report["exit"] == 0, report
    assert "LIMIT" in stdout and "EVALS_RUBRIC_MAX_CHARS" in stdout, stdout
    rss_mb = int(stdout.rsplit("RSS", 1)[1].split()[0])
    assert rss_mb < 400, f"{rss_mb} MB: the text was built before the check"
    assert float(report["seconds"]) < 15  # type: ignore[arg-type]


def test_lists_of_ordinary_size_still_render() -> None:
    rubric = '{% set l = ["a", "b"] * 3 %}{{ l }} {{ l|join(",") }} {{ {"k": l}|tojson }} {{ "%s" % (l,) }}'
    out = render_rubric(rubric, {})
    assert out.startswith("['a', 'b', 'a', 'b', 'a', 'b'] a,b,a,b,a,b")


def test_refusal_is_the_rubric_limit_error() -> None:
    with pytest.raises(RubricLimitError):
        render_rubric(_BIG + "{{ l }}", {})


_CAPTURED_EXIT_AGENT = '''
from os import _exit  # captured when the file is imported, before any sample runs


def run_agent(sample, tools):
    if sample.input == "exit":
        _exit(0)
    return "fine"
'''

_IMPORT_TIME_EXIT_AGENT = '''
import os
os._exit(0)


def run_agent(sample, tools):
    return "fine"
'''


def _python_suite(tmp_path: Path, agent: str) -> Path:
    (tmp_path / "agent.py").write_text(agent, encoding="utf-8")
    rows = [{"id": "a", "input": "exit", "ground_truth": "fine"}, {"id": "b", "input": "x", "ground_truth": "fine"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"name": "exit-suite", "dataset": "data.jsonl", "target": {"kind": "python", "callable": "agent.py:run_agent"},
             "tools": TOOLS, "graders": {"answer": {"kind": "tool", "function": "contains"}},
             "gate": {"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 0.5}}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite), encoding="utf-8")
    return path


@pytest.mark.slow  # a real process with signals or 20 MB of output: seconds; make test-slow runs it
def test_an_exit_captured_at_import_cannot_end_the_run_with_0(tmp_path: Path) -> None:
    """`from os import _exit` took the real function before the guard was installed: a real subprocess, since
    the bug was a process that exited 0 with nothing written."""
    path = _python_suite(tmp_path, _CAPTURED_EXIT_AGENT)
    out = tmp_path / "out"
    done = run_cli_process("run", str(path), "-o", str(out), timeout=60)
    assert done.returncode != 0, done.stdout + done.stderr
    lines = read_jsonl(out / "results.jsonl")
    errored = [line for line in lines if line.get("error")]
    assert {line["sample_id"] for line in lines} == {"a", "b"} and len(errored) == 1, lines


@pytest.mark.slow  # a real process per command: seconds; make test-slow runs it
@pytest.mark.parametrize("command", ["validate", "run"])
def test_an_exit_at_import_time_is_exit_2_naming_the_callable(tmp_path: Path, command: str) -> None:
    path = _python_suite(tmp_path, _IMPORT_TIME_EXIT_AGENT)
    # validate imports the suite's code only when asked (--import-code); without it the file is only read
    args = [command, str(path)] + (["-o", str(tmp_path / "out")] if command == "run" else ["--import-code"])
    done = run_cli_process(*args, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "target.callable" in done.stderr and "os._exit(0)" in done.stderr


@pytest.mark.parametrize("name,content,expected", [
    ("deep.jsonl", '{"id": "s1", "x": ' + "[" * 200_000 + "]" * 200_000 + "}\n", "nested too deeply"),
    ("bigint.jsonl", '{"id": ' + "9" * 5_000 + "}\n", "more than 4300 digits"),
    ("deep.json", '[{"id": "s1", "x": ' + "[" * 200_000 + "]" * 200_000 + "}]\n", "nested too deeply"),
    ("bigint.json", '{"id": ' + "9" * 5_000 + "}\n", "more than 4300 digits"),
])
def test_session_files_nested_deep_or_with_huge_ids_are_exit_2(tmp_path: Path, name: str, content: str,
                                                                expected: str) -> None:
    """Item 10 for `evals analyze`: the dataset reader had these, the session reader gave 'internal error'."""
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = run_cli("analyze", str(path), "--no-judge", "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr and name in result.stderr and "internal error" not in result.stderr


@pytest.mark.parametrize("deep", ["[" * 200_000 + "]" * 200_000, '{"a": ' * 700 + "1" + "}" * 700],
                         ids=["past_the_parser", "parsed_but_deep"])
def test_tool_arguments_nested_past_the_parser_are_an_argument_error(tmp_path: Path, deep: str) -> None:
    """A model's tool call whose arguments are JSON 200,000 deep (the parser gives up) or 700 deep (it does not,
    but the recursive code after it did): the call is refused like any malformed arguments (the model is
    told), not an internal error for the sample."""
    server = ScriptedServer(agent_script({"host": [call("read_file", '{"path": ' + deep + "}"), text("done")]}))
    server.start()
    try:
        path = write_suite(tmp_path, [{"id": "deep", "input": "host", "ground_truth": "done"}], base_url=server.url,
                           gate={"value": 0.0})
        result = run_cli("run", str(path), "-o", str(tmp_path / "out"))
    finally:
        server.stop()
    assert "internal error" not in result.stderr, result.stderr
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"] is None, line["error"]
    [step, *_] = line["trajectory"]["turns"][0]["steps"]
    [tool_call] = step["tool_calls"]
    assert "nested too deeply" in tool_call["arguments_error"]


class _GzipServer:
    """Answers every POST with a gzip-encoded chat completion whose text is `size` spaces plus 'done'."""

    def __init__(self, size: int) -> None:
        body = json.dumps(text(" " * size + "done")).encode()
        self.payload = gzip.compress(body, compresslevel=9)
        payload = self.payload

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # a short poll interval: stop() waits for the next poll (0.5 s by default)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("record", [False, True], ids=["plain", "recording"])
def test_a_gzip_bomb_is_refused_while_inflating(tmp_path: Path, record: bool) -> None:
    """The size bound was checked on the compressed bytes, then httpx inflated the whole body: 400 KB of gzip
    took 835 MB. Now the body is refused once its decompressed size passes EVALS_MAX_RESPONSE_BYTES."""
    server = _GzipServer(20_000_000)
    assert len(server.payload) < 100_000
    try:
        path = write_suite(tmp_path, [{"id": "bomb", "input": "host", "ground_truth": "done"}], base_url=server.url)
        extra = ["--record", str(tmp_path / "rec.jsonl")] if record else []
        result = run_cli("run", str(path), "-o", str(tmp_path / "out"), *extra,
                         env={"EVALS_MAX_RESPONSE_BYTES": "1000000"})
    finally:
        server.stop()
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"] is not None and "once decompressed" in line["error"]["message"], line["error"]
    assert "internal error" not in result.stderr


def test_an_ordinary_gzip_reply_is_still_read(tmp_path: Path) -> None:
    server = _GzipServer(10)
    try:
        path = write_suite(tmp_path, [{"id": "ok", "input": "host", "ground_truth": "done"}], base_url=server.url,
                           gate={"value": 0.0})
        result = run_cli("run", str(path), "-o", str(tmp_path / "out"), "--record", str(tmp_path / "rec.jsonl"))
    finally:
        server.stop()
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert line["error"] is None and line["grades"]["answer"]["score"] == 1.0, (line, result.stderr)
    [recorded] = read_jsonl(tmp_path / "rec.jsonl")
    assert recorded["response"]["choices"][0]["message"]["content"].endswith("done")


COMPILE_BOMBS = ["((((a{100}){100}){100}){100})", "a{4294967294}", r"((((\p{L}{100}){100}){100}){100})",
                 "(?:(?:a|b|c|d){1000}){1000}"]


@pytest.mark.parametrize("pattern", COMPILE_BOMBS)
def test_patterns_whose_compilation_never_ends_are_refused_at_once(pattern: str) -> None:
    """The match had a time bound; compiling did not: `regex` unrolls counted repeats, and nested ones never
    finish compiling (the first took > 30 s at 100^4). A child with a wall-clock limit, since a regression
    would hang the worker."""
    code = ("import sys\nfrom evals_cli import regex_patterns\n"
            "try:\n    regex_patterns.compile(sys.argv[1])\nexcept regex_patterns.RegexError as exc:\n"
            "    print('REFUSED', exc)\n")
    done = subprocess.run([sys.executable, "-c", code, pattern], capture_output=True, text=True, timeout=20)
    assert "REFUSED" in done.stdout and "expand past" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("pattern", [r"^\d{3}-\d{4}$", r"(?:[a-z0-9-]{1,63}\.){1,127}[a-z]{2,63}", r"\p{L}{2}-\d{4}",
                                     "^(a+)+$", "(?i)hello"])
def test_ordinary_patterns_still_compile(pattern: str) -> None:
    from evals_cli import regex_patterns

    assert regex_patterns.compile(pattern) is not None


@pytest.mark.parametrize("where", ["tool_args", "extractor"])
def test_a_compile_bomb_in_the_suite_is_exit_2_at_validate(tmp_path: Path, where: str) -> None:
    bomb = COMPILE_BOMBS[0]
    graders = {"tool_args": {"args": {"kind": "tool_args",
                                      "calls": [{"tool": "read_file", "match": {"path": {"regex": bomb}}}]}},
               "extractor": {"x": {"kind": "tool", "function": "contains", "extractor": "pattern",
                                   "extractor_config": {"pattern": bomb}}}}[where]
    path = write_suite(tmp_path, [{"id": "a", "input": "host", "ground_truth": "x"}], graders=graders)
    started = time.monotonic()
    result = run_cli_process("validate", str(path), timeout=60)
    assert result.returncode == 2 and "expand past" in result.stderr, result.stdout + result.stderr
    assert time.monotonic() - started < 30


def test_a_compile_bomb_in_regex_match_ground_truth_is_exit_2_naming_the_row(tmp_path: Path) -> None:
    """Rows are checked before any model call: the pattern is refused at its line, without compiling for ever."""
    rows = [{"id": "fine", "input": "host", "ground_truth": "^a+$"},
            {"id": "bomb", "input": "host", "ground_truth": COMPILE_BOMBS[0]}]
    path = write_suite(tmp_path, rows, graders={"rx": {"kind": "tool", "function": "regex_match"}})
    for args in (["validate", str(path)], ["run", str(path), "-o", str(tmp_path / "out")]):
        started = time.monotonic()
        result = run_cli_process(*args, timeout=60)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "data.jsonl:2" in result.stderr and "'bomb'" in result.stderr and "expand past" in result.stderr
        assert time.monotonic() - started < 30
