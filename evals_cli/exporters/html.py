"""The HTML report: one self-contained file (inline CSS, JS and SVG) to read a run without a terminal.

It answers, in order: did the gate pass, how did each grader do, which samples failed, and — for any one
sample — what exactly the agent said and called, turn by turn, and why each grader scored it as it did.
Everything from the run is escaped by Jinja2's autoescape: model output is untrusted input here.

A sessions run (`evals analyze`, `evals run` on a recorded_sessions suite) gets its own page from the same
stylesheet and script (html_sessions.py): the gate's checks, then per session its turns, agents and findings.
In both, the filter bar hides a table row and its conversation together.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment

from evals_cli.display.state import reasons_for
from evals_cli.display.state_diff import ChangeView, describe_changes, describe_effect
from evals_cli.exporters.base import EXPORTERS, FinishedRun
from evals_cli.exporters.common import KINDS, case_name, failed_labels, fmt_score, model_calls, prepare, tool_runs, unique
from evals_cli.exporters.html_charts import BarChart, Histogram, histogram, score_bars
from evals_cli.exporters.html_labels import label_items
from evals_cli.exporters.html_pages import environment
from evals_cli.models.results import Grade, RunSummary, SampleResult, TurnGrade
from evals_cli.models.trajectory import diverged_turn
from evals_cli.thresholds import OPS, SYMBOLS

OPEN_PROBLEMS = 25  # failed/errored conversations start expanded when there are at most this many
SAMPLE_STATUSES = [("passed", "passed"), ("failed", "failed"), ("errored", "errored"), ("ungraded", "not graded")]


@dataclass(frozen=True)
class PassRule:
    """The gate's per-sample rule on the weighted score (`op value`), and whether every grader must pass too."""

    op: str
    value: float
    every_grader: bool = False

    def passes(self, score: float) -> bool:
        return OPS.get(self.op, OPS["gte"])(score, self.value)

    @property
    def text(self) -> str:
        return f"{SYMBOLS.get(self.op, self.op)} {self.value:g}"

    @property
    def sentence(self) -> str:
        graders = ("every grader reaches its threshold (gate sample_pass: all)" if self.every_grader else
                   "no required grader (e.g. tools_avoided) is under its own threshold")
        return (f"A sample passes when its weighted score is {self.text}, {graders}, and it calls no tool it was "
                "never offered.")


def manifest_rule(run_dir: Path | None) -> PassRule | None:
    """The per-sample rule of the gate in the run's run.json (written by `evals run` and `evals merge`)."""
    if run_dir is None:
        return None
    from evals_cli.models.specs import GateSpec
    from evals_cli.output.manifest import MANIFEST_NAME

    folder = run_dir if run_dir.is_dir() else run_dir.parent
    try:
        data = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
        spec = GateSpec.model_validate(data.get("gate") or {})
        return PassRule(spec.sample_op, spec.sample_value, getattr(spec, "sample_pass", "weighted") == "all")
    except Exception:  # no manifest (an older run, a hand-made folder) or an unreadable one: fall back
        return None


def pass_rule(results: list[SampleResult], summary: RunSummary, run_dir: Path | None = None) -> PassRule | None:
    """The per-sample pass rule: from run.json when there is one, else from a failed sample's recorded threshold,
    else the gate's own comparison (a weighted_average gate without pass_value uses its value per sample)."""
    rule = manifest_rule(run_dir)
    if rule is not None:
        return rule
    gate = summary.gate
    op = gate.op if gate is not None and gate.op in OPS else "gte"
    for result in results:
        for failure in result.failed_by:
            if failure.rule == "weighted" and failure.threshold is not None:
                return PassRule(op, failure.threshold)
    if gate is not None and gate.aggregation != "logical" and gate.op in OPS:
        return PassRule(gate.op, gate.value)
    return None


