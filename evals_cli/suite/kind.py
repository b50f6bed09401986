"""Which pipeline a suite file is for, read before full validation: a recorded_sessions suite (no live agent,
`evals_cli.sessions`) or a live one (everything else, `evals_cli.runner`). Each pipeline then loads and checks
the file with its own model, so neither model has to know the other's target."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from evals_cli.errors import ConfigError
from evals_cli.suite.source import SuiteSource
from evals_cli.suite.yaml_file import parse_yaml

SuiteKind = Literal["live", "recorded_sessions"]


def suite_kind(path: str | Path | SuiteSource) -> SuiteKind:
    """A cheap look at the file: does its target say recorded_sessions? ("live" when the file cannot be read;
    the live loader then reports why, at its line.)"""
    try:
        source = path if isinstance(path, SuiteSource) else SuiteSource.read(path)
        data, _ = parse_yaml(source.text(), str(source.path))
    except ConfigError:
        return "live"
    target = data.get("target") if isinstance(data, dict) else None
    return "recorded_sessions" if isinstance(target, dict) and target.get("kind") == "recorded_sessions" else "live"
