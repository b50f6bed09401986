"""A recorded chat completion read without the openai SDK.

Building the SDK's `ChatCompletion` means importing the openai package, whose `__init__` imports every type of
every API (about a quarter of a second, a tenth of a replay run of 10,000 samples). A recorded reply of the
plain shape the agent loop, the judge and the user simulator read (choices with a message, its text and
function tool calls, the finish reason, the token counts) is served from its JSON instead, attribute for
attribute as `ChatCompletion.construct` would give it (a missing field reads None). A reply of any other shape,
a malformed one above all, is left to the SDK's `construct` exactly as before, so it is read, and refused,
the same way; and any attribute beyond the plain ones (`model`, `model_dump()`, a choice's `logprobs`...) is
read from the SDK object, built on first use, so code that reads more sees what it saw before.
"""

from __future__ import annotations

from typing import Any


class _Part:
    """One object of the reply: its plain fields are set at construction; anything else comes from the
    corresponding SDK object (`_sdk` finds it inside the whole reply's SDK object)."""

    _root: RecordedChatCompletion

    def _sdk(self) -> Any:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:  # only reached for a name not set at construction
        if name.startswith("__") or name in ("_root", "_payload", "_real", "_where"):
            raise AttributeError(name)
        return getattr(self._sdk(), name)

    def __repr__(self) -> str:
        return repr(self._sdk())


class RecordedChatCompletion(_Part):
    """A recorded chat completion of the plain shape (see `plain_chat_completion`)."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self._root = self
        self._payload = payload
        self._real: Any = None
        self.choices = [_Choice(self, i, c) for i, c in enumerate(payload["choices"])]
        usage = payload.get("usage")
        self.usage = _Usage(self, usage) if usage is not None else None

    def _sdk(self) -> Any:
        if self._real is None:
            from openai.types.chat import ChatCompletion

            self._real = ChatCompletion.construct(**self._payload)
        return self._real


class _Choice(_Part):
    def __init__(self, root: RecordedChatCompletion, index: int, data: dict[str, Any]) -> None:
        self._root, self._where = root, index
        self.finish_reason = data.get("finish_reason")
        self.message = _Message(root, index, data["message"])

    def _sdk(self) -> Any:
        return self._root._sdk().choices[self._where]


class _Message(_Part):
    def __init__(self, root: RecordedChatCompletion, choice: int, data: dict[str, Any]) -> None:
        self._root, self._where = root, choice
        self.content = data.get("content")
        calls = data.get("tool_calls")
        self.tool_calls = None if calls is None else [_ToolCall(root, (choice, i), c) for i, c in enumerate(calls)]

    def _sdk(self) -> Any:
        return self._root._sdk().choices[self._where].message


class _ToolCall(_Part):
    def __init__(self, root: RecordedChatCompletion, where: tuple[int, int], data: dict[str, Any]) -> None:
        self._root, self._where = root, where
        self.id = data.get("id")
        self.type = data.get("type")
        self.function = _Function(root, where, data["function"])

    def _sdk(self) -> Any:
        return self._root._sdk().choices[self._where[0]].message.tool_calls[self._where[1]]


class _Function(_Part):
    def __init__(self, root: RecordedChatCompletion, where: tuple[int, int], data: dict[str, Any]) -> None:
        self._root, self._where = root, where
        self.name = data.get("name")
        self.arguments = data.get("arguments")

    def _sdk(self) -> Any:
        return self._root._sdk().choices[self._where[0]].message.tool_calls[self._where[1]].function


class _Usage(_Part):
    def __init__(self, root: RecordedChatCompletion, data: dict[str, Any]) -> None:
        self._root = root
        self.prompt_tokens = data.get("prompt_tokens")
        self.completion_tokens = data.get("completion_tokens")
        self.total_tokens = data.get("total_tokens")

    def _sdk(self) -> Any:
        return self._root._sdk().usage


def _text(value: Any) -> bool:
    return value is None or type(value) is str


def _count(value: Any) -> bool:
    return value is None or type(value) is int


def _plain_call(call: Any) -> bool:
    if not isinstance(call, dict) or call.get("type") != "function" or not _text(call.get("id")):
        return False
    function = call.get("function")
    return isinstance(function, dict) and _text(function.get("name")) and _text(function.get("arguments"))


def _plain_choice(choice: Any) -> bool:
    if not isinstance(choice, dict) or not _text(choice.get("finish_reason")):
        return False
    message = choice.get("message")
    if not isinstance(message, dict) or not _text(message.get("content")):
        return False
    calls = message.get("tool_calls")
    return calls is None or (type(calls) is list and all(_plain_call(c) for c in calls))


def plain_chat_completion(payload: dict[str, Any]) -> bool:
    """Whether a recorded reply has the plain shape, where every value `RecordedChatCompletion` serves is the
    one `ChatCompletion.construct` gives (a string, an int or None: construct keeps those as they are); nested
    objects must be JSON objects, tool calls function calls, and token counts ints."""
    choices, usage = payload.get("choices"), payload.get("usage")
    if type(choices) is not list or not all(_plain_choice(c) for c in choices):
        return False
    return usage is None or (isinstance(usage, dict) and all(
        _count(usage.get(k)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")))
