"""What a run produces: grades, one result per sample, the run summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from evals_cli.models.base import Record
from evals_cli.models.calibration import JudgeCalibration
from evals_cli.models.trajectory import Trajectory, Usage

SCHEMA_VERSION = 2
"""2: per-turn grades in the letta-evals shape (`per_turn_grades`, 0-based `turn`, `metadata.turns_passed` /
`turns_total`), `Grade.applicable`, `SampleResult.failed_by`. Version-1 lines are read and upgraded in memory."""

ErrorCategory = Literal[
    "endpoint", "auth", "rate_limit", "timeout", "invalid_response", "tool_args", "grader", "judge", "replay", "internal",
    "user_simulator", "diverged",
    "custom_code",
    "tool_server",
    "setup",
    "agent",
    "sandbox",
]
"""`sandbox`: the episode's machine could not be made or used (a computer tool or a sandbox check could not
run: the sandbox failed, a check's program is missing or it ran past its timeout); never the agent's fail.
`tool_server`: an MCP server the agent's tools live on crashed, hung or broke the protocol (evals_cli/mcp).
`agent`: an agent program evals-cli runs (`kind: command`) broke its protocol: exited before replying, replied
without text, or did not exit at the episode's end.
`user_simulator`: the simulated user could not be played (its endpoint failed, or it broke character twice).
`diverged`: under `--replay-user ... --on-divergence stop`, the conversation left the recorded user's path and was
stopped there, so it has no whole-conversation verdict (not the agent's failure, nor a judge's).
`custom_code`: the suite's own code (a custom extractor, @grader, reward or python agent) exited, raised
KeyboardInterrupt or SystemExit, or ran past sample_timeout (evals_cli/custom_code/).
`setup`: the sample's `environment.setup` failed (a command exited non-zero or timed out, or its function raised);
the agent never started.
`sandbox`: the episode's sandbox (`sandbox:`, evals_cli/sandbox) could not be made or used: its program or image
missing, its engine failed; neither a pass nor a fail."""

Role = Literal["agent", "judge", "user"]
"""Who spent the tokens: the agent under test, the judges, the user simulator."""


class RoleUse(Record):
    """One role's share of a sample (or, in the summary, of the run): tokens, seconds waiting for it, calls, cost.
    The judge's seconds are the sample's grading time (its judge calls, when it has any)."""

    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    calls: int = 0
    cost: float | None = Field(default=None, description="At the pricing table's price for the role's model; None "
                                                         "without a price for it.")

    def add(self, other: RoleUse) -> None:
        self.usage.add(other.usage)
        self.latency_s += other.latency_s
        self.calls += other.calls
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost


NO_ANSWER = "no answer to judge"
"""How a judge grade of an empty or absent answer begins: failed without asking the judge (model_judge), and
counted as such, never as a judged item, by calibration."""

NO_ANSWER_ENDINGS = {"max_steps": "it was cut off at the step limit (max_steps) before answering",
                     "token_limit": "it was cut off at the sample's token limit (max_tokens_per_sample) before "
                                    "answering",
                     "message_limit": "it was cut off at the sample's message limit (max_messages) before answering",
                     "cut_off": "the recorded conversation was cut off mid-call before an answer (cut_off)",
                     "empty_answer": "its final reply was empty (empty_answer)",
                     "unparsed_tool_call": "its last reply was a tool call written as text (unparsed_tool_call)"}
"""Endings that leave no final answer, whatever text an earlier step of the turn held."""
FINAL_ANSWER_EXTRACTORS = {"last_assistant", "last_turn", "pattern", "after_marker"}
"""Extractors that read the final answer: under a NO_ANSWER_ENDINGS ending what they return is not one."""
RECORDED_CUT_OFF = frozenset({"cut_off"})
"""The ending the deterministic answer graders (match, grounding) read as no answer: a recording that stopped
mid-call. A live run's `max_steps` keeps its partial answer for them, as it always has."""