def score_class(score: float | None, rule: PassRule | None = None) -> str:
    """The colour of a score: against the gate's per-sample rule when known (a passing score is green, a failing
    one red), else on the terminal table's fixed cut-offs."""
    if score is None:
        return "err"
    if rule is not None:
        return "good" if rule.passes(score) else "bad"
    return "good" if score >= 0.999 else ("bad" if score < 0.5 else "mid")


@dataclass
class JudgeCall:
    """What the results line keeps of a judge call: the model, the verdicts (raw answer, reason, step-down mode),
    and the rendered prompt and the judge's reply text when the grader stored them (`messages`, `reply`)."""

    model: str
    verdicts: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    reply: str | None


def judge_call(grade: Grade) -> JudgeCall | None:
    meta = grade.metadata
    if "judge" not in meta:
        return None
    verdicts = [v for v in meta.get("verdicts") or [] if isinstance(v, dict)]
    messages = meta.get("messages") or meta.get("prompt") or []
    turn_calls = [c for c in meta.get("turn_calls") or [] if isinstance(c, dict)]
    if turn_calls and not messages:  # a per-turn judge: one call per turn, shown in turn order
        messages = [{"role": f"turn {int(c.get('turn', 0)) + 1} · {m.get('role', '?')}", "content": m.get("content", "")}
                    for c in turn_calls for m in c.get("messages") or [] if isinstance(m, dict)]
        verdicts = [dict(v, turn=int(c.get("turn", 0)) + 1) for c in turn_calls for v in c.get("verdicts") or []
                    if isinstance(v, dict)]
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    reply = meta.get("reply")
    if reply is None:
        replies = [(f"turn {v['turn']}: " if "turn" in v else "") + v["reply"] for v in verdicts
                   if isinstance(v.get("reply"), str)]
        reply = "\n\n".join(replies) if replies else None
    return JudgeCall(model=str(meta["judge"]), verdicts=verdicts, messages=messages,
                     reply=reply if isinstance(reply, str) else None)


@dataclass
class GradeView:
    name: str
    grade: Grade
    score_text: str
    css: str
    judge: str | None
    judge_call: JudgeCall | None = None
    fails_sample: bool = False


@dataclass
class SampleView:
    index: int
    anchor: str
    name: str
    result: SampleResult
    status: str
    status_text: str
    score_text: str
    score_css: str
    tools: list[str]
    steps: int
    tokens: int
    grades: list[GradeView]
    failed_by: list[str] = field(default_factory=list)
    tool_calls: int = 0
    turn_grades: dict[int, list[tuple[str, TurnGrade, str]]] = field(default_factory=dict)
    changes: list[ChangeView] = field(default_factory=list)
    diverged_at: int | None = None  # --replay-user: the turn the conversation left the recorded path
    labels: dict[tuple[str, int | None], str] = field(default_factory=dict)  # judged items: (grader, turn) -> data
    reason: str = ""  # why it failed or errored, first and shortest: as under the terminal's table

    @property
    def grade_css(self) -> dict[str, str]:
        return {g.name: g.css for g in self.grades}

    def label_item(self, grader: str, turn: int | None = None) -> str | None:
        """The data of the judged item a label button stands for (None: no judge verdict there)."""
        return self.labels.get((grader, turn))


def _status(result: SampleResult) -> tuple[str, str]:
    if result.error is not None:
        word = "incomplete" if result.error.incomplete else "error"
        return "errored", f"{word}: {result.error.category}"
    if result.passed is None:
        return "ungraded", "nothing to check" if result.score_note else "not graded"
    if result.passed:
        return "passed", "passed"
    return "failed", "failed" + (f": {', '.join(failed_labels(result))}" if result.failed_by else "")


def _judge(grade: Grade) -> str | None:
    meta = grade.metadata
    if "judge" not in meta:
        return None
    raw = meta.get("raw_score")
    return f"judge {meta['judge']}" + (f", raw score {raw:g}" if isinstance(raw, int | float) else "")


