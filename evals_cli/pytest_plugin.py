"""`pytest --evals suite.yaml`: a suite's sample runs as pytest tests, so evals live in a team's test suite.

Each suite given is run once per pytest process, at collection (evals_cli/testing.py `run_suite`, the library
API `evals run` uses); each sample run becomes an item `suite.yaml::sample-id[r0]` and one more, `suite.yaml::gate`,
carries the gate's verdict. Outcomes keep the run's three-way verdict:

- a passed sample is a pass, a failed one a failure whose text is its reasons (as `evals report --why full`);
- an errored sample (the endpoint, a judge or a grader failed) is a pytest *error*, raised in the item's setup:
  an error is never a pass or a fail;
- a sample with nothing to check (every grader n/a) is skipped, with that reason;
- the gate item fails when the gate fails, and is an error when the run ended without a verdict (aborted).

A suite that does not load, or options it refuses, stop the session as a usage error (pytest's exit code 4).
Registered through the `pytest11` entry point; `-p evals_cli.pytest_plugin` loads it where that is not installed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from evals_cli.errors import EXIT_GATE_FAILED, EXIT_PASSED
from evals_cli.testing import SampleRun, SuiteRun

_OUTPUT = pytest.StashKey[Path]()
_RUNS = pytest.StashKey[list[SuiteRun]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals", "evals-cli suites as tests")
    group.addoption("--evals", action="append", default=[], metavar="SUITE",
                    help="Run this evals-cli suite and report each sample run as a test (repeatable).")
    group.addoption("--evals-replay", metavar="FILE", default=None,
                    help="Serve every suite's model calls from this recording (evals run --replay): no network.")
    group.addoption("--evals-output", metavar="DIR", default=None,
                    help="Folder for the runs' results, one subfolder per suite (default: a new temporary folder).")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("evals"):
        return
    given = config.getoption("evals_output")
    config.stash[_OUTPUT] = Path(given) if given else Path(tempfile.mkdtemp(prefix="evals-pytest-"))
    config.stash[_RUNS] = []


@pytest.hookimpl(tryfirst=True)  # before -k / -m deselect: the items are there to be selected
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    suites = config.getoption("evals")
    if not suites:
        return
    replay = config.getoption("evals_replay")
    folders = _folders([Path(s) for s in suites], config.stash[_OUTPUT])
    for suite, folder in folders:
        run = _run(suite, folder, replay)
        config.stash[_RUNS].append(run)
        node = SuiteFile.from_parent(session, path=suite.resolve())
        found: list[pytest.Item] = [SampleItem.from_parent(node, name=s.name, sample=s) for s in run.samples]
        found.append(GateItem.from_parent(node, name="gate", run=run))
        # reported as collected, so `collected N items` (and any plugin counting collections) includes them
        config.hook.pytest_collectreport(report=pytest.CollectReport(node.nodeid, "passed", None, list(found)))
        items.extend(found)


def _folders(suites: list[Path], output: Path) -> list[tuple[Path, Path]]:
    """Each suite's results folder under the output: its file's stem, numbered when two suites share one."""
    stems = [s.stem for s in suites]
    return [(s, output / (s.stem if stems.count(s.stem) == 1 else f"{s.stem}-{i + 1}")) for i, s in enumerate(suites)]


def _run(suite: Path, folder: Path, replay: str | None) -> SuiteRun:
    from evals_cli.errors import ConfigError
    from evals_cli.testing import run_suite

    options: dict[str, Any] = {"output": folder}
    if replay:
        options["replay"] = Path(replay)
    try:
        return run_suite(suite, **options)
    except ConfigError as exc:
        raise pytest.UsageError(f"--evals {suite}: " + "; ".join(map(str, exc.problems))) from None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    runs = config.stash.get(_RUNS, [])
    if runs:
        terminalreporter.write_sep("-", "evals")
    for run in runs:
        terminalreporter.write_line(f"evals {run.suite}: {run.gate_message()}; results in {run.output_dir} "
                                    f"(evals report {run.output_dir} --why full)")


class SuiteFile(pytest.File):
    """The suite file the items hang from; its run happened at collection, so it collects nothing itself."""

    def collect(self) -> list[pytest.Item]:
        return []


class SampleItem(pytest.Item):
    """One sample run; its outcome is the run's verdict of it."""

    def __init__(self, *, sample: SampleRun, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sample = sample

    def setup(self) -> None:
        if self.sample.verdict == "error":  # raised in setup: pytest reports an error, not a failure
            pytest.fail(self.sample.reasons(), pytrace=False)

    def runtest(self) -> None:
        if self.sample.verdict == "unchecked":
            pytest.skip(f"{self.sample.name}: nothing it is judged on had anything to check")
        if self.sample.verdict == "failed":
            pytest.fail(self.sample.reasons(), pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


class GateItem(pytest.Item):
    """The suite's gate: failed when the gate failed, an error when the run has no verdict."""

    def __init__(self, *, run: SuiteRun, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run

    def setup(self) -> None:
        if self.run.exit_code not in (EXIT_PASSED, EXIT_GATE_FAILED):  # aborted or interrupted: no verdict to pass or fail
            pytest.fail(self.run.failure_text(), pytrace=False)

    def runtest(self) -> None:
        if self.run.exit_code != EXIT_PASSED:  # each sample's own item says its reasons
            names = ", ".join(s.name for s in self.run.not_passed)
            pytest.fail(self.run.gate_message() + (f"\nnot passed: {names}" if names else ""), pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name
