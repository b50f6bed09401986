"""When the rolling gate fails: a line on stderr, and a JSON POST to `watch.webhook` naming the failing
conversations. Said once when the window's gate turns to failed, again only after it passed in between; a
webhook that cannot be reached is counted and said on stderr, never retried in a loop.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from collections.abc import Callable
from typing import Any, TextIO

from evals_cli.watch.verdict import WindowVerdict

WEBHOOK_TIMEOUT_S = 10.0


class Alerts:
    def __init__(self, suite: str, webhook: str | None, stderr: TextIO | None = None,
                 redact: Callable[[str], str] = lambda s: s) -> None:
        self.suite, self.webhook, self.redact = suite, webhook, redact
        self.stderr = stderr or sys.stderr
        self.sent = 0
        self.webhook_errors = 0
        self._failing = False
        self._threads: list[threading.Thread] = []

    def observe(self, verdict: WindowVerdict) -> bool:
        """Alert when the gate turns to failed; whether it did."""
        if verdict.state == "passed":
            self._failing = False
        if verdict.state != "failed" or self._failing:
            return False
        self._failing = True
        self.sent += 1
        shown = ", ".join(verdict.failing[:10]) + (" ..." if len(verdict.failing) > 10 else "")
        print(self.redact(f"evals watch: ALERT {self.suite}: the rolling gate failed: {verdict.message}; failing "
                          f"conversations: {shown or '(none failed: the gate reads the averages)'}"),
              file=self.stderr, flush=True)
        if self.webhook:
            body = self.redact(json.dumps(self.payload(verdict))).encode()
            thread = threading.Thread(target=self._post, args=(body,), daemon=True, name="evals-watch-webhook")
            self._threads.append(thread)
            thread.start()
        return True

    def payload(self, verdict: WindowVerdict) -> dict[str, Any]:
        gate = verdict.summary.gate
        return {"suite": self.suite, "state": verdict.state, "message": verdict.message,
                "metric": gate.metric if gate is not None else None, "samples": verdict.samples,
                "interval": list(verdict.interval) if verdict.interval else None,
                "failing": verdict.failing}

    def _post(self, body: bytes) -> None:
        assert self.webhook is not None
        request = urllib.request.Request(self.webhook, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as reply:  # noqa: S310 (the user's URL)
                reply.read()
        except (OSError, ValueError) as exc:
            self.webhook_errors += 1
            print(f"evals watch: the alert webhook could not be reached ({type(exc).__name__}: {str(exc)[:200]})",
                  file=self.stderr, flush=True)

    def wait(self, timeout: float = WEBHOOK_TIMEOUT_S) -> None:
        """Let the webhooks in flight finish (shutdown)."""
        for thread in self._threads:
            thread.join(timeout)
        self._threads = [t for t in self._threads if t.is_alive()]
