"""Run history: the runs under a results folder with each suite's trend (`evals history`), and a local viewer of
that history and every run's report (`evals view`)."""

from __future__ import annotations

from evals_cli.history.entries import ModelLine, RunEntry, Trend, TrendPoint, sparkline, trends
from evals_cli.history.runs import scan_runs

__all__ = ["ModelLine", "RunEntry", "Trend", "TrendPoint", "scan_runs", "sparkline", "trends"]