def ending_without_answer(extractor: str, stop_reason: str, endings: frozenset[str] | None = None) -> str | None:
    """Why a turn that ended with `stop_reason` left no final answer for `extractor` to read (None: it did, or
    the extractor reads something else). `endings` narrows the endings considered. Shared by the graders of the
    answer, so that text an agent wrote before it was cut off is never graded as its answer."""
    if extractor not in FINAL_ANSWER_EXTRACTORS or stop_reason not in NO_ANSWER_ENDINGS:
        return None
    if endings is not None and stop_reason not in endings:
        return None
    return NO_ANSWER_ENDINGS[stop_reason]


class TurnGrade(Record):
    """A grade for one user turn of a per-turn sample (letta-evals' PerTurnGrade). `turn` is 0-based."""

    turn: int
    score: float | None
    rationale: str = ""
    submission: str = ""
    ground_truth: Any = None


def _turn_from_v1(turn: Any) -> Any:
    """A version-1 turn grade (1-based `turn`) as version 2 (0-based)."""
    if isinstance(turn, TurnGrade):
        return turn.model_copy(update={"turn": turn.turn - 1})
    if isinstance(turn, dict) and isinstance(turn.get("turn"), int):
        return {**turn, "turn": turn["turn"] - 1}
    return turn


def _upgrade_v1_grade(data: Any) -> Any:
    """A version-1 grade (`per_turn` with 1-based turns, top-level `turns_passed`/`turns_total`) in the
    version-2 shape, so every reader (report, compare, merge, resume, exporters) handles both."""
    if not isinstance(data, dict) or "per_turn" not in data:
        return data
    data = dict(data)
    old = data.pop("per_turn")
    if old is not None and "per_turn_grades" not in data:
        data["per_turn_grades"] = [_turn_from_v1(t) for t in old]
    metadata = dict(data.get("metadata") or {})
    for key in ("turns_passed", "turns_total"):
        if data.get(key) is not None:
            metadata.setdefault(key, data[key])
        data.pop(key, None)
    data["metadata"] = metadata
    return data


class Grade(Record):
    """A grader's verdict. `score` None means the grader could not grade: never read it as 0.

    `applicable` False means the grader had nothing to check on this sample (no ground truth, no expected
    calls, ...): its score is 1.0 by convention (what a custom reward reads), but no aggregate and no weighted
    score counts it unless the gate says `not_applicable: pass`.
    """

    score: float | None
    rationale: str = ""
    applicable: bool = Field(default=True, description="False: nothing to check (the 1.0 is a convention, left out "
                             "of the aggregates and the weighted score unless the gate says not_applicable: pass).")
    per_turn_grades: list[TurnGrade] | None = Field(
        default=None, description="Per-turn samples: one grade per user turn, 0-based (letta-evals' shape).")
    submission: str | None = None
    error: str | None = Field(default=None, description="Why there is no score.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Per-turn graders put turns_passed and turns_total here.")

    _upgrade = model_validator(mode="before")(_upgrade_v1_grade)

    @property
    def turns_passed(self) -> int | None:
        value = self.metadata.get("turns_passed")
        return value if isinstance(value, int) else None

    @property
    def turns_total(self) -> int | None:
        value = self.metadata.get("turns_total")
        return value if isinstance(value, int) else None

    @classmethod
    def failed(cls, reason: str, **metadata: Any) -> Grade:
        """A grade that could not be given (error), as opposed to a low score."""
        return cls(score=None, rationale=reason, error=reason, metadata=metadata)

    @classmethod
    def not_applicable(cls, reason: str, **fields: Any) -> Grade:
        """Nothing to check: 1.0 by convention, marked so the table, the aggregates and the weighted score do not
        count it."""
        return cls(score=1.0, rationale=reason, applicable=False, **fields)


@dataclass
class TurnScores:
    """What a grader that grades per turn (`per_turn` samples) or per reply (`scope: reply`) hands the gate: one
    raw grade per turn or reply, nothing decided. Counting turns passed, the share of replies passed and the
    grade's score need pass marks, which are the gate's (its thresholds, not_applicable, letta-evals' turn rule):
    `Gate.settle` turns this into the grader's `Grade`.

    `metadata`: what the turns' grades add up to (usage, the judge's calls, custom_code), in the order the grade
    keeps it. `threshold`: the grader's own pass mark for a reply (None: the gate's per-sample value)."""

    scope: Literal["turn", "reply"]
    grades: list[Grade]
    turns: list[TurnGrade]
    metadata: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None


