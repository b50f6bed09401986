"""A stateful sample's world in the reports: `evals report` prints each changed file or record as a compact diff,
the HTML report shows the final state per sample and each tool call's effect beside the call, everything
escaped. Built from hand-made results, the way the runner writes them."""

from __future__ import annotations

import json
from pathlib import Path

from evals_cli.display.state_diff import describe_change, describe_effect, diff_lines
from evals_cli.exporters import render_html
from evals_cli.models.trajectory import EffectRecord, StateChange
from tests.helpers import run_cli
from tests.run_factory import XSS, make_result, make_summary, tool_call, write_run
from tests.test_html_report import Page

CONFIG = json.dumps({"host": "localhost", "port": 8080, "debug": False})
PORT_3000 = json.dumps({"host": "localhost", "port": 3000, "debug": False}, indent=2)
ORDER = {"id": "12345", "status": "delivered", "amount": 40}
REFUNDED = {"id": "12345", "status": "refunded", "amount": 40}


def stateful_results() -> list:  # type: ignore[type-arg]
    """The port updated (JSON file), a refund (record), a clobbered file with a created one, an untouched world,
    and a sample without any environment."""
    read = tool_call("read_file", {"path": "config.json"}, CONFIG,
                     effect=EffectRecord(op="files.read", target="config.json", before=CONFIG, after=CONFIG))
    write = tool_call("write_file", {"path": "config.json", "content": PORT_3000}, "written",
                      effect=EffectRecord(op="files.write", target="config.json", changed=True, before=CONFIG,
                                    after=PORT_3000))
    port = make_result("update-port", {"final": 1.0}, calls=[read, write])
    port.trajectory.state_changes = [StateChange(kind="file", target="config.json", before=CONFIG, after=PORT_3000)]

    refund = tool_call("issue_refund", {"order_id": "12345", "amount": 40}, "refunded",
                       effect=EffectRecord(op="records.update", target="orders/12345", changed=True, before=ORDER,
                                     after=REFUNDED))
    missing = tool_call("get_order", {"order_id": "999"}, "error: no order 999", is_error=True,
                        effect=EffectRecord(op="records.get", target="orders/999", error="no order 999"))
    refunded = make_result("refund", {"final": 1.0}, calls=[missing, refund])
    refunded.trajectory.state_changes = [StateChange(kind="record", target="orders/12345", before=ORDER,
                                                     after=REFUNDED)]

    clobber = tool_call("write_file", {"path": "config.json", "content": "port=3000"}, "written",
                        effect=EffectRecord(op="files.write", target="config.json", changed=True, before=CONFIG,
                                      after="port=3000"))
    bad = make_result("clobber", {"final": 0.0}, calls=[clobber], rationale=f"config.json: not JSON {XSS}")
    bad.trajectory.state_changes = [
        StateChange(kind="file", target="config.json", before=CONFIG, after="port=3000"),
        StateChange(kind="file", target=f"notes{XSS}.txt", before=None, after=f"hello {XSS}\nsecond line"),
        StateChange(kind="file", target="README.md", before="# demo", after=None),
    ]

    lookup = make_result("lookup", {"final": 1.0}, calls=[tool_call(
        "get_order", {"order_id": "12345"}, json.dumps(ORDER),
        effect=EffectRecord(op="records.get", target="orders/12345", before=ORDER, after=ORDER))])
    lookup.trajectory.state_changes = []
    plain = make_result("no-environment", {"final": 1.0})
    return [port, refunded, bad, lookup, plain]


def test_json_file_shows_changed_keys_not_lines() -> None:
    status, lines = diff_lines(CONFIG, PORT_3000, is_record=False)
    assert status == "changed"
    assert [line.render() for line in lines] == ["~ port: 8080 → 3000"]
    nested_before = json.dumps({"db": {"host": "a", "port": 1}, "old": "x"})
    nested_after = json.dumps({"db": {"host": "a", "port": "1"}, "new": [1]})
    _, lines = diff_lines(nested_before, nested_after, is_record=False)
    assert [line.render() for line in lines] == ['~ db.port: 1 → "1"', '- old: "x"', "+ new: [1]"]


