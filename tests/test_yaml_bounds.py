"""YAML that once hung, blew up or crashed the loader (issue 12, items 6 and 10): an alias bomb, nesting past
the parser's recursion, and keys written twice (the last silently won). Each is exit 2 at its line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from evals_cli.errors import ConfigError
from evals_cli.suite.loader import load_suite, load_target_file
from evals_cli.suite.yaml_file import MAX_YAML_DEPTH, parse_yaml
from tests.bad_inputs import OK, SUITE
from tests.helpers import run_cli


def billion_laughs(levels: int = 9) -> str:
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for previous, name in zip("abcdefghij", "bcdefghijk"[: levels - 1], strict=False):
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
    return text


def test_alias_bomb_is_refused_fast_at_its_line() -> None:
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        parse_yaml("name: x\n" + billion_laughs(), "bomb.yaml")
    assert time.perf_counter() - started < 2
    (problem,) = caught.value.problems
    assert problem.startswith("bomb.yaml:") and "once aliases are expanded (an alias bomb" in problem


def test_modest_aliases_still_work() -> None:
    data, _ = parse_yaml("base: &b {description: d, returns: x}\ntools: {a: *b, b: *b, c: {<<: *b, returns: y}}\n",
                         "ok.yaml")
    assert data["tools"]["c"] == {"description": "d", "returns": "y"}


_DEEP = [
    ("v: " + "[" * 5000 + "]" * 5000 + "\n", 1),
    ("v: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", 1),
    ("".join("  " * i + f"k{i}:\n" for i in range(2000)) + "  " * 2000 + "x: 1\n", 101),
    ("v: " + "[" * 500 + "]" * 500 + "\n", 1),  # past our bound, within libyaml's own (1,000 in PyYAML 6.0.4)
]


@pytest.mark.parametrize(("text", "line", "loader"), [
    *[(text, line, "libyaml") for text, line in _DEEP],
    # the pure-Python scanner is quadratic in flow nesting: 5,000 levels take seconds, so those are slow tests
    *[pytest.param(text, line, "pure-python", marks=[pytest.mark.slow] if max(text.count("["), text.count("{"))
                   >= 5000 else []) for text, line in _DEEP],
])
def test_deep_yaml_is_refused_with_our_own_limit(text: str, line: int, loader: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Whichever parser reads the file, and whatever limit and wording its release has, the message is ours:
    the file, the line of the first value past the bound, and the bound itself."""
    if loader == "pure-python":
        monkeypatch.setattr("evals_cli.suite.yaml_file._Loader", yaml.SafeLoader)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML was built without libyaml here")
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text, "deep.yaml")
    # a bound against hangs (the pure-Python scanner is quadratic in flow nesting), not a speed target
    assert time.perf_counter() - started < (5 if loader == "libyaml" else 30)
    (problem,) = caught.value.problems
    assert problem.startswith(f"deep.yaml:{line}: ")
    assert f"nested more than {MAX_YAML_DEPTH} levels" in problem


def test_a_syntax_error_in_shallow_yaml_is_still_a_syntax_error() -> None:
    """The depth pass that follows a parser error must not hide the real error behind a depth message."""
    with pytest.raises(ConfigError) as caught:
        parse_yaml("a: [1, 2\nb: 3\n", "bad.yaml")
    (problem,) = caught.value.problems
    assert problem.startswith("bad.yaml:") and "nested more than" not in problem


def test_a_logical_gate_300_deep_is_exit_2(tmp_path: Path) -> None:
    gate = "{kind: weighted_average, value: 0.5}"
    for _ in range(300):
        gate = "{kind: logical, op: and, gates: [" + gate + "]}"
    (tmp_path / "suite.yaml").write_text(SUITE.split("gate:")[0] + f"gate: {gate}\n", encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(OK, encoding="utf-8")
    for command in ("validate", "run"):
        result = run_cli(command, str(tmp_path / "suite.yaml"))
        assert result.returncode == 2, result.stdout + result.stderr
        assert "suite.yaml:" in result.stderr and f"nested more than {MAX_YAML_DEPTH} levels" in result.stderr
        assert "internal error" not in result.stderr


def test_depth_bound_leaves_room_for_real_suites() -> None:
    assert MAX_YAML_DEPTH >= 50
    nested = "v: " + "[" * 40 + "]" * 40 + "\n"
    parse_yaml(nested, "ok.yaml")


def test_duplicate_keys_name_both_lines(tmp_path: Path) -> None:
    text = SUITE.replace("concurrency: 2\n", "concurrency: 2\nconcurrency: 8\n")
    text = text.replace("    function: contains\n", "    function: contains\n    function: exact_match\n")
    (tmp_path / "suite.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(OK, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_suite(tmp_path / "suite.yaml")
    where = str(tmp_path / "suite.yaml")
    assert f"{where}:4: key 'concurrency' is written twice (lines 3 and 4)" in caught.value.problems[0]
    assert any("key 'function' is written twice (lines 17 and 18)" in p for p in caught.value.problems)


def test_duplicate_key_in_a_target_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("kind: openai_chat\nmodel: a\nmodel: b\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_target_file(path)
    assert any("agent.yaml:3: key 'model' is written twice (lines 2 and 3)" in p for p in caught.value.problems)


def test_merge_keys_are_not_duplicates() -> None:
    problems: list[str] = []
    parse_yaml("a: &a {x: 1}\nb:\n  <<: *a\n  x: 2\n", "m.yaml", problems)
    assert problems == []


def test_a_5000_digit_number_in_yaml_names_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_yaml("name: x\nconcurrency: " + "9" * 5000 + "\n", "big.yaml")
    (problem,) = caught.value.problems
    assert problem.startswith("big.yaml:2: YAML a number has more than 4300 digits")
