"""Start the shared llama.cpp server (`local-model/serve.py`, chat format `qwen25-tools`) with one repair to its
tool-call parser, run by the runtime's own Python (tests/real_model_server.py starts it; never imported by tests).

Usage: python tests/local_model_serve.py SHARED_DIR --model MODEL.gguf --host 127.0.0.1 --port 8101 ...

Qwen2.5's GGUF chat template shows the call format as `{{"name": ..., "arguments": ...}}`, the doubled braces
of a template escape, and the 1.5B model copies them: `<tool_call>{{"name": "read_file", ...}}</tool_call>`.
The shared parser reads JSON only, so every such call came back as plain text and the agent looked as if it never
used a tool. Here the parser first drops the extra brace layer, so those calls reach evals-cli as tool calls;
everything else (the template, single-call stopping, what is text) is the shared format unchanged. The shared
folder is read-only for this project, hence a wrapper rather than an edit there.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

_DOUBLED = re.compile(r"\{\{(.*)\}\}", re.S)


def single_braces(text: str) -> str:
    """`{{...}}` (possibly inside tags or beside prose) with one brace layer dropped, repeatedly; other text as is."""
    previous = None
    while previous != text:
        previous, text = text, _DOUBLED.sub(lambda m: "{" + m.group(1) + "}", text)
    return text


def repaired(parse: Callable[[str], list[dict[str, Any]]]) -> Callable[[str], list[dict[str, Any]]]:
    """The shared parser, given the text with doubled braces undone when it finds no call in the text as written."""

    def parse_tool_calls(text: str) -> list[dict[str, Any]]:
        return parse(text) or parse(single_braces(text or ""))

    return parse_tool_calls


def main() -> None:
    shared, argv = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, f"{shared}/local-model")
    import qwen_tools  # the shared module registers chat format "qwen25-tools"; it calls parse_tool_calls by name

    qwen_tools.parse_tool_calls = repaired(qwen_tools.parse_tool_calls)
    from llama_cpp.server.__main__ import main as serve

    sys.argv = [sys.argv[0], *argv]
    serve()


if __name__ == "__main__":
    main()