def test_same_json_reformatted_and_plain_text_diffs() -> None:
    status, lines = diff_lines(CONFIG, json.dumps(json.loads(CONFIG), indent=4), is_record=False)
    assert status == "changed" and [line.text for line in lines] == ["same JSON data, formatted differently"]
    before = "\n".join(f"line {i}" for i in range(10))
    after = before.replace("line 2", "line two").replace("line 8", "line eight")
    _, lines = diff_lines(before, after, is_record=False)
    assert [line.render() for line in lines] == [
        "  line 1", "- line 2", "+ line two", "  line 3", "@ …", "  line 7", "- line 8", "+ line eight", "  line 9"]


def test_created_deleted_and_records() -> None:
    created = describe_change(StateChange(kind="record", target="orders/77", after={"id": "77", "amount": 5}))
    assert created.head == "record orders/77 created"
    assert [line.render() for line in created.lines] == ['+ id: "77"', "+ amount: 5"]
    deleted = describe_change(StateChange(kind="file", target="README.md", before="# demo\ntext"))
    assert deleted.head == "file README.md deleted"
    assert [line.render() for line in deleted.lines] == ["- # demo", "- text"]
    changed = describe_change(StateChange(kind="record", target="orders/12345", before=ORDER, after=REFUNDED))
    assert [line.render() for line in changed.lines] == ['~ status: "delivered" → "refunded"']
    empty = describe_change(StateChange(kind="file", target="empty.txt", before=None, after=""))
    assert empty.status == "created" and [line.text for line in empty.lines] == ["(empty)"]


def test_a_huge_change_is_capped() -> None:
    big = "\n".join(f"row {i} " + "x" * 500 for i in range(1000))
    view = describe_change(StateChange(kind="file", target="dump.txt", after=big))
    assert len(view.lines) == 20 and view.lines[-1].render() == "… 981 more lines"
    assert all(len(line.text) <= 80 for line in view.lines)
    status, lines = diff_lines("a", "a\nb\nc", is_record=False)
    assert status == "changed" and lines[-1].render() == "+ c"


def test_control_characters_the_agent_wrote_are_spelled_out(tmp_path: Path) -> None:
    result = make_result("ansi", {"final": 0.0})
    result.trajectory.state_changes = [StateChange(kind="file", target="log\x1b[2J.txt", before="ok",
                                                   after="\x1b[31mred\x1b[0m\x07")]
    view = describe_change(result.trajectory.state_changes[0])
    assert view.head == "file log\\x1b[2J.txt changed"
    assert [line.render() for line in view.lines] == ["- ok", "+ \\x1b[31mred\\x1b[0m\\x07"]
    out = run_cli("report", str(write_run(tmp_path / "run", [result], make_summary([result]))))
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout
    assert "      + \\x1b[31mred\\x1b[0m\\x07" in out.stdout


def test_effect_phrases() -> None:
    assert describe_effect(EffectRecord(op="files.read", target="a.txt", before="x", after="x")).head == \
        "files.read a.txt: no change"
    failed = describe_effect(EffectRecord(op="files.read", target="b.txt", error="No such file or directory: 'b.txt'"))
    assert failed.status == "error" and failed.head == "files.read b.txt: error: No such file or directory: 'b.txt'"
    refund = describe_effect(EffectRecord(op="records.update", target="orders/12345", changed=True, before=ORDER,
                                    after=REFUNDED))
    assert refund.head == "records.update orders/12345: changed"
    assert [line.render() for line in refund.lines] == ['~ status: "delivered" → "refunded"']