class ErrorInfo(Record):
    """Why a sample could not be run to the end."""

    category: ErrorCategory
    message: str

    @property
    def incomplete(self) -> bool:
        """The agent ran, but a grade the verdict needs is missing (see `Gate.judge_sample`)."""
        return self.category in ("judge", "grader", "custom_code", "sandbox") and self.message.startswith("incomplete:")


class FailedBy(Record):
    """One reason a sample failed: a required grader under its threshold, the gate's own sample rule, or a
    call to a tool that was never offered."""

    rule: Literal["required", "threshold", "weighted", "unknown_tool", "at_least"] = Field(
        description="required: a required grader under its threshold; threshold: a grader under its threshold "
        "with gate.sample_pass all; weighted: the gate's per-sample rule on the weighted score; unknown_tool: "
        "the agent called a tool it was never offered; at_least: fewer of a sample's repeats passed than "
        "gate.reducer at_least_N needs (summary.json's reduced samples only).")
    grader: str | None = Field(default=None, description="The grader to blame (None for weighted/unknown_tool).")
    score: float | None = None
    threshold: float | None = None
    reason: str = ""

    @property
    def label(self) -> str:
        """The short name a table row shows: the grader, `weighted` or `unknown tool`."""
        return self.grader or ("weighted" if self.rule == "weighted" else "unknown tool")


class SampleResult(Record):
    """One results-JSONL line."""

    schema_version: int = SCHEMA_VERSION
    sample_id: str
    repeat: int = 0
    tags: list[str] = Field(default_factory=list)
    input: str = ""
    trajectory: Trajectory = Field(default_factory=Trajectory)
    grades: dict[str, Grade] = Field(default_factory=dict)
    score: float | None = Field(default=None, description="Weighted score over the gate's graders that applied.")
    score_note: str | None = Field(
        default=None, description="Why a graded sample has no weighted score: none of the graders the gate weighs "
        "had anything to check (all n/a); `passed` then comes from its required graders, or is null (nothing "
        "was checked).")
    passed: bool | None = None
    failed_by: list[FailedBy] = Field(default_factory=list, description="Why the sample failed (empty if it did not).")
    error: ErrorInfo | None = None
    latency_s: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    judge_usage: Usage = Field(default_factory=Usage)
    user_usage: Usage = Field(default_factory=Usage, description="The user simulator's tokens (simulated users).")
    roles: dict[str, RoleUse] = Field(
        default_factory=dict, description="Per role (agent, judge, user): tokens, seconds, calls and cost.")
    cost: float | None = None

    @model_validator(mode="after")
    def _current_version(self) -> SampleResult:
        """Older lines are upgraded on read (see `_upgrade_v1_grade`); once in memory they are this version."""
        self.schema_version = SCHEMA_VERSION
        return self

    @property
    def tools_called(self) -> list[str]:
        return [call.name for call in self.trajectory.tool_calls]


class GraderAggregate(Record):
    """One grader over the run."""

    count: int = 0
    applicable: int | None = Field(
        default=None, description="Of `count`, the samples the grader really checked (the rest were n/a): the "
        "averages, accuracy and percentiles are over these (unless the gate says not_applicable: pass); None in "
        "summaries written before version 2.")
    errors: int = 0
    avg_score: float | None = None
    accuracy: float | None = None
    min: float | None = None
    max: float | None = None
    median: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    accuracy_at: dict[str, float] = Field(
        default_factory=dict,
        description="Accuracy under other per-sample pass rules the gate applies to this grader ('gte 1' -> share), "
        "when a logical gate's sub-gates differ from its first rule.",
    )


class Reliability(Record):
    """Consistency over repeats: a sample passes@k if any of its k runs passed, pass^k if all did."""

    repeats: int
    samples: int
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    mean_pass_rate: float | None = None


