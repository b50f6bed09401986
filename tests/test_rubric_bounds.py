"""Rubric rendering is bounded in time and output size: nested loops, `"a" * 3000000000`, `**`, amplifying filters
and str methods, `~` doubling. Past a bound: exit 2 at validate/run when the rubric is static, a grade error at
run time when only the agent's answer makes it explode; never a hang or a MemoryError."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from evals_cli.graders.rubric import RubricLimitError, load_rubric, render_rubric
from evals_cli.graders.rubric_vars import rubric_variables
from evals_cli.models.sample import Sample
from evals_cli.models.trajectory import Trajectory
from evals_cli.settings import DEFAULT_RUBRIC_MAX_CHARS as DEFAULT_MAX_CHARS
from evals_cli.settings import DEFAULT_RUBRIC_TIMEOUT_S as DEFAULT_TIMEOUT
from tests.helpers import read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, text

SIZE_BOMBS = {
    "multiply": '{{ "a" * 3000000000 }}',
    "multiply_variable": '{% set n = 3000000000 %}{{ "a" * n }}',
    "list_multiply": "{{ [1, 2] * 2000000000 }}",
    "power": "{{ 10 ** 100000000 }}",
    "center_filter": '{{ "a"|center(3000000000) }}',
    "ljust_method": '{{ "a".ljust(3000000000) }}',
    "zfill_method": '{{ "1".zfill(3000000000) }}',
    "printf_filter": '{{ "%0999999999d"|format(1) }}',
    "printf_operator": '{{ "%0999999999d" % 1 }}',
    "printf_star": '{{ "%*d" % (999999999, 1) }}',
    "brace_format": '{{ "{:>999999999}".format(1) }}',
    "replace_filter": '{{ ("a" * 100000)|replace("a", "b" * 100000) }}',
    "replace_method": '{{ ("a" * 100000).replace("a", "b" * 100000) }}',
    "join_filter": '{{ range(100000)|join("x" * 1000000) }}',
    "join_method": '{{ ("x" * 1000000).join(range(100000)|map("string")|list) }}',
    "indent_filter": '{{ ("a\\n" * 100000)|indent(100000) }}',
    "batch_filter": "{{ [1]|batch(3000000000, 0)|list }}",
    "tilde_doubling": '{% set ns = namespace(s="ab") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}'
                      "{% endfor %}{{ ns.s }}",
    "plus_doubling": '{% set ns = namespace(s="ab") %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}'
                     "{% endfor %}{{ ns.s }}",
    "streamed_output": "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
}

TIME_BOMBS = {
    "nested_ranges": "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
    "captured_block": "{% set s %}{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
                      "{% endset %}{{ s }}",
    "loops_over_a_string": "{% for a in 'x' * 5000 %}{% for b in 'x' * 5000 %}{% for c in 'x' * 5000 %}"
                           "{% endfor %}{% endfor %}{% endfor %}",
    "loop_with_loop_variable": "{% for i in range(100000) %}{% for j in range(100000) %}{{ loop.index }}{% endfor %}"
                               "{% endfor %}",
}


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setenv("EVALS_RUBRIC_TIMEOUT", "0.5")
    return 0.5


@pytest.mark.parametrize("rubric", list(SIZE_BOMBS.values()), ids=list(SIZE_BOMBS))
def test_size_bombs_are_refused_before_allocating(quick: float, rubric: str) -> None:
    # the short deadline only matters to the bombs it stops (join_method): the size checks come first
    started = time.monotonic()
    with pytest.raises(RubricLimitError, match="more than the 2,000,000 allowed|past 100,000 bits|longer than"):
        render_rubric(rubric, {"submission": "s"})
    assert time.monotonic() - started < DEFAULT_TIMEOUT + 1


@pytest.mark.parametrize("rubric", list(TIME_BOMBS.values()), ids=list(TIME_BOMBS))
def test_time_bombs_stop_at_the_deadline(quick: float, rubric: str) -> None:
    started = time.monotonic()
    with pytest.raises(RubricLimitError, match=r"longer than 0.5 s \(EVALS_RUBRIC_TIMEOUT\)"):
        render_rubric(rubric, {"submission": "s"})
    assert time.monotonic() - started < quick + 1.5


def test_the_defaults_are_documented_values() -> None:
    assert (DEFAULT_TIMEOUT, DEFAULT_MAX_CHARS) == (2.0, 2_000_000)


def test_the_output_cap_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALS_RUBRIC_MAX_CHARS", "100")
    with pytest.raises(RubricLimitError, match="longer than 100 characters"):
        render_rubric("{{ submission }}", {"submission": "y" * 150})
    assert render_rubric("{{ submission }}", {"submission": "y" * 50}) == "y" * 50


@pytest.mark.parametrize(("rubric", "expected"), [
    ('{{ "%5d"|format(3) }}|{{ "{:,}".format(1234567890) }}', "    3|1,234,567,890"),
    ("{{ 2 ** 10 }} {{ 'ab' * 3 }} {{ [1] * 3 }} {{ 'a' ~ 'b' }}", "1024 ababab [1, 1, 1] ab"),
    ("{% for i in range(3) %}{{ loop.index }}{% endfor %} {{ 'x y'|replace(' ', '-') }}", "123 x-y"),
    ("{{ ['a', 'b']|join(', ') }} {{ 'a\nb'|indent(2) }} {{ 'ab'|center(6) }}", "a, b a\n  b   ab  "),
    ("{% set s %}{{ submission }}!{% endset %}{{ s }}", "answer!"),
])
def test_ordinary_rubrics_render_as_before(rubric: str, expected: str) -> None:
    assert render_rubric(rubric, {"submission": "answer"}) == expected


def test_builtin_rubrics_render_a_large_trajectory() -> None:
    sample = Sample(input="q", ground_truth="g")
    variables = rubric_variables(sample, Trajectory(), "z" * 200_000, "g", None)
    for name in ("task_completion", "needless_work", "misread_tool_result"):
        assert "z" * 1000 in render_rubric(load_rubric(f"builtin:{name}", None, Path(".")), variables)


ROWS = [{"id": "host", "input": "db host?", "ground_truth": "localhost"}]


def test_a_static_bomb_in_a_suite_rubric_is_exit_2_at_validate_and_run(tmp_path: Path) -> None:
    path = write_suite(tmp_path, ROWS * 1, graders={"judge": {"kind": "model_judge",
                                                              "prompt": '{{ "a" * 3000000000 }}'}})
    for args in (("validate", str(path)), ("run", str(path), "-o", str(tmp_path / "out"))):
        result = run_cli(*args)
        assert result.returncode == 2, result.stderr
        assert "more than the 2,000,000 allowed" in result.stderr and "MemoryError" not in result.stderr


def test_a_hanging_rubric_is_exit_2_once_not_once_per_sample(tmp_path: Path) -> None:
    rows = [{"id": f"s{i}", "input": "q", "ground_truth": "g"} for i in range(20)]
    path = write_suite(tmp_path, rows, graders={"judge": {"kind": "model_judge", "prompt": TIME_BOMBS["nested_ranges"]}})
    started = time.monotonic()
    result = run_cli("validate", str(path), env={"EVALS_RUBRIC_TIMEOUT": "0.5"})
    assert result.returncode == 2 and "longer than 0.5 s" in result.stderr
    assert time.monotonic() - started < 5  # one render past the deadline, not twenty


def test_an_inline_bomb_in_a_dataset_row_is_exit_2_naming_the_row(tmp_path: Path) -> None:
    rows = [*ROWS, {"id": "evil", "input": "q", "ground_truth": "g", "rubric": "{{ 'a' * 3000000000 }} and more"}]
    path = write_suite(tmp_path, rows, graders={"judge": {"kind": "model_judge", "prompt": "{{ submission }}"}})
    result = run_cli("validate", str(path))
    assert result.returncode == 2 and "samples: evil" in result.stderr and "3,000,000,000" in result.stderr


def judge(body: dict[str, Any]) -> Any:
    return text(json.dumps({"reason": "ok", "score": 8}))


def test_a_rubric_that_explodes_only_on_the_answer_is_a_grade_error(server: ScriptedServer, tmp_path: Path) -> None:
    """Static checks render with an empty answer; the agent's answer makes this loop 10^12 steps."""
    server.script = agent_script({"host": [text("x" * 10_000)]}, judge=judge)
    rubric = "{% for a in submission %}{% for b in submission %}{% for c in submission %}{% endfor %}" \
             "{% endfor %}{% endfor %}{{ submission }}"
    path = write_suite(tmp_path, ROWS, base_url=server.url, gate={"value": 0.5},
                       graders={"judge": {"kind": "model_judge", "prompt": rubric}})
    started = time.monotonic()
    result = run_cli("run", str(path), "-o", str(tmp_path / "out"), env={"EVALS_RUBRIC_TIMEOUT": "0.5"})
    assert time.monotonic() - started < 20
    [line] = read_jsonl(tmp_path / "out" / "results.jsonl")
    grade = line["grades"]["judge"]
    assert grade["score"] is None and "rendering stopped" in grade["error"] and "0.5 s" in grade["error"]
    assert server.judge_requests() == []
    assert result.returncode == 3