def grade_class(name: str, score: float | None, result: SampleResult, rule: PassRule | None) -> str:
    """A grader's score coloured as the verdict reads it: red when it failed the sample on its own, green when it
    meets the per-sample rule, amber when under it without failing the sample by itself."""
    if score is None:
        return "err"
    if any(f.grader == name for f in result.failed_by):
        return "bad"
    if rule is None:
        return score_class(score)
    return "good" if rule.passes(score) else "mid"


def sample_view(index: int, result: SampleResult, rule: PassRule | None = None,
                labels: dict[tuple[str, int | None], str] | None = None) -> SampleView:
    status, status_text = _status(result)
    blamed = {f.grader for f in result.failed_by if f.grader}
    grades = [GradeView(name, grade, fmt_score(grade.score), grade_class(name, grade.score, result, rule),
                        _judge(grade), judge_call(grade), name in blamed)
              for name, grade in result.grades.items()]
    turn_grades: dict[int, list[tuple[str, TurnGrade, str]]] = {}
    for name, grade in result.grades.items():
        failed = set(grade.metadata.get("replies_failed") or []) if grade.metadata.get("scope") == "reply" else None
        for turn in grade.per_turn_grades or []:  # 0-based in results; the page numbers turns from 1
            # a reply-scoped grade says which replies failed at its own threshold: the page colours by that
            css = grade_class("", turn.score, result, rule) if failed is None or turn.score is None \
                else ("bad" if turn.turn in failed else "good")
            turn_grades.setdefault(turn.turn + 1, []).append((name, turn, css))
    usage = result.usage.total_tokens + result.judge_usage.total_tokens
    score_css = score_class(result.score, rule) if result.score is not None or rule is None else "err"
    score_text = fmt_score(result.score)
    if result.score is None and result.error is None and result.score_note:  # n/a, not an error
        score_css, score_text = "muted", "n/a"
    return SampleView(index=index, anchor=f"s-{index}", name=case_name(result), result=result, status=status,
                      status_text=status_text, score_text=score_text, score_css=score_css,
                      tools=tool_runs(result.tools_called), steps=model_calls(result), tokens=usage, grades=grades,
                      failed_by=failed_labels(result), tool_calls=len(result.tools_called), turn_grades=turn_grades,
                      changes=describe_changes(result.trajectory.state_changes),
                      diverged_at=diverged_turn(result.trajectory), labels=labels or {},
                      reason="; ".join(reasons_for(result)))


@dataclass
class ReportView:
    summary: RunSummary
    title: str
    graders: list[str]
    weights: dict[str, float]
    samples: list[SampleView]
    bars: BarChart
    histograms: list[Histogram]
    notes: list[str]
    pass_rate: str
    open_problems: bool
    rule: PassRule | None = None
    conversation: list[str] = field(default_factory=list)  # goals met, turns to success, replay-user divergence
    noun: str = "samples"
    statuses: list[tuple[str, str]] = field(default_factory=lambda: list(SAMPLE_STATUSES))
    labelled_items: int = 0  # judge verdicts a person can label here (the "download labels" button)
    findings: dict[str, str] = field(default_factory=dict)  # recorded sessions: each detector graded, explained


def _findings(items: list[SampleResult]) -> dict[str, str]:
    """The recorded-session detectors among the grades (session_detector), each with what it means in one line,
    as the sessions report explains them."""
    seen = dict.fromkeys(str(g.metadata["detector"]) for r in items for g in r.grades.values()
                         if g.metadata.get("detector"))
    return {name: KINDS.get(name, KINDS.get(name.upper(), "")) for name in seen}


def _conversation_notes(items: list[SampleResult]) -> list[str]:
    """Goals met and turns to success, and --replay-user divergence, as `evals report` says them."""
    from evals_cli.display.state import RunState
    from evals_cli.report import conversation_notes

    state = RunState([])
    for result in items:
        state.add(result)
    return conversation_notes(state)


