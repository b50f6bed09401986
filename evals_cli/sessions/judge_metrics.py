"""The judge-based session metrics: one question per call, asked the way the model_judge grader asks.

Reused, not copied: shared clients (`ClientPool`), endpoint resolution (`resolve_judge`: suite judge block,
else EVAL_JUDGE_*), the judge call itself (`judge_call.ask_judge`: nonce-fenced data, mode step-down), the verdict
formats (`Scale`: 1-10, pass-fail, labelled choices), the defensive parser (`extract`, which cuts out anything
echoed from inside the data fence), and the structured-output step-down json_schema → json_object → text.
A call that yields no verdict leaves its metric null with the reason in `judge.errors`, never 0. A judge that
cannot be reached at all (refused connection, rejected key, unknown model) stops the run: exit 3, one message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from evals_cli.concurrency import each_or_raise
from evals_cli.endpoints.clients import ModelClients
from evals_cli.endpoints.errors import classify
from evals_cli.endpoints.resolve import Endpoint
from evals_cli.errors import RunAborted
from evals_cli.graders.judge_call import ask_judge, judge_messages, step_downs
from evals_cli.graders.scales import Choice, Scale
from evals_cli.sessions import prompts
from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.results import JudgeInfo

SCORE = Scale.of("1-10")
PASS_FAIL = Scale.of("pass-fail")
TURN_LABELS = ("good", "ccm", "rdm", "hallucination", "bad")
TURN = Scale.of([Choice(label=label, score=1.0 if label == "good" else 0.0) for label in TURN_LABELS])


@dataclass(frozen=True)
class Verdict:
    score: float  # in [0, 1]
    label: str  # the raw answer: a score, pass/fail or a turn label
    reason: str


@dataclass
class JudgeLog:
    """One session's judge calls: counted apart so each results line says what its own judge did."""

    model: str | None
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def info(self) -> JudgeInfo:
        return JudgeInfo(model=self.model, calls=self.calls, errors=self.errors, prompt_tokens=self.prompt_tokens,
                         completion_tokens=self.completion_tokens)


class SessionJudge:
    """Asks one endpoint, with bounded concurrency over all sessions of a run: at most `concurrency` asks in
    flight (`slots`, held by `ask_all` around each question; the runner passes the smaller of
    target.judge_concurrency and the run's `-c`), and every HTTP request also holds a slot of the pool's
    per-server limit (the run's `-c`, shared with every other caller). The structured-output step-down is learnt
    once per run (`step_downs(pool)`, shared with model_judge graders)."""

    def __init__(self, endpoint: Endpoint, pool: ModelClients, temperature: float | None = 0.0,
                 max_tokens: int | None = None, concurrency: int = 8,
                 redact: Callable[[str], str] = lambda text: text) -> None:
        self.endpoint = endpoint
        self.pool = pool
        self.temperature = 0.0 if temperature is None else temperature
        self.max_tokens = max_tokens
        self.slots = asyncio.Semaphore(concurrency)  # held per question by `ask_all`
        self.redact = redact
        self.modes = step_downs(pool)  # modes the endpoint refused are skipped by later calls
        self.any_success = False

    def log(self) -> JudgeLog:
        return JudgeLog(model=self.endpoint.model)

    async def ask(self, prompt: str, scale: Scale, context: str, log: JudgeLog) -> Verdict | None:
        messages, nonce = judge_messages(prompt, scale)
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        log.calls += 1
        answer, failures = await ask_judge(
            self.pool.client(self.endpoint), self.endpoint, messages, nonce, scale, modes=self.modes,
            temperature=self.temperature, max_tokens=self.max_tokens, usage=usage,
            context=f"{context}, judge {self.endpoint.model}", on_error=self._maybe_fatal)
        log.prompt_tokens += usage["prompt_tokens"]
        log.completion_tokens += usage["completion_tokens"]
        if answer is None:
            log.errors.append(self.redact(f"{context}: " + "; ".join(failures or ["no usable verdict"])))
            return None
        self.any_success = True
        label = answer.raw if isinstance(answer.raw, str) else f"{answer.raw:g}"
        return Verdict(answer.score, label, answer.reason)

    def _maybe_fatal(self, exc: BaseException) -> None:
        found = classify(exc, self.endpoint)
        if found.fatal and (found.fatal_after_success or not self.any_success):
            raise RunAborted(self.redact(found.message))


@dataclass(frozen=True)
class Question:
    """One judge call: what is asked, on which scale, and the key its verdict is filed under."""

    key: tuple[object, ...]  # ("interaction", turn, index, metric), ("turn", turn) or ("session", metric)
    prompt: str
    scale: Scale
    context: str  # names the call in errors: session, turn, agent, metric


def interaction_questions(session: AgentSession, turn_index: int, index: int,
                          metrics: dict[str, str | None]) -> list[Question]:
    """One question per metric of an interaction; `metrics` maps each metric asked to the handoff target (or None)."""
    agent = session.turns[turn_index].agent_interactions[index].agent_id
    return [Question(("interaction", turn_index, index, m),
                     prompts.interaction_prompt(m, session, turn_index, index, metrics[m]), SCORE,
                     f"session {session.id}, turn {turn_index + 1}, agent {agent}, {m}") for m in metrics]


def turn_question(session: AgentSession, turn_index: int) -> Question:
    return Question(("turn", turn_index), prompts.turn_prompt(session, turn_index), TURN,
                    f"session {session.id}, turn {turn_index + 1}, turn verdict")


def session_questions(session: AgentSession, metrics: list[str]) -> list[Question]:
    """coordination and intent_drift on 1-10 (intent drift is asked as focus and inverted by the caller),
    task_completion on pass-fail."""
    return [Question(("session", m), prompts.session_prompt(m, session),
                     PASS_FAIL if m == "task_completion" else SCORE, f"session {session.id}, {m}") for m in metrics]


async def ask_all(judge: SessionJudge, log: JudgeLog, questions: list[Question]) -> dict[tuple[object, ...], Verdict | None]:
    """Every question at once, each holding a slot of the judge's limit (shared by every session of the run);
    a judge that cannot be reached (RunAborted) is raised once the session's other calls are done."""
    answers: dict[tuple[object, ...], Verdict | None] = {}

    async def one(question: Question) -> None:
        answers[question.key] = await judge.ask(question.prompt, question.scale, question.context, log)

    await each_or_raise(questions, one, len(questions), slots=judge.slots)
    return answers
