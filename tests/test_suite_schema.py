"""`evals schema`: the JSON Schema of suite.yaml, generated from the specs (plug-in kinds included), accepts
every shipped suite and refuses a misspelt key wherever it is; `evals init` writes it beside the suite."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
import yaml

from evals_cli.suite_schema import suite_schema
from tests.helpers import ROOT, run_cli

# suites/letta/ holds letta-evals' own format (read by the letta converter, run with --target: see
# docs/letta-evals.md), not evals-cli's suite.yaml
SHIPPED = sorted((ROOT / "suites").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = suite_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator: Any, data: Any) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]


def test_every_shipped_suite_and_the_init_template_validate(validator: jsonschema.Draft202012Validator) -> None:
    assert len(SHIPPED) >= 10
    files = [*SHIPPED, ROOT / "evals_cli" / "scaffold" / "templates" / "suite.yaml"]
    problems = {str(path.relative_to(ROOT)): _errors(validator, yaml.safe_load(path.read_text(encoding="utf-8")))
                for path in files}
    assert problems == {name: [] for name in problems}
    kinds = {yaml.safe_load(p.read_text(encoding="utf-8"))["target"].get("kind", "openai_chat") for p in SHIPPED}
    assert {"openai_chat", "traces", "recorded_sessions"} <= kinds  # both documents, several kinds


def _demo() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "suites" / "demo.yaml").read_text(encoding="utf-8"))


def _environment() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "suites" / "environment.yaml").read_text(encoding="utf-8"))


def _misspelt(data: dict[str, Any], path: tuple[str, ...], wrong: str) -> dict[str, Any]:
    """`data` with the key `wrong` added to the mapping at `path` (a misspelling beside the right keys)."""
    out = copy.deepcopy(data)
    node = out
    for key in path:
        node = node[key] if key != "*" else next(iter(node.values()))
    node[wrong] = 1
    return out


@pytest.mark.parametrize(("source", "path", "wrong"), [
    (_demo, (), "concurency"),
    (_demo, ("target",), "max_step"),
    (_demo, ("graders", "*"), "wieght"),
    (_demo, ("tools", "*"), "descripton"),
    (_demo, ("gate",), "vlaue"),
    (_environment, ("tools", "issue_refund", "effect"), "keey"),
])
def test_a_misspelt_key_fails_where_it_is(validator: jsonschema.Draft202012Validator, source: Any,
                                          path: tuple[str, ...], wrong: str) -> None:
    good = source()
    assert _errors(validator, good) == []
    assert _errors(validator, _misspelt(good, path, wrong)) != []


def test_kind_is_required_except_for_the_default_target(validator: jsonschema.Draft202012Validator) -> None:
    data = _demo()
    data["target"] = {"model": "m", "base_url": "http://localhost:1/v1"}  # openai_chat, the default
    assert _errors(validator, data) == []
    data["target"] = {"callable": "agent.py:run"}  # a python target must say so, as the loader requires
    assert _errors(validator, data) != []
    data["target"] = {"kind": "python", "callable": "agent.py:run"}
    assert _errors(validator, data) == []
    data["graders"] = {"answer": {"function": "contains"}}  # a grader with no kind
    assert _errors(validator, data) != []


def test_a_kind_registered_by_a_plugin_is_in_the_schema() -> None:
    from evals_cli.graders.base import GRADERS, GradeContext, Grader
    from evals_cli.models.grader_specs.base import GraderBase
    from evals_cli.models.results import Grade

    class EchoSpec(GraderBase):
        """Registered by the test."""

        kind: Literal["zz_schema_probe"] = "zz_schema_probe"
        loudness: int = 3

    @GRADERS.register("zz_schema_probe", spec=EchoSpec)
    class Echo(Grader[EchoSpec]):
        async def grade(self, ctx: GradeContext) -> Grade:
            return Grade(score=1.0)

    try:
        validator = jsonschema.Draft202012Validator(suite_schema())
        data = _demo()
        data["graders"] = {"probe": {"kind": "zz_schema_probe", "loudness": 5}}
        assert _errors(validator, data) == []
        data["graders"]["probe"]["loudnes"] = 5
        assert _errors(validator, data) != []
    finally:
        GRADERS.unregister("zz_schema_probe")
    data["graders"] = {"probe": {"kind": "zz_schema_probe"}}
    assert _errors(jsonschema.Draft202012Validator(suite_schema()), data) != []  # unregistered: unknown again


def test_evals_schema_prints_it_and_writes_it(tmp_path: Path) -> None:
    printed = run_cli("schema")
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == suite_schema()
    written = run_cli("schema", "-o", str(tmp_path / "suite.schema.json"))
    assert written.returncode == 0 and "$schema=suite.schema.json" in written.stdout
    assert json.loads((tmp_path / "suite.schema.json").read_text(encoding="utf-8")) == suite_schema()
    refused = run_cli("schema", "-o", str(tmp_path / "no" / "such" / "folder" / "s.json"))
    assert refused.returncode == 2 and "cannot write the schema" in refused.stderr


def test_evals_init_writes_the_schema_and_points_the_suite_at_it(tmp_path: Path) -> None:
    created = run_cli("init", str(tmp_path / "starter"))
    assert created.returncode == 0, created.stdout + created.stderr
    suite = (tmp_path / "starter" / "suite.yaml").read_text(encoding="utf-8")
    assert suite.splitlines()[0] == "# yaml-language-server: $schema=suite.schema.json"
    schema = json.loads((tmp_path / "starter" / "suite.schema.json").read_text(encoding="utf-8"))
    assert schema == suite_schema()
    assert _errors(jsonschema.Draft202012Validator(schema), yaml.safe_load(suite)) == []


def test_an_editor_on_draft_7_reads_it_the_same() -> None:
    """No keyword only draft 2020-12 knows (prefixItems, unevaluated*, $dynamicRef): the YAML language servers
    still on draft 7 reach the same verdicts (`$defs` resolves as a JSON pointer there)."""
    schema = suite_schema()
    assert not {"prefixItems", "unevaluatedProperties", "$dynamicRef"} & set(_keywords(schema))
    draft7 = jsonschema.Draft7Validator(schema)
    for path in SHIPPED:
        assert _errors(draft7, yaml.safe_load(path.read_text(encoding="utf-8"))) == [], path
    assert _errors(draft7, _misspelt(_demo(), ("graders", "*"), "wieght")) != []
    assert _errors(draft7, _misspelt(_environment(), ("tools", "issue_refund", "effect"), "keey")) != []


def _keywords(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [k for k in value] + [k for v in value.values() for k in _keywords(v)]
    if isinstance(value, list):
        return [k for v in value for k in _keywords(v)]
    return []