class ReducedSample(Record):
    """One sample's repeats made one by `gate.reducer`: what the gate counted for it (each repeat's own line in
    results.jsonl is unchanged)."""

    sample_id: str
    repeats: int = Field(description="Its results (repeats run), errored ones included.")
    graded: int = Field(description="Of those, the repeats that did not error: the reduction reads these.")
    passes: int = Field(description="Of those, the repeats whose own verdict passed.")
    score: float | None = Field(default=None, description="The reduced score: the weighted score of the reduced "
                                "grades (mean/median/mode/max), 1.0 or 0.0 (at_least_N); None with no verdict.")
    passed: bool | None = None
    grades: dict[str, float | None] = Field(default_factory=dict, description="Each grader's reduced score (None: "
                                            "no score, or n/a in every graded repeat).")
    failed_by: list[FailedBy] = Field(default_factory=list)
    error: ErrorInfo | None = Field(default=None, description="Why it has no verdict: every repeat errored, or "
                                    "(max, at_least_N) an errored repeat could still have made it pass.")
    note: str | None = Field(default=None, description="Why it has no verdict though nothing errored.")


class Reduction(Record):
    """`gate.reducer` over a run with repeats: the samples the gate counted, each one sample whatever its
    repeats; the run's own counts (total, passed, failed) still count repeats."""

    reducer: str
    repeats: int
    samples: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    unchecked: int = 0
    graders: dict[str, GraderAggregate] = Field(
        default_factory=dict, description="Each grader's aggregates over the reduced samples: what the gate read.")
    per_sample: list[ReducedSample] = Field(default_factory=list)


class JudgeAgreement(Record):
    """How far a judge grader can be trusted over the run."""

    judges: list[str] = Field(default_factory=list)
    units: int = 0
    alpha: float | None = Field(default=None, description="Krippendorff's alpha (interval) across the panel.")
    unreliable: int = Field(default=0, description="Grades whose verdict spread exceeded max_spread.")


class Coverage(Record):
    """How much of the dataset a run covered, and why not all of it: a verdict over 5 of 200 rows must say so.

    Counts are samples (dataset rows), each counted once whatever its repeats; `results` and `expected_results`
    count (sample, repeat) pairs."""

    dataset_rows: int | None = Field(default=None, description="Rows in the dataset file (None: not counted).")
    tagged: int | None = Field(default=None, description="Rows the tag filter kept (all rows without a filter).")
    limited: int | None = Field(default=None, description="Of those, the rows -n/max_samples kept.")
    selected: int | None = Field(default=None, description="Of those, the rows in this shard: the rows to run.")
    run: int = Field(default=0, description="Samples with at least one result (a result or an error).")
    results: int = Field(default=0, description="Result lines: (sample, repeat) pairs that finished.")
    expected_results: int | None = Field(default=None, description="selected × repeats.")
    tags: list[str] = Field(default_factory=list)
    id_filter: str | None = Field(default=None, description="The --sample-id / --rerun-failed selection, if any.")
    max_samples: int | None = None
    shard: str | None = None
    reasons: list[str] = Field(default_factory=list, description="Why fewer samples than the dataset's rows ran.")

    @property
    def complete(self) -> bool:
        """Every row of the dataset ran (or the rows were not counted)."""
        return self.dataset_rows is None or self.run >= self.dataset_rows

    def line(self) -> str | None:
        """'ran 32 of 200 samples: interrupted after 32 of 200' when fewer than the dataset's rows ran."""
        if self.complete:
            return None
        return f"ran {self.run} of {self.dataset_rows} samples: {'; '.join(self.reasons or ['reason not recorded'])}"


class Verdict(Record):
    """A gate's decision, whichever pipeline made it (live suite or recorded sessions): `passed` None means
    not evaluated, and `message` says why (what the CLI prints, in both pipelines)."""

    passed: bool | None
    message: str


class GateResult(Verdict):
    """The gate's verdict in numbers and words."""

    metric: float | None
    op: str
    value: float
    aggregation: str
    weights: dict[str, float]
    not_applicable: str | None = Field(
        default=None, description="How n/a grades were counted: exclude (left out) or pass (as 1.0); None in "
        "summaries written before the option existed (they counted n/a as 1.0).")
    warning: str | None = Field(
        default=None, description="Set when the gate passed while fewer than half the samples with a verdict "
        "passed, e.g. 'only 0 of 1 samples passed' (the message says it too).")


class CacheCount(Record):
    """Requests answered from the cache file (no model call) and requests that called a model (and were added)."""

    hits: int = 0
    misses: int = 0


