"""A suite file read once at the start of a run: its kind, the models it names and its full load all read the
same text, so the file is opened once however many steps of the start look at it (and a file that changes while
a run starts cannot give two steps two suites)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evals_cli.errors import ConfigError
from evals_cli.suite.yaml_file import read_text


@dataclass(frozen=True)
class SuiteSource:
    path: Path
    _text: str | None
    _error: ConfigError | None

    @classmethod
    def read(cls, path: str | Path) -> SuiteSource:
        """The file's text, or the ConfigError reading it gave, kept to be raised by the step that loads it (the
        live loader reports a file it cannot read at its own place in the list of problems)."""
        try:
            return cls(Path(path), read_text(Path(path), "suite file"), None)
        except ConfigError as exc:
            return cls(Path(path), None, exc)

    def text(self) -> str:
        if self._error is not None:
            raise ConfigError(self._error.problems)
        assert self._text is not None
        return self._text
