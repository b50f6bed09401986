"""Every per-row check a suite implies, as one `check_dataset(on_sample=...)` hook: the graders' own checks
and rubric rendering (handed in by `PreparedRun`, which builds the graders), and suite tools that would answer
nothing. `evals validate` and the run's precheck both use it (through `PreparedRun`), so neither can accept a
row the other refuses."""

from __future__ import annotations

from typing import Any, Protocol

from evals_cli.graders.base import Grader
from evals_cli.models.sample import Sample
from evals_cli.models.simulated_user import UserSpec
from evals_cli.suite.spec import SuiteSpec


class SampleCheck(Protocol):
    """The graders' checks of one row (graders/rubric_check.py `SampleChecker`), and what they found over all
    rows once every row was seen."""

    def __call__(self, sample: Sample, where: str = "") -> list[str]: ...

    def problems(self) -> list[str]: ...


class RowChecks:
    """Rows reach this with the suite's environment merged into theirs (PreparedRun), as the run sees them."""

    def __init__(self, suite: SuiteSpec, graders: dict[str, Grader], samples: SampleCheck, where: str = "",
                 user_template: str | None = None) -> None:
        from evals_cli.environment.checks import EnvironmentChecker
        from evals_cli.tools.mock import ToolResultChecker

        self.samples = samples
        tools = getattr(suite, "tools", None) or {}
        self.tools = ToolResultChecker(tools, where or str(suite.base_dir), unlisted_servers=bool(_live_servers(suite)))
        states = {name: state for name, g in graders.items()
                  if (state := getattr(g.spec, "expected_state", None)) is not None}
        acting = {**tools, **_live_servers(suite), **(getattr(suite, "user_tools", None) or {}),
                  **_live_servers(suite, "user_mcp_servers")}  # a user acts too
        self.environment = EnvironmentChecker(acting, where or str(suite.base_dir), states)
        self.user_template = user_template

    def __call__(self, sample: Sample, where: str = "") -> list[str]:
        return (self.samples(sample, where) + self.tools(sample, where) + self.environment(sample, where)
                + self.users(sample, where))

    def users(self, sample: Sample, where: str = "") -> list[str]:
        """A row's `user:` block (the suite's defaults merged in) as the simulator will get it: something to play
        once the scripted opening is used up, and a system prompt that renders. No model is called."""
        user = sample.user
        if user is None:
            return []
        from evals_cli.models.simulated_user import STOP_TOKEN, says_nothing, split_stop

        found = []
        opening = user.opening(sample.user_turns)
        stops = [i for i, line in enumerate(opening) if split_stop(line)[1]]
        if stops and stops[0] == 0 and says_nothing(split_stop(opening[0])[0]):  # the agent is never asked
            found.append(f"{where}: user: the first scripted message (input, first_message, script) is only "
                         f"{STOP_TOKEN} (punctuation aside), so the conversation ends before the agent is asked "
                         "anything (a sample of 0 turns, graded on nothing); give the user's opening words before "
                         "the token, or drop it")
        if stops and stops[0] < len(opening) - 1:  # the conversation ends there: what follows is never sent
            found.append(f"{where}: user: scripted message {stops[0] + 1} of {len(opening)} (input, first_message, "
                         f"script) ends the conversation with {STOP_TOKEN}, so the {len(opening) - stops[0] - 1} "
                         "after it would never be sent; drop them or the token")
        # an opening that ends the conversation itself never asks the simulator
        if not stops and len(opening) < user.max_turns and not (user.persona or user.goal):
            found.append(f"{where}: user: no persona and no goal for the simulator to play after the "
                         f"{len(opening)} scripted message(s); give user.persona or user.goal (or the suite's "
                         "user: defaults)")
        if len(opening) > user.max_turns:
            found.append(f"{where}: user.max_turns {user.max_turns} is less than the {len(opening)} scripted user "
                         "messages (input, first_message, script); raise max_turns or drop messages")
        if isinstance(sample.ground_truth, list) and sample.per_turn:
            found.append(f"{where}: per-turn ground_truth cannot follow a simulated user (its turns are not known "
                         "in advance); give one ground_truth string, or grade with scope: reply")
        found += _attacker_problems(user, where)
        if self.user_template is not None:
            from evals_cli.graders.rubric import RubricError
            from evals_cli.simulation.prompt import render, template_for

            try:
                render(template_for(user, self.user_template), sample, user)
            except RubricError as exc:
                found.append(f"{where}: the user simulator's system prompt does not render for this row: {exc}")
        return found

    def problems(self) -> list[str]:
        return self.samples.problems() + self.tools.problems() + self.environment.problems()


