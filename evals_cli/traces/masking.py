"""Secrets and size for what is written from a trace: traces carry what production sent (keys in headers and
URLs, megabyte tool payloads), and evals-cli writes parts of them into results, reports and HTML. Every text
taken from a trace passes through `TraceCleaner`: the run's own masking (endpoints/secrets.py: the secret values
the trace itself names under secret-looking attribute keys or in URL credentials, and anything that looks like a
credential) and the field cap of text_caps.py, the same two a live run applies."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evals_cli.endpoints.secrets import Redactor, is_secret_name, url_secrets
from evals_cli.text_caps import cap, cap_value, clean_text
from evals_cli.traces.otlp import Span

_URL_KEYS = ("url", "endpoint", "base_url", "address")


def trace_secrets(spans: Iterable[Span]) -> list[str]:
    """The secret values spans name: strings under secret-looking attribute names (the last dotted segment,
    so `http.request.header.authorization` and `llm.api_key` count, `gen_ai.usage.input_tokens` does not), and
    the credentials of URL-valued attributes."""
    found: list[str] = []
    for span in spans:
        for attrs in (span.attributes, span.resource):
            for key, value in attrs.items():
                last = key.rsplit(".", 1)[-1]
                values = value if isinstance(value, list) else [value]
                for item in values:
                    if not isinstance(item, str) or not item:
                        continue
                    if is_secret_name(last):
                        found.append(item)
                        scheme, _, rest = item.partition(" ")
                        if rest and scheme.lower() in ("bearer", "basic", "token"):
                            found.append(rest.strip())
                    elif any(part in last for part in _URL_KEYS) and "://" in item:
                        found += url_secrets(item)
    return found


class TraceCleaner:
    """Masks and caps text and JSON values taken from a trace."""

    def __init__(self, spans: Iterable[Span]) -> None:
        self.redactor = Redactor(trace_secrets(spans))

    def text(self, value: str | None) -> str | None:
        if value is None:
            return None
        masked: str = cap(self.redactor(clean_text(value) or ""))
        return masked

    def value(self, value: Any) -> Any:
        return cap_value(self.redactor.value(value))
