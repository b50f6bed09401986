"""The project's own error types and exit codes: every user mistake becomes a ConfigError (exit 2)."""

from __future__ import annotations

EXIT_PASSED = 0
EXIT_GATE_FAILED = 1
EXIT_INVALID = 2
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130


class EvalsError(Exception):
    """Base of every error evals-cli raises on purpose."""

    exit_code = EXIT_INCOMPLETE


class ConfigError(EvalsError):
    """Invalid suite, dataset, rubric or usage. Holds every problem found, each naming where and how to fix it."""

    exit_code = EXIT_INVALID

    def __init__(self, problems: str | list[str]) -> None:
        # the same problem found by two checks (e.g. a NaN seen in the YAML and by the model) is listed once
        self.problems = [problems] if isinstance(problems, str) else list(dict.fromkeys(problems))
        super().__init__("\n".join(self.problems))


class DatasetChanged(ConfigError):
    """A dataset row read back during the run is not the row the check pass validated (the file was rewritten
    after it was checked). Before the first model call it is exit 2; met mid-run it aborts the run (exit 3, no
    verdict, the finished results kept) before that row is run."""


class RunAborted(EvalsError):
    """The run cannot go on (endpoint unreachable, bad credentials, model not found): one message, exit 3."""

    exit_code = EXIT_INCOMPLETE


class NewerFormatError(ConfigError):
    """A file written by a newer evals-cli: never read as today's format, whatever the reader would fall back to."""


def refuse_newer(data: object, newest: int, where: str, what: str) -> None:
    """Refuse a file (or line) that a newer evals-cli wrote: read as today's format, its new fields would be
    dropped or misread in silence, and a verdict rebuilt from it could be false. Older versions are upgraded by
    their readers; a missing version is the oldest."""
    found = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(found, str) and found.strip().isdigit():
        found = int(found)
    if isinstance(found, int) and not isinstance(found, bool) and found > newest:
        raise NewerFormatError(f"{where}: {what} written by a newer evals-cli (schema_version {found}; this evals-cli "
                          f"reads up to {newest}); upgrade evals-cli to read it")


class ToolServerFailed(Exception):
    """An MCP server crashed, hung past its timeout or broke the protocol while the run was going: no later call
    to it can be trusted, so the runner stops the run (exit 3) and keeps what finished. Never a tool error the
    agent sees: the agent did nothing wrong, and grading what followed would score the server, not the agent."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server '{server}': {message}")
        self.server = server


class WorkspaceTooLarge(Exception):
    """An episode's workspace could not be read back whole (past the file-count bound): its final state is
    unknown, so the sample is an error (category tool_server), never graded on a cut list of files. Not fatal:
    the next episode starts from its own folder."""


class WorkspaceUnreadable(WorkspaceTooLarge):
    """An episode's workspace holds a folder or file evals-cli may not read (a `chmod 000` inside): its files
    are unknown, never absent (read as deleted, a `deleted:` expectation would pass), so the sample is an error as
    for WorkspaceTooLarge, and handled wherever that is."""


class SetupFailed(Exception):
    """A sample's `environment.setup` failed (a command exited non-zero or ran past its timeout, or the setup
    function raised): that sample errors with the step's output (category `setup`), and the agent never starts.
    The suite's doing, never the agent's zero."""

    category = "setup"


class SandboxUnavailable(Exception):
    """The sandbox could not be made or used (program missing, image absent, engine failed): the episode is an
    error in category `sandbox`, never a pass or a fail (evals_cli/sandbox)."""
