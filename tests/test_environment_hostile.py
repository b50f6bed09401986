"""Issue 15's engine attacked as a hostile user would: inputs that made final_state give a verdict that was not
true, configs that failed at run time instead of load time, tool calls with arguments of the wrong kind, a big
world that multiplied results.jsonl, and state isolation under repeats, concurrency and --resume.

Each test names the input that showed the bug. Unit-level tests run calls through the real toolbox (as
tests/test_environment_grading.py does); run-level ones drive `evals run` against the scripted server."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evals_cli.environment.world import World
from evals_cli.graders.expectations import evaluate
from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.expected_state import ExpectedState
from evals_cli.models.sample import Sample
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import Step, Trajectory, Turn
from tests.helpers import SyncToolbox, read_jsonl, run_cli, write_suite
from tests.scripted_server import ScriptedServer, agent_script, call, text
from tests.test_environment_grading import final, stop
from tests.trajectory_builders import run as grade_with

CONFIG = json.dumps({"host": "localhost", "port": 8080, "db": {"port": 5432, "name": "app"}})
ENV = {"files": {"config.json": CONFIG, "README.md": "# demo", "docs/a/guide.md": "guide", "docs/b.md": "b"},
       "records": {"orders": [{"id": 1, "status": "delivered", "amount": 40},
                              {"id": "2", "status": "shipped", "amount": 9.5}]}}
TOOLS = {
    "write": ToolSpec.model_validate({"parameters": {"path": "p", "content": "c"}, "effect": "files.write"}),
    "read": ToolSpec.model_validate({"parameters": {"path": "p"}, "effect": "files.read"}),
    "rm": ToolSpec.model_validate({"parameters": {"path": "p"}, "effect": "files.delete"}),
    "ls": ToolSpec.model_validate({"parameters": {"type": "object", "properties": {"directory": {"type": "string"}}},
                                   "effect": "files.list"}),
    "exists": ToolSpec.model_validate({"parameters": {"path": "p"}, "effect": "files.exists"}),
    "get": ToolSpec.model_validate({"parameters": {"id": "i"}, "effect": {"records.get": "orders"}}),
    "drop": ToolSpec.model_validate({"parameters": {"id": "i"}, "effect": {"records.delete": "orders"}}),
    "refund": ToolSpec.model_validate({"parameters": {"id": "i", "amount": {"type": "number"}}, "effect": {
        "records.update": "orders", "set": {"status": "refunded"}, "fields": ["amount"]}}),
}


def acted(expected: dict[str, Any] | None, *calls: tuple[str, dict[str, Any]]) -> tuple[Sample, Trajectory]:
    sample = Sample.model_validate({"id": "s", "input": "go", "environment": ENV,
                                    **({"expected_state": expected} if expected else {})})
    box = SyncToolbox(TOOLS, sample.environment)
    steps = [Step(tool_calls=[box.call(f"c{i}", name, json.dumps(args))]) for i, (name, args) in enumerate(calls)]
    trajectory = Trajectory(turns=[Turn(user="go", steps=[*steps, Step(content="done")])])
    trajectory.state_changes = box.state_changes()
    return sample, trajectory


def verdict(expected: dict[str, Any], *calls: tuple[str, dict[str, Any]]) -> tuple[float | None, str]:
    sample, trajectory = acted(expected, *calls)
    grade = grade_with(final(), trajectory, sample)
    return grade.score, grade.rationale


# ---- verdicts that were not true ------------------------------------------------------------------------------

def test_deleted_naming_a_folder_or_a_collection_fails_while_anything_in_it_remains() -> None:
    # was a pass: `deleted: [docs]` looked up a file called "docs", found none, and called the folder deleted
    score, why = verdict({"deleted": ["docs"]}, ("rm", {"path": "docs/b.md"}))
    assert score == 0.0 and "docs/a/guide.md" in why and "docs/b.md" not in why
    assert verdict({"deleted": ["docs"]}, ("rm", {"path": "docs/b.md"}), ("rm", {"path": "docs/a/guide.md"}))[0] == 1.0
    # was a pass: `deleted: [orders]` looked up the record "orders/" (no id)
    score, why = verdict({"deleted": ["orders"]}, ("drop", {"id": 1}))
    assert score == 0.0 and "orders/2" in why
    assert verdict({"deleted": ["orders"]}, ("drop", {"id": 1}), ("drop", {"id": "2"}))[0] == 1.0


def test_exists_naming_a_collection_is_met() -> None:
    # was a fail: "orders: does not exist" for a collection that is there
    assert verdict({"exists": ["orders", "docs", "docs/a"]}) == (1.0, "all 3 expectation(s) met (0 change(s) to the "
                                                                      "environment)")


def test_a_file_the_agent_was_asked_to_create_is_not_an_other_change() -> None:
    # was a fail: `exists: [notes.txt]` with no_other_changes called the requested file a stray change
    expected = {"exists": ["notes.txt"], "no_other_changes": True}
    assert verdict(expected, ("write", {"path": "notes.txt", "content": "hi"}))[0] == 1.0
    score, why = verdict(expected, ("write", {"path": "notes.txt", "content": "hi"}),
                         ("write", {"path": "README.md", "content": "gone"}))
    assert score == 0.0 and "README.md: changed from '# demo' to 'gone'" in why
    # a new folder: what the agent puts in it is the folder asked for
    assert verdict({"exists": ["reports"], "no_other_changes": True},
                   ("write", {"path": "reports/q1/summary.md", "content": "ok"}))[0] == 1.0
    # an existing folder or a collection: `exists` does not sanction adding to it
    score, _ = verdict({"exists": ["docs"], "no_other_changes": True}, ("write", {"path": "docs/c.md", "content": "c"}))
    assert score == 0.0
    # a file that already existed: `exists` says it must still be there, not that it may change
    score, why = verdict({"exists": ["README.md"], "no_other_changes": True},
                         ("write", {"path": "README.md", "content": "gone"}))
    assert score == 0.0 and "README.md" in why


def test_no_other_changes_sees_record_fields_the_expectation_does_not_name() -> None:
    # was a pass: naming `status` accounted for the whole record, so zeroing the amount on the way went unseen
    expected = {"records": {"orders": {"1": {"status": "refunded"}}}, "no_other_changes": True}
    score, why = verdict(expected, ("refund", {"id": "1", "amount": 0}))
    assert score == 0.0
    assert why.endswith("orders/1: amount changed from 40 to 0, but no other changes were expected")
    refund_only = ToolSpec.model_validate({"parameters": {"id": "i"}, "effect": {
        "records.update": "orders", "set": {"status": "refunded"}}})
    sample = Sample.model_validate({"id": "s", "input": "go", "environment": ENV, "expected_state": expected})
    box = SyncToolbox({"refund": refund_only}, sample.environment)
    trajectory = Trajectory(turns=[Turn(steps=[Step(tool_calls=[box.call("c", "refund", '{"id": 1}')])])],
                            state_changes=box.state_changes())
    assert grade_with(final(), trajectory, sample).score == 1.0  # only the named field changed


def test_no_other_changes_sees_json_keys_a_json_subset_does_not_name() -> None:
    # was a pass: `json_subset: {port: 3000}` + no_other_changes, and the agent wrote {"port": 3000} over the
    # whole config (host and db gone): the issue's own example of what must fail
    expected = {"files": {"config.json": {"json_subset": {"port": 3000}}}, "no_other_changes": True}
    score, why = verdict(expected, ("write", {"path": "config.json", "content": '{"port": 3000}'}))
    assert score == 0.0
    assert "config.json: host removed (was 'localhost')" in why and "config.json: db removed" in why
    # a nested key the expectation names is followed into: db.port sanctioned, db.name not
    nested = {"files": {"config.json": {"json_subset": {"db": {"port": 6543}}}}, "no_other_changes": True}
    changed = json.dumps({"host": "localhost", "port": 8080, "db": {"port": 6543, "name": "prod"}})
    score, why = verdict(nested, ("write", {"path": "config.json", "content": changed}))
    assert score == 0.0 and "config.json: db.name changed from 'app' to 'prod'" in why and "db.port" not in why
    # the same data written with other spacing and key order is the change asked for, nothing else
    good = json.dumps({"db": {"name": "app", "port": 5432}, "port": 3000, "host": "localhost"}, indent=2)
    assert verdict(expected, ("write", {"path": "config.json", "content": good}))[0] == 1.0


def test_unchanged_and_stray_changes_name_the_fields_that_changed() -> None:
    # the rationale cut both objects to 60 characters, so "changed from {"id": 1, "status": ... to {"id": 1, ..."
    # hid the one field that changed behind those that did not
    orders = ENV["records"]["orders"]
    long = {"records": {"orders": [{**orders[0], "customer": "a-very-long-customer-name@example.com"}, orders[1]]}}
    sample = Sample.model_validate({"id": "s", "input": "go", "environment": long,
                                    "expected_state": {"unchanged": ["orders/1"]}})
    box = SyncToolbox(TOOLS, sample.environment)
    trajectory = Trajectory(turns=[Turn(steps=[Step(tool_calls=[box.call("c", "refund", '{"id": 1, "amount": 5}')])])],
                            state_changes=box.state_changes())
    why = grade_with(final(), trajectory, sample).rationale
    assert why.endswith("orders/1: status changed from 'delivered' to 'refunded'; amount changed from 40 to 5, "
                        "expected unchanged")
    score, why = verdict({"no_other_changes": True},
                         ("write", {"path": "config.json", "content": CONFIG.replace("localhost", "0.0.0.0")}))
    assert why.endswith("config.json: host changed from 'localhost' to '0.0.0.0', but no other changes were expected")
    score, why = verdict({"unchanged": ["config.json"]}, ("write", {"path": "config.json",
                                                                    "content": json.dumps(json.loads(CONFIG),
                                                                                          indent=2)}))
    assert score == 0.0 and "config.json: rewritten with the same data, expected unchanged" in why


def test_a_files_expectation_naming_a_folder_says_so() -> None:
    score, why = verdict({"files": {"docs": "x"}})
    assert score == 0.0 and "docs: is a folder, expected a file" in why


def test_an_absolute_path_names_the_same_file_as_the_relative_one() -> None:
    # was a pass of `unchanged: [config.json]` after the agent wrote /config.json (a second file), and a read of
    # "/README.md" failed right after `ls /` had listed README.md
    score, why = verdict({"unchanged": ["config.json"]}, ("write", {"path": "/config.json", "content": "{}"}))
    assert score == 0.0 and "config.json: host removed (was 'localhost')" in why
    sample, trajectory = acted(None, ("ls", {"directory": "/"}), ("read", {"path": "/README.md"}),
                               ("read", {"path": "//docs//b.md"}), ("exists", {"path": "/docs/"}))
    listing, readme, b, docs = trajectory.tool_calls
    assert "README.md" in listing.result.splitlines()
    assert (readme.result, b.result, docs.result) == ("# demo", "b", "true")


def test_a_name_spelled_with_decomposed_unicode_is_the_same_file() -> None:
    nfc, nfd = "caf\u00e9.txt", "cafe\u0301.txt"
    env = EnvironmentSpec.model_validate({"files": {nfd: "menu"}})
    box = SyncToolbox(TOOLS, env)
    assert box.call("c", "read", json.dumps({"path": nfc})).result == "menu"
    box.call("c", "write", json.dumps({"path": nfc, "content": "new menu"}))
    assert [c.target for c in box.state_changes() or []] == [nfc]
    with pytest.raises(ValidationError, match="are the same file"):
        EnvironmentSpec.model_validate({"files": {nfd: "a", nfc: "b"}})


@pytest.mark.parametrize("path", ["../secrets.txt", "docs/../../x", ".."])
def test_a_path_climbing_out_of_the_world_is_an_error_for_the_agent(path: str) -> None:
    sample, trajectory = acted({"no_other_changes": True}, ("write", {"path": path, "content": "x"}),
                               ("read", {"path": path}), ("ls", {"directory": path}))
    for record in trajectory.tool_calls:
        assert record.is_error and "outside the workspace" in record.result, record.result
    assert trajectory.state_changes == []


def test_record_ids_written_as_numbers_in_yaml_are_accepted_and_match() -> None:
    # was a ConfigError ("Input should be a valid string") for `orders: {1: {status: refunded}}` as YAML writes it
    expected = ExpectedState.model_validate({"records": {"orders": {1: {"status": "refunded"}, 2.0: {"amount": 9.5}}},
                                             "deleted": ["orders/9"]})
    assert list(expected.records["orders"]) == ["1", "2"]
    assert verdict(expected.model_dump(exclude_defaults=True), ("refund", {"id": 1, "amount": 40}))[0] == 1.0


def test_delete_then_recreate_with_the_same_text_is_no_change_and_stop_behavior_agrees() -> None:
    expected = {"files": {"config.json": {"json_subset": {"port": 3000}}}, "no_other_changes": True}
    sample, trajectory = acted(expected, ("rm", {"path": "README.md"}), ("write", {"path": "README.md",
                                                                                   "content": "# demo"}),
                               ("write", {"path": "config.json", "content": CONFIG.replace("8080", "3000")}))
    assert trajectory.state_changes is not None and [c.target for c in trajectory.state_changes] == ["config.json"]
    assert grade_with(final(), trajectory, sample).score == 1.0
    assert grade_with(stop(checks=["no_stop"]), trajectory, sample).score == 1.0
    # and after the state is reached, a write that changes nothing is still a mutating call: not stopping
    sample, trajectory = acted(expected, ("write", {"path": "config.json", "content": CONFIG.replace("8080", "3000")}),
                               ("write", {"path": "README.md", "content": "# demo"}))
    grade = grade_with(stop(checks=["no_stop"]), trajectory, sample)
    assert grade.score == 0.0 and "write" in grade.rationale


def test_evaluate_of_an_untouched_world_against_unchanged_folders_and_collections() -> None:
    world = World(EnvironmentSpec.model_validate(ENV))
    outcomes = evaluate(ExpectedState.model_validate({"unchanged": ["docs", "orders"], "no_other_changes": True}),
                        world, world.copy())
    assert all(o.met for o in outcomes) and len(outcomes) == 3


# ---- hostile configs: refused at load time, naming the field ----------------------------------------------------

@pytest.mark.parametrize(("env", "words"), [
    ({"records": {"orders": [{"id": 1, "placed": datetime.date(2024, 1, 1)}]}},
     "orders[0].placed: datetime.date(2024, 1, 1) (date) is not a JSON value; quote it"),
    ({"records": {"orders": [{"id": 1, "tags": {datetime.date(2024, 1, 1): 1}}]}}, "orders[0].tags: key"),
    ({"records": {"orders": [{"id": 1, "amount": float("nan")}]}}, "orders[0].amount: nan is not a JSON number"),
    ({"files": {"../outside.txt": "x"}}, "'../outside.txt' climbs out of the environment"),
    ({"files": {"/a.txt": "x", "a.txt": "y"}}, "are the same file"),
])
def test_an_environment_with_values_the_agent_could_never_read_is_refused(env: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as info:
        EnvironmentSpec.model_validate(env)
    assert words in str(info.value)


@pytest.mark.parametrize(("effect", "words"), [
    ({"records.update": "orders", "set": {"id": "9"}}, "'set' cannot set the record's id"),
    ({"records.create": "orders", "set": {"on": datetime.date(2024, 1, 1)}}, "set.on: datetime.date"),
    ({"records.update": "orders", "set": {"n": float("inf")}}, "set.n: inf is not a JSON number"),
    ({"records.get": "orders", "key": 5}, "effect.key"),
    ({"records.get": ["orders"]}, "effect.collection"),
    ({"files.read": None, "path": {"x": 1}}, "effect.path"),
    (5, "give an effect name (effect: files.read) or a mapping naming one"),
])
def test_an_effect_of_the_wrong_shape_is_refused(effect: Any, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        ToolSpec.model_validate({"parameters": {"id": "i", "path": "p"}, "effect": effect})
    assert words in str(info.value)


@pytest.mark.parametrize(("expected", "words"), [
    # was accepted, and final_state passed every world with "all 0 expectation(s) met" (fraction: ZeroDivision)
    ({"records": {"orders": {}}}, "records\n  Value error, orders: name the records to check"),
    ({"deleted": ["../x"]}, "deleted: '../x' climbs out of the environment"),
    ({"unchanged": ["./"]}, "unchanged: an empty path names nothing"),
    ({"records": {"orders": {"1": {"placed": datetime.date(2024, 1, 1)}}}}, "records.orders.1.placed"),
    ({"files": {"a.json": {"json_subset": {"at": datetime.datetime(2024, 1, 1)}}}}, "files.a.json.json_subset.at"),
])
def test_an_expected_state_that_could_never_be_met_is_refused(expected: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as info:
        ExpectedState.model_validate(expected)
    assert words in str(info.value)


def test_validate_refuses_a_yaml_date_in_a_record_with_exit_2_and_the_field(tmp_path: Path) -> None:
    # was accepted by validate; every records.get of the order then failed at run time (date is not JSON)
    env = {"records": {"orders": [{"id": "1", "placed": datetime.date(2024, 1, 1)}]}}
    suite = write_suite(tmp_path, [{"id": "s", "input": "go"}], tools={
        "get": {"description": "Get", "parameters": {"id": "i"}, "effect": {"records.get": "orders"}}},
        environment=env, graders={"final": {"kind": "final_state"}})
    assert "placed: 2024-01-01" in suite.read_text()  # written as YAML writes a date: unquoted
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "environment.records" in result.stderr and "orders[0].placed" in result.stderr
    assert "quote it in the YAML" in result.stderr


def test_validate_accepts_deleting_a_folder_two_levels_up(tmp_path: Path) -> None:
    # was "expected_state.deleted: 'docs' is not in the environment" for docs/a/guide.md's grandparent... when
    # it held no file directly
    suite = write_suite(tmp_path, [{"id": "s", "input": "go", "expected_state": {"deleted": ["docs"]}}],
                        tools={"rm": {"description": "Delete", "parameters": {"path": "p"}, "effect": "files.delete"}},
                        environment={"files": {"docs/a/guide.md": "g"}}, graders={"final": {"kind": "final_state"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 0, result.stdout + result.stderr


def test_validate_refuses_a_suite_file_that_a_row_turns_into_a_folder(tmp_path: Path) -> None:
    # the world held both "docs" and "docs/a.md": read said file, list said "not a directory"
    suite = write_suite(tmp_path, [{"id": "row-7", "input": "go", "environment": {"files": {"docs/a.md": "a"}}}],
                        tools={"ls": {"description": "List", "parameters": {"directory": "d"}, "effect": "files.list"}},
                        environment={"files": {"docs": "a file"}}, graders={"final": {"kind": "final_state"}})
    result = run_cli("validate", str(suite))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "environment.files: 'docs' is a file and also the folder of 'docs/a.md'" in result.stderr


# ---- hostile tool calls: an error the agent reads, never a crash --------------------------------------------------

@pytest.mark.parametrize(("name", "arguments", "result"), [
    ("write", {"path": ["a.txt"], "content": "x"}, "Error: argument 'path' must be a file path, got list"),
    ("write", {"path": {"p": 1}, "content": "x"}, "Error: argument 'path' must be a file path, got dict"),
    ("write", {"path": "", "content": "x"}, "Error: argument 'path' is empty; give a file path"),
    ("write", {"path": "/", "content": "x"}, "Error: argument 'path' is empty; give a file path"),
    ("write", {"path": "docs", "content": "x"}, "Error: docs: is a directory"),
    ("write", {"path": "a.txt"}, "Error: missing argument 'content' (the text to write)"),
    ("write", {"path": "README.md/x", "content": "y"}, "Error: README.md/x: not a directory (README.md is a file)"),
    ("ls", {"directory": ["docs"]}, "Error: argument 'directory' must be a folder path, got list"),
    ("get", {"id": [1]}, "Error: argument 'id' must be an id, got list"),
    ("get", {"id": None}, "Error: missing argument 'id' (the record id)"),
    ("get", {"id": True}, "Error: orders/true: not found"),
])
def test_wrong_argument_types_are_errors_the_agent_reads(name: str, arguments: dict[str, Any], result: str) -> None:
    sample, trajectory = acted(None, (name, arguments))
    [record] = trajectory.tool_calls
    assert record.is_error and record.result == result
    assert record.effect is not None and record.effect.error is not None
    assert trajectory.state_changes == []


def test_numbers_for_path_and_content_and_a_very_long_path_work_as_text() -> None:
    long_path = "d/" * 2000 + "f.txt"
    sample, trajectory = acted(None, ("write", {"path": 5, "content": 7}), ("write", {"path": long_path,
                                                                                      "content": {"a": 1}}),
                               ("read", {"path": long_path}), ("get", {"id": 1.0}))
    five, long_write, long_read, get = trajectory.tool_calls
    assert (five.result, long_read.result) == ("Wrote 1 characters to 5", '{"a": 1}')
    assert json.loads(get.result)["status"] == "delivered"  # 1.0, 1 and "1" are one id


# ---- storage: a call that changes nothing copies nothing ----------------------------------------------------------

def test_reads_and_lookups_keep_no_copy_of_the_world_and_changes_keep_their_diff() -> None:
    sample, trajectory = acted(None, ("read", {"path": "config.json"}), ("exists", {"path": "config.json"}),
                               ("get", {"id": "1"}), ("write", {"path": "README.md", "content": "# demo"}),
                               ("write", {"path": "README.md", "content": "new"}))
    read, exists, get, same, changed = trajectory.tool_calls
    for record in (read, exists, get, same):
        assert record.effect is not None and not record.effect.changed
        assert (record.effect.before, record.effect.after) == (None, None)
    assert read.result == CONFIG and json.loads(get.result)["id"] == 1  # the result holds what the agent saw
    assert changed.effect is not None and (changed.effect.before, changed.effect.after) == ("# demo", "new")


def test_reading_a_big_file_many_times_does_not_multiply_results_jsonl(tmp_path: Path,
                                                                       server: ScriptedServer) -> None:
    big = "x" * 300_000
    server.script = agent_script({"go": [call("exists", {"path": "big.txt"}), call("exists", {"path": "big.txt"}),
                                         call("stat", {"path": "big.txt"}), call("write", {"path": "n.txt",
                                                                                           "content": "y"}),
                                         text("done")]})
    tools = {"exists": {"description": "Exists?", "parameters": {"path": "p"}, "effect": "files.exists"},
             "stat": {"description": "Exists?", "parameters": {"path": "p"}, "effect": "files.exists"},
             "write": {"description": "Write", "parameters": {"path": "p", "content": "c"}, "effect": "files.write"}}
    suite = write_suite(tmp_path, [{"id": "s", "input": "go", "expected_state": {
        "unchanged": ["big.txt"], "files": {"n.txt": "y"}, "no_other_changes": True}}], base_url=server.url,
        tools=tools, environment={"files": {"big.txt": big}}, graders={"final": {"kind": "final_state"}})
    out = tmp_path / "out"
    result = run_cli("run", str(suite), "-o", str(out), "--repeats", "2")
    assert result.returncode == 0, result.stderr
    lines = read_jsonl(out / "results.jsonl")
    assert len(lines) == 2 and all(line["grades"]["final"]["score"] == 1.0 for line in lines)
    # before: every exists call stored the text twice (before and after): 3.6 MB for these two lines
    assert (out / "results.jsonl").stat().st_size < 100_000


# ---- isolation: repeats, concurrency and --resume ------------------------------------------------------------------

def _refund_suite(tmp_path: Path, server: ScriptedServer, n: int) -> Path:
    server.script = agent_script({"refund": [call("get", {"id": "1"}), call("refund", {"id": "1", "amount": 40}),
                                             call("append", {"path": "log.txt", "content": "refunded 1\n"}),
                                             text("refunded")]})
    tools = {"get": {"description": "Get", "parameters": {"id": "i"}, "effect": {"records.get": "orders"}},
             "refund": {"description": "Refund", "parameters": {"id": "i", "amount": {"type": "number"}},
                        "effect": {"records.update": "orders", "set": {"status": "refunded"}, "fields": ["amount"]}},
             "append": {"description": "Log", "parameters": {"path": "p", "content": "c"}, "effect": "files.append"}}
    rows = [{"id": f"r{i}", "input": "refund it", "expected_state": {
        "records": {"orders": {"1": {"status": "refunded", "amount": 40}}}, "files": {"log.txt": "refunded 1\n"},
        "no_other_changes": True}} for i in range(n)]
    return write_suite(tmp_path, rows, base_url=server.url, tools=tools, concurrency=4,
                       environment={"records": {"orders": [{"id": "1", "status": "delivered", "amount": 40}]}},
                       graders={"final": {"kind": "final_state"}},
                       gate={"kind": "weighted_average", "aggregation": "avg_score", "op": "gte", "value": 1.0})


def _assert_fresh_world(line: dict[str, Any]) -> None:
    """A carried-over or shared world would show the log appended twice, or the refund as no change."""
    assert line["error"] is None and line["grades"]["final"]["score"] == 1.0, line["grades"]
    assert line["trajectory"]["state_changes"] == [
        {"kind": "file", "target": "log.txt", "before": None, "after": "refunded 1\n"},
        {"kind": "record", "target": "orders/1", "before": {"id": "1", "status": "delivered", "amount": 40},
         "after": {"id": "1", "status": "refunded", "amount": 40}}]
    get = line["trajectory"]["turns"][0]["steps"][0]["tool_calls"][0]
    assert json.loads(get["result"])["status"] == "delivered"


def test_resume_of_a_stateful_run_with_repeats_and_concurrency_starts_each_from_the_declared_world(
        tmp_path: Path, server: ScriptedServer) -> None:
    suite = _refund_suite(tmp_path, server, 4)
    out = tmp_path / "out"
    first = run_cli("run", str(suite), "-o", str(out), "--repeats", "3", "-c", "4")
    assert first.returncode == 0, first.stderr
    results = out / "results.jsonl"  # as if killed once r0 and r1 had finished (a resume keeps the run's -n)
    results.write_text("".join(line for line in results.read_text().splitlines(keepends=True)
                               if json.loads(line)["sample_id"] in ("r0", "r1")))
    (out / "summary.json").unlink()
    assert len(read_jsonl(results)) == 6
    requests = len(server.requests)
    resumed = run_cli("run", str(suite), "--resume", str(out), "--repeats", "3", "-c", "4")
    assert resumed.returncode == 0, resumed.stderr
    lines = read_jsonl(out / "results.jsonl")
    assert sorted((line["sample_id"], line["repeat"]) for line in lines) == [
        (f"r{i}", k) for i in range(4) for k in range(3)]
    assert len(server.requests) - requests == 6 * 4  # only the six missing runs, four model calls each
    for line in lines:
        _assert_fresh_world(line)


def test_final_state_with_nothing_to_check_is_not_applicable_never_a_pass() -> None:
    # an expected state that names nothing can no longer be written (above); one built in code gets n/a, where it
    # got "all 0 expectation(s) met" (1.0), or a ZeroDivisionError with score: fraction
    sample, trajectory = acted(None, ("write", {"path": "README.md", "content": "anything"}))
    empty = ExpectedState.model_construct(records={"orders": {}})
    for mode in ("binary", "fraction"):
        grader = final(score=mode)
        grader.spec = grader.spec.model_copy(update={"expected_state": empty})
        grade = grade_with(grader, trajectory, sample)
        assert grade.applicable is False and grade.error is None, grade  # n/a: not counted as a pass
        assert grade.rationale == "the expected state names nothing to check"