def _attacker_problems(user: UserSpec, where: str) -> list[str]:
    """An attacker needs an objective, and a strategy belongs to an attacker (the suite's defaults merged in: a
    row may leave either to the suite)."""
    if user.kind == "attacker" and not user.goal:
        return [f"{where}: user: an attacker (kind: attacker) needs a goal: what it tries to get the agent to do"]
    if user.kind != "attacker" and user.strategy is not None:
        return [f"{where}: user.strategy {user.strategy}: only an attacker has a strategy; set kind: attacker (in "
                "the row's user: block or the suite's), or drop strategy"]
    return []


class SampleSelection:
    """Which samples a run keeps by id: `--sample-id` patterns (exact ids or globs, `refund-*`; a sample is kept
    when any matches) and, for `--rerun-failed`, an exact set of ids; both given, a sample needs both. Remembers
    what matched, so a pattern or id that matches no sample of the dataset can be named."""

    def __init__(self, patterns: list[str] | None = None, exact: list[str] | None = None) -> None:
        self.patterns = list(dict.fromkeys(patterns or []))
        self.exact = None if exact is None else dict.fromkeys(exact)
        self._matched: set[str] = set()
        self._found: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.patterns) or self.exact is not None

    def keeps(self, sample_id: str) -> bool:
        import fnmatch

        keep = True
        if self.exact is not None:
            keep = sample_id in self.exact
            if keep:
                self._found.add(sample_id)
        if self.patterns:
            hits = [p for p in self.patterns if p == sample_id or fnmatch.fnmatchcase(sample_id, p)]
            self._matched.update(hits)
            keep = keep and bool(hits)
        return keep

    def unmatched(self) -> list[str]:
        """The --sample-id patterns no sample matched (after keeps() saw every sample)."""
        return [p for p in self.patterns if p not in self._matched]

    def missing(self) -> list[str]:
        """The exact ids (--rerun-failed) no sample of the dataset has."""
        return [i for i in self.exact or {} if i not in self._found]

    def describe(self) -> str:
        parts = [f"--sample-id {', '.join(self.patterns)}"] if self.patterns else []
        if self.exact is not None:
            parts.append(f"--rerun-failed ({len(self.exact)} samples)")
        return " and ".join(parts)


def _live_servers(suite: SuiteSpec, block: str = "mcp_servers") -> dict[str, Any]:
    """A stand-in tool per live MCP server whose tools `evals validate` has not listed (it starts no server):
    such a server may write any file of its workspace, so an expected file it would create is no problem.
    `block`: the agent's servers, or the user's (`user_mcp_servers`, dual control: they share the workspace)."""
    from evals_cli.models.tools import ToolSpec

    found: dict[str, Any] = {}
    tools = getattr(suite, "user_tools" if block == "user_mcp_servers" else "tools", None) or {}
    if any(t.served_by is not None for t in tools.values()):
        return found  # the run listed them: the real tools are there
    for name, spec in (getattr(suite, block, None) or {}).items():
        if spec.mode == "live":
            stand_in = ToolSpec()
            stand_in._served_by = name
            found[f"{block}.{name}"] = stand_in
    return found