def test_evals_report_prints_each_changed_world(tmp_path: Path) -> None:
    results = stateful_results()
    run = write_run(tmp_path / "run", results, make_summary(results))
    out = run_cli("report", str(run))
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "what the agent changed in 3 sample runs (final state against the declared one):" in text
    section = text[text.index("what the agent changed"):]
    lines = [line.rstrip() for line in section.splitlines()]
    start = lines.index("  update-port")
    assert lines[start:start + 3] == ["  update-port", "    file config.json changed", "      ~ port: 8080 → 3000"]
    start = lines.index("  refund")
    assert lines[start:start + 3] == ["  refund", "    record orders/12345 changed",
                                      '      ~ status: "delivered" → "refunded"']
    start = lines.index("  clobber")
    assert lines[start + 1] == "    file config.json changed"
    assert "      - {\"host\": \"localhost\", \"port\": 8080, \"debug\": false}" in lines
    assert "      + port=3000" in lines
    assert f"    file notes{XSS}.txt created" in lines and f"      + hello {XSS}" in lines
    assert "    file README.md deleted" in lines and "      - # demo" in lines
    # a world left as it was, and a sample without one, have nothing to show
    assert "  lookup" not in lines and "  no-environment" not in lines


def test_report_names_repeats_and_caps_the_samples_shown(tmp_path: Path) -> None:
    results = []
    for i in range(11):
        for repeat in range(2):
            result = make_result(f"s{i:02d}", {"final": 1.0}, repeat=repeat)
            result.trajectory.state_changes = [StateChange(kind="file", target="n.txt", before="a",
                                                           after=f"repeat {repeat}")]
            results.append(result)
    out = run_cli("report", str(write_run(tmp_path / "run", results, make_summary(results))))
    lines = [line.rstrip() for line in out.stdout.splitlines()]
    assert "what the agent changed in 22 sample runs (final state against the declared one):" in lines
    start = lines.index("  s00 (repeat 2)")
    assert lines[start:start + 4] == ["  s00 (repeat 2)", "    file n.txt changed", "      - a", "      + repeat 1"]
    assert sum(1 for line in lines if line.startswith("  s") and "(repeat" in line) == 20
    assert f"  … and 2 more: see evals report {tmp_path / 'run'} --html report.html" in lines


def test_a_run_without_environments_prints_no_state_section(tmp_path: Path) -> None:
    results = [make_result("plain", {"final": 1.0})]
    out = run_cli("report", str(write_run(tmp_path / "run", results, make_summary(results))))
    assert out.returncode == 0 and "what the agent changed" not in out.stdout


def test_html_report_shows_final_state_and_effects_escaped() -> None:
    results = stateful_results()
    markup = render_html(results, make_summary(results))
    assert XSS not in markup
    page = Page(markup)
    assert len(page.find("script")) == 1
    text = page.text
    # the final state, per sample that has an environment: four sections (one of them unchanged)
    assert markup.count("<h3>Final state</h3>") == 4
    targets = [a["data-target"] for a in page.find("div", class_="state-change")]
    assert targets == ["config.json", "orders/12345", "config.json", f"notes{XSS}.txt", "README.md"]
    assert [a["class"] for t, a in page.tags if t == "span" and "state-status" in a.get("class", "")] == [
        "state-status changed", "state-status changed", "state-status changed", "state-status created",
        "state-status deleted"]
    assert "~ port: 8080 → 3000" in text and '~ status: "delivered" → "refunded"' in text
    assert f"+ hello {XSS}" in text and "- # demo" in text
    assert len(page.find("p", class_="state-unchanged")) == 1
    # each stateful call's effect beside it (in the call's summary line), and its diff in the call
    effects = [a["class"] for t, a in page.tags if t == "span" and "effect" in a.get("class", "").split()]
    assert effects == ["effect no-change", "effect changed", "effect error", "effect changed", "effect changed",
                       "effect no-change"]
    assert "files.write config.json: changed" in text and "records.get orders/999: error: no order 999" in text
    assert len(page.find("pre", class_="diff")) == 5 + 3  # five changes, three changed calls


def test_html_report_of_a_run_without_environments_has_no_state_section() -> None:
    results = [make_result("plain", {"final": 1.0}, calls=[tool_call("read_file", {"path": ".env"}, "x")])]
    markup = render_html(results, make_summary(results))
    assert "Final state" not in markup and 'class="effect' not in markup
