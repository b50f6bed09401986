"""The local model server's parser repair (tests/local_model_serve.py): Qwen2.5 copies its chat template's
doubled braces, and the calls it means must reach evals-cli as calls, while text that is no call stays text."""

from __future__ import annotations

import json
from typing import Any

from tests.local_model_serve import repaired, single_braces


def json_calls(text: str) -> list[dict[str, Any]]:
    """A stand-in for the shared parser: the JSON object between <tool_call> tags, when it is valid JSON."""
    body = text.partition("<tool_call>")[2].partition("</tool_call>")[0].strip()
    try:
        value = json.loads(body)
    except ValueError:
        return []
    return [value] if isinstance(value, dict) and "name" in value else []


def test_a_call_written_with_doubled_braces_is_read_as_the_call_it_means() -> None:
    text = '<tool_call>\n{{"name": "read_file", "arguments": {"path": "config.json"}}}\n</tool_call>'
    assert json_calls(text) == []
    assert repaired(json_calls)(text) == [{"name": "read_file", "arguments": {"path": "config.json"}}]


def test_a_well_formed_call_and_plain_text_are_left_as_the_shared_parser_reads_them() -> None:
    call = '<tool_call>{"name": "get_order", "arguments": {"order_id": "A1001"}}</tool_call>'
    assert repaired(json_calls)(call) == json_calls(call) != []
    assert repaired(json_calls)("The port is 8080.") == []
    assert single_braces("a {{b}} c") == "a {b} c"
    assert single_braces("no braces") == "no braces"
