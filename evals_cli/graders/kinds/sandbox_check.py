"""`kind: sandbox_check`: the episode graded by what its machine says after it. Each check is a command run in the
episode's sandbox once the agent is done (in /workspace, no shell, written as `setup` commands are: `tests:
[python3, -m, pytest, -q]`); the score is the share of checks that exit 0, the end of each failing check's
output in the rationale.

A check that cannot run (killed at its timeout, its program missing, the sandbox gone) is no verdict on the
agent: the grade is an error in category `sandbox` and the sample is errored, never failed or passed. Without
a sandbox (the suite has no `sandbox:`) there is nothing to check: n/a, never 1.0. Under --replay the checks'
recorded results are read back, so a recorded run grades the same with no sandbox.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from evals_cli.endpoints.context import ReplayMiss
from evals_cli.graders.base import GRADERS, GradeContext, Grader
from evals_cli.models.grader_specs.base import GraderBase
from evals_cli.models.results import Grade
from evals_cli.sandbox.base import ExecResult, SandboxUnavailable

NOT_FOUND = 127  # what a shell, env and the sandbox kinds exit with when the program is not there
ERROR_CATEGORY = "sandbox"


class SandboxCheckSpec(GraderBase):
    """Commands run in the episode's sandbox after it; the score is the share that exit 0."""

    kind: Literal["sandbox_check"] = "sandbox_check"
    checks: dict[str, list[str]] = Field(
        min_length=1, description="Check name -> the program and its arguments, run in /workspace with no shell "
        "(e.g. tests: [python3, -m, pytest, -q]); a check passes when it exits 0.")
    timeout: float = Field(default=120.0, gt=0, description="Seconds each check may take; one killed at its "
                           "timeout is an error (category sandbox), not a fail.")
    tail_chars: int = Field(default=600, ge=0, description="Characters of the end of a failing check's output "
                            "kept in the rationale.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables the checks are given.")

    @field_validator("checks", mode="before")
    @classmethod
    def _argument_vectors(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        for name, argv in value.items():
            if isinstance(argv, str):
                raise ValueError(f"checks.{name}: give the program and its arguments as a list of strings (e.g. "
                                 f"[python3, -m, pytest, -q]); a check runs no shell, got the string {argv!r}")
            if not isinstance(argv, list) or not argv:
                raise ValueError(f"checks.{name}: give the program and its arguments as a non-empty list of "
                                 "strings, e.g. [python3, -m, pytest, -q]")
            bad = [item for item in argv if not isinstance(item, str)]
            if bad:
                raise ValueError(f"checks.{name}: every item must be a string; quote {bad[0]!r} "
                                 f"(got {type(bad[0]).__name__})")
        return value


class CheckCannotRun(Exception):
    """A check gave no verdict: it ran past its timeout, or its program is missing."""


def _tail(result: ExecResult, limit: int) -> str:
    text = "\n".join(part.rstrip("\n") for part in (result.stdout, result.stderr) if part.strip())
    if limit == 0 or not text:
        return ""
    return text if len(text) <= limit else "…" + text[-limit:]


@GRADERS.register("sandbox_check", spec=SandboxCheckSpec)
class SandboxCheckGrader(Grader[SandboxCheckSpec]):
    """The share of the checks that exit 0 in the episode's sandbox after it (n/a without one)."""

    async def grade(self, ctx: GradeContext) -> Grade:
        computer = ctx.computer
        if computer is None or not computer.available:
            return Grade.not_applicable("no sandbox: the episode had no machine to run the checks in (give the "
                                        "suite a sandbox: block)")
        outcomes: list[dict[str, Any]] = []
        lines: list[str] = []
        for name, argv in self.spec.checks.items():
            try:
                result = await computer.check(name, argv, timeout=self.spec.timeout, env=self.spec.env or None)
                self._ran(name, argv, result)
            except (SandboxUnavailable, CheckCannotRun) as exc:
                return Grade.failed(f"check {name} could not run: {exc}", error_category=ERROR_CATEGORY,
                                    checks=outcomes)
            except ReplayMiss as exc:  # the recording holds no such check: the replay's fault, never the agent's
                return Grade.failed(f"replay miss: {exc}", error_category="replay", checks=outcomes)
            passed = result.exit_code == 0
            outcomes.append({"name": name, "exit_code": result.exit_code, "passed": passed,
                             "seconds": round(result.seconds, 3), "cut": result.cut})
            tail = "" if passed else _tail(result, self.spec.tail_chars)
            lines.append(f"{name}: {'passed' if passed else f'failed (exit {result.exit_code})'}"
                         + (f"; its output ends:\n{tail}" if tail else ""))
        passed_count = sum(1 for o in outcomes if o["passed"])
        head = f"{passed_count}/{len(outcomes)} checks passed"
        return Grade(score=passed_count / len(outcomes), rationale=head + "\n" + "\n".join(lines),
                     metadata={"checks": outcomes})

    def _ran(self, name: str, argv: list[str], result: ExecResult) -> None:
        if result.timed_out:
            raise CheckCannotRun(f"killed at its timeout of {self.spec.timeout:g}s (raise the grader's timeout)")
        if result.exit_code == NOT_FOUND:
            said = _tail(result, 200)
            raise CheckCannotRun(f"{argv[0]!r} was not found in the sandbox (exit {NOT_FOUND})"
                                 + (f": {said}" if said else ""))