class CacheUse(CacheCount):
    """`--cache FILE` over a run: its hits and misses in all and per role (agent, judge, user). A hit's tokens and
    cost are still counted in the run's usage: they are what the recorded answer took, not what this run spent."""

    file: str
    roles: dict[str, CacheCount] = Field(default_factory=dict)


class SummaryBase(Record):
    """What every summary.json says about the run itself, whichever pipeline wrote it: when it ran, whether it
    completed, the gate's verdict and the exit code. `RunOutcome.summary` is always one of these."""

    schema_version: int
    started_at: str = ""
    finished_at: str = ""
    duration_s: float = 0.0
    gate: Verdict | None = None
    status: Literal["completed", "aborted", "interrupted"] = "completed"
    abort_reason: str | None = None
    exit_code: int = 0


class RunSummary(SummaryBase):
    """Written once at the end of a run (and rebuilt by `evals report`)."""

    schema_version: int = SCHEMA_VERSION
    suite: str
    total: int = 0
    graded: int = 0
    errored: int = 0
    passed: int = 0
    failed: int = 0
    unchecked: int = Field(default=0, description="Graded samples with no verdict because nothing they are judged "
                           "on had anything to check (every grader n/a): neither passed nor failed.")
    errors_by_category: dict[str, int] = Field(default_factory=dict)
    graders: dict[str, GraderAggregate] = Field(default_factory=dict)
    gate: GateResult | None = None
    usage: Usage = Field(default_factory=Usage)
    judge_usage: Usage = Field(default_factory=Usage)
    user_usage: Usage = Field(default_factory=Usage, description="The user simulator's tokens (simulated users).")
    roles: dict[str, RoleUse] = Field(
        default_factory=dict, description="Per role (agent, judge, user), over the run: tokens, seconds, calls, cost.")
    reliability: Reliability | None = None
    reduced: Reduction | None = Field(
        default=None, description="gate.reducer with repeats > 1: each sample's repeats made one sample, which is "
        "what the gate read (its aggregates and pass_rate); None without a reducer.")
    judge_agreement: dict[str, JudgeAgreement] = Field(default_factory=dict)
    calibration: dict[str, JudgeCalibration] = Field(
        default_factory=dict, description="Judges with `calibration:` labels: the pass rate corrected for their errors.")
    grades_total: int = 0
    grades_missing: int = Field(default=0, description="Grades with score None (grader or judge errors).")
    cost: float | None = Field(default=None, description="Spend in the pricing table's currency.")
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    coverage: Coverage | None = Field(
        default=None, description="N of M: how many of the dataset's rows ran, and why not all of them.")
    cache: CacheUse | None = Field(default=None, description="--cache: requests served from the file and calls made.")

    def made_no_call(self) -> bool:
        """No model answered anything in this run: every sample errored and not one token was spent, by the agent
        or a judge (the endpoint was unreachable, refused the key, had no such model, ...). A table of such a run
        would be a row per sample with nothing in it; the table shows the counts and the reason instead. Read from
        the summary alone, so `evals report` decides the same as `evals run`."""
        return (self.total > 0 and self.errored == self.total and self.graded == 0
                and self.usage.total_tokens == 0 and self.judge_usage.total_tokens == 0
                and self.user_usage.total_tokens == 0)


class ModelRun(Record):
    """One model of a run over several models: where its own run folder is and how it ended (None while it has
    not finished, or when it was killed before writing its summary)."""

    model: str
    folder: str = Field(description="Its run folder, relative to the matrix's folder.")
    base_url: str | None = Field(default=None, description="The endpoint it ran on, credentials masked.")
    base_url_from: str | None = Field(default=None, description="Where that endpoint was set (`--model NAME@URL`, "
                                      "`target.models (NAME)`, `--base-url`, `target.base_url`, ...).")
    status: Literal["completed", "aborted", "interrupted"] | None = None
    exit_code: int | None = None
    gate: Verdict | None = None


class MatrixSummary(SummaryBase):
    """`matrix.json`, the top file of a run over several models: written when the run starts (marked interrupted,
    so a killed run never reads as passed) and again at its end. Each model's results and summary are in its own
    folder; `evals report` reads those, not the verdicts kept here."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["models"] = "models"
    suite: str
    gate_mode: Literal["all", "any"] = "all"
    models: list[ModelRun] = Field(default_factory=list)
    shard: str | None = None
