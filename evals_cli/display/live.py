"""Live progress while a run goes: samples done/errored and the running pass rate, throttled."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from evals_cli.display.state import RunState


class LiveProgress:
    """A Rich live line on terminals; nothing at all elsewhere (CI logs stay clean)."""

    def __init__(self, console: Console, state: RunState, enabled: bool) -> None:
        self.console = console
        self.state = state
        self.enabled = enabled and console.is_terminal
        self._live: Any = None

    def _render(self) -> str:
        s = self.state
        total = f"/{s.total_expected}" if s.total_expected else ""
        rate = "—" if s.pass_rate is None else f"{s.pass_rate:.0%}"
        return f"[bold]running[/] {s.done}{total} done · {s.errored} errored · pass rate {rate}"

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            from rich.live import Live

            self._live = Live(self._render(), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def update(self) -> None:
        if self._live is not None:
            self._live.update(self._render())

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
