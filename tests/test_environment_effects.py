"""Every effect, through the toolbox the targets use: the text the agent reads, the change to the world, the
Effect recorded on the call, and the errors a real tool would give."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from evals_cli.models.environment import EnvironmentSpec
from evals_cli.models.tools import ToolSpec
from evals_cli.models.trajectory import ToolCall
from tests.helpers import SyncToolbox

ENV = EnvironmentSpec.model_validate({
    "files": {"config.json": '{"port": 8080}', "docs/a.md": "A", "docs/b.md": "B"},
    "records": {"orders": [{"id": "1", "status": "delivered", "amount": 40, "customer": "Ana Silva"},
                           {"id": 2, "status": "shipped", "amount": 9.5, "customer": "Ben"}]},
})


def tool(effect: Any, **parameters: str) -> ToolSpec:
    return ToolSpec.model_validate({"description": "t", "parameters": parameters or {"path": "p"}, "effect": effect})


def toolbox(**tools: ToolSpec) -> SyncToolbox:
    return SyncToolbox(tools, ENV)


def do(box: SyncToolbox, name: str, **arguments: Any) -> ToolCall:
    return box.call("c1", name, json.dumps(arguments))


def test_files_read_returns_the_text_and_changes_nothing() -> None:
    box = toolbox(read=tool("files.read"))
    record = do(box, "read", path="config.json")
    assert (record.result, record.is_error) == ('{"port": 8080}', False)
    assert record.effect is not None and record.effect.target == "config.json" and not record.effect.changed
    assert box.state_changes() == []


@pytest.mark.parametrize(("path", "error"), [("nope.txt", "nope.txt: no such file"), ("docs", "docs: is a directory")])
def test_files_read_errors_read_like_a_real_tool(path: str, error: str) -> None:
    record = do(toolbox(read=tool("files.read")), "read", path=path)
    assert record.result == f"Error: {error}" and record.is_error
    assert record.effect is not None and record.effect.error == error and not record.effect.changed


def test_files_write_creates_or_replaces_and_a_later_read_sees_it() -> None:
    box = toolbox(write=tool("files.write", path="p", content="c"), read=tool("files.read"))
    assert do(box, "write", path="./config.json", content='{"port": 3000}').result == \
        "Wrote 14 characters to config.json"
    assert do(box, "read", path="config.json").result == '{"port": 3000}'
    new = do(box, "write", path="new/notes.txt", content={"a": 1})  # an object is written as its JSON text
    assert new.effect is not None and (new.effect.before, new.effect.after) == (None, '{"a": 1}')
    changes = {c.target: (c.before, c.after) for c in box.state_changes() or []}
    assert changes == {"config.json": ('{"port": 8080}', '{"port": 3000}'), "new/notes.txt": (None, '{"a": 1}')}


def test_files_write_without_content_is_an_error_not_an_empty_file() -> None:
    box = toolbox(write=tool("files.write", path="p", content="c"))
    record = do(box, "write", path="x.txt")
    assert record.result == "Error: missing argument 'content' (the text to write)" and record.is_error
    assert box.state_changes() == []


def test_files_append_adds_to_the_end_and_creates_a_missing_file() -> None:
    box = toolbox(append=tool("files.append", path="p", content="c"))
    assert do(box, "append", path="docs/a.md", content="+").result == "Appended 1 characters to docs/a.md"
    do(box, "append", path="log.txt", content="first")
    changes = {c.target: (c.before, c.after) for c in box.state_changes() or []}
    assert changes == {"docs/a.md": ("A", "A+"), "log.txt": (None, "first")}


@pytest.mark.parametrize(("directory", "listing"), [
    (None, "config.json\ndocs/a.md\ndocs/b.md"), ("docs", "docs/a.md\ndocs/b.md"), ("./docs/", "docs/a.md\ndocs/b.md"),
    ("/", "config.json\ndocs/a.md\ndocs/b.md")])
def test_files_list_lists_every_file_under_the_folder(directory: str | None, listing: str) -> None:
    args = {} if directory is None else {"directory": directory}
    record = do(toolbox(ls=tool("files.list", directory="d")), "ls", **args)
    assert (record.result, record.is_error) == (listing, False)


def test_files_list_of_a_missing_folder_and_of_an_empty_world() -> None:
    assert do(toolbox(ls=tool("files.list", directory="d")), "ls", directory="src").result == \
        "Error: src: no such directory"
    empty = SyncToolbox({"ls": tool("files.list", directory="d")}, EnvironmentSpec())
    assert do(empty, "ls").result == "(no files)"


def test_files_delete_removes_the_file_and_a_second_delete_fails() -> None:
    box = toolbox(rm=tool("files.delete"))
    assert do(box, "rm", path="docs/b.md").result == "Deleted docs/b.md"
    again = do(box, "rm", path="docs/b.md")
    assert again.result == "Error: docs/b.md: no such file" and again.is_error
    assert [(c.target, c.before, c.after) for c in box.state_changes() or []] == [("docs/b.md", "B", None)]


def test_files_exists_answers_true_or_false() -> None:
    box = toolbox(exists=tool("files.exists"))
    assert [do(box, "exists", path=p).result for p in ("config.json", "docs", "gone.txt")] == ["true", "true", "false"]


def test_records_get_by_a_key_parameter_whatever_the_id_type() -> None:
    box = toolbox(get=tool({"records.get": "orders", "key": "order_id"}, order_id="id"))
    assert json.loads(do(box, "get", order_id=1).result)["status"] == "delivered"
    assert json.loads(do(box, "get", order_id="2").result)["amount"] == 9.5
    missing = do(box, "get", order_id="3")
    assert missing.result == "Error: orders/3: not found" and missing.effect and missing.effect.target == "orders/3"


def test_records_list_and_search() -> None:
    box = toolbox(ls=tool({"records.list": "orders"}, x="unused"),
                  find=tool({"records.search": "orders"}, customer="name", status="status"))
    assert [r["id"] for r in json.loads(do(box, "ls").result)] == ["1", 2]
    assert [r["id"] for r in json.loads(do(box, "find", customer="ana").result)] == ["1"]
    assert json.loads(do(box, "find", customer="ana", status="shipped").result) == []


def test_records_create_with_and_without_an_id() -> None:
    box = toolbox(new=tool({"records.create": "orders", "key": "order_id", "set": {"status": "new"}},
                           order_id="id", amount="amount"),
                  add=tool({"records.create": "orders", "fields": ["amount"]}, amount="amount", note="n"))
    created = do(box, "new", order_id="9", amount=5)
    assert json.loads(created.result) == {"id": "9", "amount": 5, "status": "new"}
    assert do(box, "new", order_id="1", amount=1).result == "Error: orders/1: already exists"
    auto = json.loads(do(box, "add", amount=7, note="ignored").result)
    assert auto == {"id": "4", "amount": 7}  # the next free number after the 3 records
    assert [c.target for c in box.state_changes() or []] == ["orders/9", "orders/4"]


def test_records_update_sets_fixed_values_and_chosen_arguments() -> None:
    box = toolbox(refund=tool({"records.update": "orders", "key": "order_id", "set": {"status": "refunded"},
                               "fields": {"amount": "refunded_amount"}}, order_id="id", amount="amount"),
                  edit=tool({"records.update": "orders"}, id="id", status="s"),
                  get=tool({"records.get": "orders"}, id="id"))
    looked = do(box, "get", id="1")
    refunded = do(box, "refund", order_id="1", amount=40)
    assert json.loads(refunded.result)["status"] == "refunded" and refunded.effect and refunded.effect.changed
    assert refunded.effect.before["status"] == "delivered" and refunded.effect.after["refunded_amount"] == 40
    do(box, "edit", id=2, status="lost")  # no `set`: every argument but the key is copied
    same = do(box, "edit", id=2, status="lost")
    assert same.effect is not None and same.effect.changed is False
    assert do(box, "edit", id=7, status="x").result == "Error: orders/7: not found"
    after = {c.target: c.after for c in box.state_changes() or []}
    assert after["orders/1"] == {"id": "1", "status": "refunded", "amount": 40, "customer": "Ana Silva",
                                 "refunded_amount": 40}
    assert after["orders/2"]["status"] == "lost" and after["orders/2"]["id"] == 2
    assert json.loads(looked.result)["status"] == "delivered"  # what it saw then: a later update does not rewrite it
    assert looked.effect is not None and (looked.effect.before, looked.effect.after) == (None, None)  # no copy
    assert (same.effect.before, same.effect.after) == (None, None)


def test_records_delete() -> None:
    box = toolbox(rm=tool({"records.delete": "orders"}, id="id"))
    assert do(box, "rm", id="1").result == "Deleted orders/1"
    assert do(box, "rm", id="1").result == "Error: orders/1: not found"
    [change] = box.state_changes() or []
    assert (change.kind, change.target, change.after) == ("record", "orders/1", None)


def test_a_collection_the_world_lacks_and_a_bad_key_are_errors_for_the_agent() -> None:
    box = SyncToolbox({"get": tool({"records.get": "users"}, id="id")}, ENV)
    assert do(box, "get", id="1").result == "Error: no collection 'users'"
    box = toolbox(get=tool({"records.get": "orders"}, id="id"))
    assert do(box, "get", id={"x": 1}).result == "Error: argument 'id' must be an id, got dict"


def test_cases_still_answer_first_on_a_stateful_tool_and_canned_tools_work_beside() -> None:
    read = ToolSpec.model_validate({"parameters": {"path": "p"}, "effect": "files.read",
                                    "cases": [{"when": {"path": "secret.txt"}, "error": "permission denied"}]})
    canned = ToolSpec.model_validate({"parameters": {"q": "q"}, "returns": "42"})
    box = toolbox(read=read, ask=canned)
    denied = do(box, "read", path="secret.txt")
    assert denied.result == "Error: permission denied" and denied.effect is None
    assert do(box, "read", path="config.json").result == '{"port": 8080}'
    answered = do(box, "ask", q="?")
    assert answered.result == "42" and answered.effect is None


def test_each_toolbox_has_its_own_world() -> None:
    first, second = toolbox(write=tool("files.write", path="p", content="c")), toolbox(read=tool("files.read"))
    do(first, "write", path="config.json", content="changed")
    assert do(second, "read", path="config.json").result == '{"port": 8080}'
    assert ENV.files["config.json"] == '{"port": 8080}'  # the declaration itself is never touched


def test_no_environment_and_no_effect_means_no_state() -> None:
    box = SyncToolbox({"ask": ToolSpec.model_validate({"returns": "x"})})
    assert box.state_changes() is None


@pytest.mark.parametrize(("spec", "message"), [
    ({"parameters": {"filename": "f"}, "effect": "files.read"},
     "effect.path: files.read reads argument 'path', which the tool does not declare (parameters: filename)"),
    ({"parameters": {"order": "o"}, "effect": {"records.get": "orders", "key": "order_id"}},
     "did you mean key: order?"),
    ({"parameters": {"path": "p"}, "effect": "files.raed"}, "unknown effect 'files.raed'; did you mean 'files.read'?"),
    ({"parameters": {"path": "p"}, "effect": "files.read", "returns": "x"}, "a tool with an effect computes its result"),
    ({"parameters": {"id": "i"}, "effect": "records.get"}, "records.get acts on a records collection"),
    ({"parameters": {"path": "p"}, "effect": {"files.read": None, "set": {"a": 1}}}, "'set' applies to records.create"),
])
def test_a_tool_effect_is_checked_when_the_suite_loads(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        ToolSpec.model_validate(spec)
    assert message in str(exc.value)


def test_a_stateful_tool_needs_no_returns() -> None:
    spec = ToolSpec.model_validate({"parameters": {"path": "p"}, "effect": "files.read"})
    assert spec.has_result()


def test_row_environment_merge_rule() -> None:
    row = EnvironmentSpec.model_validate({"files": {"README.md": None, "./extra.txt": "x"},
                                          "records": {"orders": [{"id": 1, "status": "lost"}, {"id": "5"}]}})
    merged = ENV.merged(row)
    assert set(merged.files) == {"config.json", "docs/a.md", "docs/b.md", "extra.txt"}
    assert merged.records["orders"] == [{"id": 1, "status": "lost"}, {"id": 2, "status": "shipped", "amount": 9.5,
                                                                      "customer": "Ben"}, {"id": "5"}]
    alone = ENV.merged(EnvironmentSpec.model_validate({"replace": True, "files": {"x": "y"}}))
    assert alone.files == {"x": "y"} and alone.records == {}


@pytest.mark.parametrize(("env", "message"), [
    ({"records": {"orders": [{"status": "x"}]}}, "orders[0]: a record needs an 'id' field"),
    ({"records": {"orders": [{"id": 1}, {"id": "1"}]}}, "id '1' appears twice"),
    ({"files": {"a.txt": "1", "./a.txt": "2"}}, "are the same file"),
])
def test_a_bad_environment_is_refused_with_its_field(env: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as exc:
        EnvironmentSpec.model_validate(env)
    assert message in str(exc.value)
