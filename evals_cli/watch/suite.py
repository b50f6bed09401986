"""A watch suite: graders, a gate, `judge:`, `pricing:` and a `watch:` block; no target and no dataset.

It is loaded as the ordinary suite it stands for: the conversations it grades are recorded ones, so its target
is `kind: traces` (fed live by grading.py, never reading a file) and each finished conversation is a sample
named by its conversation id. Every problem is said at its line, as the run's loader says it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evals_cli.errors import ConfigError
from evals_cli.models.specs import cross_check_raw
from evals_cli.suite.problems import format_validation_error
from evals_cli.suite.spec import SuiteSpec
from evals_cli.suite.yaml_file import line_finder, problem_at, read_yaml_mapping_at_paths
from evals_cli.watch.spec import WatchSpec

LIVE = "live OTLP"  # what the suite's target and dataset stand for: the traffic the endpoint takes
NOT_FOR_WATCH = {"target": "the agent is not called: its telemetry is what is graded",
                 "dataset": "each finished conversation is a sample",
                 "repeats": "a conversation happened once", "max_samples": "use --once DURATION to stop"}


@dataclass(frozen=True)
class WatchSuite:
    """The ordinary suite a watch suite stands for, and its `watch:` block."""

    suite: SuiteSpec
    watch: WatchSpec
    path: Path


def load_watch_suite(path: Path) -> WatchSuite:
    """ConfigError (exit 2) listing every problem at its line."""
    where = str(path)
    data, lines, problems, env_problems = read_yaml_mapping_at_paths(path, "suite file", "a mapping of suite keys "
                                                                     "(name, graders, gate, watch, ...)")
    line_of = line_finder(lines)
    problems += [problem_at(where, line_of, p, msg) for p, msg in env_problems]
    problems += [problem_at(where, line_of, (key,), f"does not apply to evals watch: {why}; remove it")
                 for key, why in NOT_FOR_WATCH.items() if key in data]
    raw_watch = data.pop("watch", None) or {}
    watch = WatchSpec()
    try:
        watch = WatchSpec.model_validate(raw_watch)
    except ValidationError as exc:
        problems += [problem_at(where, line_of, ("watch",), message) for message in _messages(exc)]
    ordinary: dict[str, Any] = {k: v for k, v in data.items() if k not in NOT_FOR_WATCH}
    ordinary.update(target={"kind": "traces", "path": LIVE}, dataset=LIVE)
    problems += [problem_at(where, line_of, p, msg) for p, msg in cross_check_raw(ordinary)]
    try:
        suite = SuiteSpec.model_validate(ordinary)
    except ValidationError as exc:
        problems += format_validation_error(exc, SuiteSpec, where, line_of)
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    suite._base_dir = path.resolve().parent
    return WatchSuite(suite, watch, path)


def _messages(exc: ValidationError) -> list[str]:
    """Each error of the watch block as `watch.FIELD: message`."""
    out = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        out.append(f"watch.{field}: {message}" if field else f"watch: {message}")
    return out