def report_view(results: Iterable[SampleResult], summary: RunSummary, title: str | None = None,
                notes: Iterable[str] = (), run_dir: Path | None = None) -> ReportView:
    items = list(results)
    graders = unique([*summary.graders, *(name for r in items for name in r.grades)])
    aggregates = {name: summary.graders[name] for name in graders if name in summary.graders}
    gate = summary.gate
    threshold = gate.value if gate is not None and gate.aggregation in ("avg_score", "accuracy") else None
    # an n/a grade is no score (its 1.0 is a convention) unless the gate counted it as one (not_applicable: pass)
    na_pass = gate is not None and gate.not_applicable == "pass"
    histograms = [histogram(name, [r.grades[name].score for r in items if r.error is None and name in r.grades
                                   and (r.grades[name].applicable or na_pass)])
                  for name in graders]
    histograms.append(histogram("weighted score", [r.score for r in items if r.error is None]))
    graded = summary.passed + summary.failed
    rule = pass_rule(items, summary, run_dir)
    labels = label_items(items, run_dir, (rule.op, rule.value) if rule is not None else None)
    return ReportView(
        summary=summary, title=title or f"{summary.suite} — evals report", graders=graders,
        weights=gate.weights if gate else {},
        samples=[sample_view(i, r, rule, labels.get((r.sample_id, r.repeat))) for i, r in enumerate(items, 1)],
        labelled_items=sum(len(found) for found in labels.values()),
        bars=score_bars(aggregates, threshold), histograms=histograms, notes=list(notes),
        conversation=_conversation_notes(items), findings=_findings(items),
        pass_rate=f"{summary.passed / graded:.0%}" if graded else "—",
        open_problems=sum(1 for r in items if r.error is not None or r.passed is False) <= OPEN_PROBLEMS,
        rule=rule,
    )


def _environment() -> Environment:
    env = environment()
    env.globals["score_class"] = score_class
    env.globals["describe_effect"] = describe_effect
    return env


def render_html(results: Iterable[SampleResult], summary: RunSummary, *, title: str | None = None,
                notes: Iterable[str] = (), run_dir: Path | None = None) -> str:
    """The whole report as one HTML string.

    `summary` is the run's summary.json, or for a killed run the one `evals_cli.report.load_run` rebuilds;
    `notes` (e.g. load_run's warnings: torn line, rebuilt summary) are shown at the top of the report;
    `run_dir`, the run's folder, gives the gate's per-sample pass rule (its run.json) when there is one.
    """
    view = report_view(results, summary, title, notes, run_dir)
    return _environment().get_template("run.html.j2").render(v=view, s=view.summary)


def write_html(results: Iterable[SampleResult], summary: RunSummary, path: Path | str, *, title: str | None = None,
               notes: Iterable[str] = (), run_dir: Path | None = None) -> Path:
    """Write the report (UTF-8) and return its path."""
    out = prepare(path)
    out.write_text(render_html(results, summary, title=title, notes=notes, run_dir=run_dir), encoding="utf-8")
    return out


def write_run_html(folder: Path, path: Path | str, *, title: str | None = None) -> Path:
    """Write the report of the run saved in `folder`, read back as `evals report` reads it (a killed run's summary
    rebuilt, its warnings shown at the top), and return its path."""
    from evals_cli.output.files import read_results
    from evals_cli.report import load_run

    _, summary, notes = load_run(folder)
    return write_html(read_results(folder), summary, path, title=title, notes=notes, run_dir=folder)


@EXPORTERS.register("html")
def export_html(run: FinishedRun, path: Path) -> Path:
    """`--export html=PATH`: the report `evals report --html` writes, straight after the run."""
    return write_html(run.results(), run.summary, path, run_dir=run.run_dir)


__all__ = ["export_html", "render_html", "write_html", "write_run_html"]
