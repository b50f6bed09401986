"""What command and HTTP agents share: an agent program evals-cli does not drive, seen through its replies and its
own OpenTelemetry spans.

Each episode is an `ExternalEpisode` (the conversation the Episode hands every turn, holding the episode's tag,
its replies and, for a command agent, its process). At the episode's end (`close`) the spans the agent exported
to the run's loopback receiver for the episode (a command agent's: sent by its processes, on Linux; else tagged
with its id or session) are read by the traces reader into the episode's turns:
tool calls, their arguments and results, model calls. Without spans, or spans that do not rebuild these turns,
each turn holds the reply alone and `Trajectory.not_observed` says why: trajectory graders are then n/a with that
reason (graders/grading.py), never a pass. When the receiver refused a request the episode's spans may have been
in (too big, its bound reached, a body it could not read), the episode is an error naming why instead: a
trajectory rebuilt from part of its spans could pass on what the receiver dropped (receiver.py `requests_for`).

Record and replay: with `--record`, each episode's replies and spans are one line of the recording file (key
`agent-episode:<sample id>:<repeat>`, masked like every recording line); with `--replay` the line is served back
and no process is started, no request sent.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from evals_cli.endpoints.errors import InvalidResponse
from evals_cli.models.target_specs import TargetBase
from evals_cli.models.trajectory import Step, Trajectory, Turn
from evals_cli.targets.base import EpisodeState
from evals_cli.traces.conversations import build_conversations
from evals_cli.traces.masking import TraceCleaner
from evals_cli.traces.otlp import Span, spans_of_request
from evals_cli.traces.span_records import span_tree

if TYPE_CHECKING:
    from evals_cli.endpoints.pool import ClientPool
    from evals_cli.traces.receiver import OtlpReceiver

NOT_OBSERVED = "trajectory not observed (no telemetry from the agent)"
RECORD_PREFIX = "agent-episode"


class ExternalSpec(TargetBase):
    """What both external kinds take besides how to reach the agent."""

    telemetry: bool = Field(default=True, description="Run a loopback OTLP/HTTP receiver and rebuild each episode's "
                            "trajectory from the agent's spans (needs the otel extra for protobuf); false: the "
                            "replies alone are graded and trajectory graders are n/a.")
    otlp_port: int | None = Field(default=None, ge=0, le=65535, description="The receiver's port on 127.0.0.1 "
                                  "(default: a free one for a command agent, which is told it; 4318, OTLP/HTTP's "
                                  "usual port, for an HTTP agent, which must be pointed at it).")


@dataclass
class Observed:
    """An episode's replies (one per answered turn) and the OTLP/JSON export requests of its spans."""

    replies: list[str]
    requests: list[dict[str, Any]]


def record_key(sample_id: str, repeat: int) -> str:
    return f"{RECORD_PREFIX}:{sample_id}:{repeat}"


class ExternalEpisode(EpisodeState):
    """One episode of an external agent: its tag (the session id the agent's spans carry) and its replies."""

    def __init__(self, tag: str, sample_id: str) -> None:
        super().__init__()
        self.tag = tag
        self.sample_id = sample_id
        self.replies: list[str] = []
        self.replayed: Observed | None = None
        self.opened = time.monotonic()  # a request the receiver refused after this may have held its spans

    def reply(self, turn: Turn, text: str) -> None:
        """The agent's answer to this turn, as the user saw it (a step of its own until spans say more)."""
        self.replies.append(text)
        turn.steps.append(Step(content=text, finish_reason="stop"))
        self.append({"role": "assistant", "content": text})


def replayed(pool: ClientPool | None, sample_id: str, repeat: int) -> Observed | None:
    """The recorded episode under --replay (None when the run is live); a miss is the sample's error."""
    replay = getattr(pool, "replay", None)
    if replay is None:
        return None
    key = record_key(sample_id, repeat)
    entries = replay.recording.entries.get(key) or []
    if not entries:
        raise InvalidResponse(f"replay miss: no recorded episode {key!r} in {replay.recording.path.name} (the suite "
                              "or dataset changed since recording; re-record with --record)")
    episode = entries[0].get("episode") or {}
    return Observed(list(episode.get("replies") or []), list(episode.get("spans") or []))


def record(pool: ClientPool | None, sample_id: str, repeat: int, observed: Observed) -> None:
    """One line of the --record file for this episode (masked by the run's redactor; a no-op without --record)."""
    path: Path | None = getattr(pool, "record", None)
    if pool is None or path is None or getattr(pool, "replay", None) is not None:
        return
    from evals_cli.endpoints.recording import _SharedFile

    line = json.dumps({"key": record_key(sample_id, repeat),
                       "episode": {"replies": observed.replies, "spans": observed.requests}}, ensure_ascii=False)
    shared = _SharedFile.acquire(path)
    try:
        shared.write(pool.redactor(line) + "\n")
    finally:
        shared.release()


def episode_spans(requests: list[dict[str, Any]], tag: str) -> list[Span]:
    """The spans of the requests, all put in one conversation (the episode's): an agent that starts a trace per
    turn is still one conversation."""
    spans: list[Span] = []
    for index, request in enumerate(requests, 1):
        spans += spans_of_request(request, f"episode {tag} export {index}")
    for span in spans:
        span.attributes["gen_ai.conversation.id"] = tag
    return spans


def observe(trajectory: Trajectory, requests: list[dict[str, Any]], tag: str) -> None:
    """The episode's turns rebuilt from its spans where they match the turns answered; else `not_observed`."""
    spans = episode_spans(requests, tag) if requests else []
    if not spans:
        trajectory.not_observed = NOT_OBSERVED
        return
    cleaner = TraceCleaner(spans)
    trajectory.spans = span_tree(spans, cleaner)  # every span, those that rebuild no turn too
    conversations, notes = build_conversations(spans, cleaner)
    rebuilt = max(conversations, key=lambda c: len(c.trajectory.turns), default=None)
    turns = [t for t in trajectory.turns if t.steps]
    if rebuilt is None or not rebuilt.trajectory.turns:
        trajectory.not_observed = (f"trajectory not observed (the agent's {len(spans)} span(s) hold no model call "
                                   f"the traces reader can read{': ' + '; '.join(notes[:2]) if notes else ''})")
        return
    if len(rebuilt.trajectory.turns) != len(turns):
        trajectory.not_observed = (f"trajectory not observed (the agent's spans hold {len(rebuilt.trajectory.turns)} "
                                   f"turn(s), the conversation {len(turns)})")
        return
    for turn, seen in zip(turns, rebuilt.trajectory.turns, strict=True):
        reply = turn.answer
        turn.steps = [step.model_copy(deep=True) for step in seen.steps]
        if reply and turn.answer != reply:  # what the user was shown is the answer, whatever the spans last said
            turn.steps.append(Step(content=reply, finish_reason="stop"))
    if not rebuilt.complete:
        trajectory.not_observed = f"trajectory not fully observed: {rebuilt.problem()}"


def replay_turn(episode: ExternalEpisode, turn: Turn) -> None:
    """A recorded reply served to this turn (no process, no request)."""
    observed = episode.replayed
    assert observed is not None
    index = len(episode.replies)
    if index >= len(observed.replies):
        raise InvalidResponse(f"replay miss: the recording of sample {episode.sample_id} holds "
                              f"{len(observed.replies)} repl(ies); turn {index + 1} has none (re-record with --record)")
    episode.reply(turn, observed.replies[index])


def check_telemetry(spec: ExternalSpec, pool: Any) -> None:
    """Exit 2 naming the install command before any agent runs when the receiver could not read protobuf (a replay
    receives nothing: it needs no package)."""
    if spec.telemetry and getattr(pool, "replay", None) is None:
        from evals_cli.traces.otlp_body import protobuf_decoder

        protobuf_decoder()


def receiver_for(target: Any) -> OtlpReceiver:
    """The target's receiver, started on first use (one per target). A kind that `binds_telemetry` (command: its
    episodes' processes are evals-cli's) gets a receiver that binds connections to episodes; others' episodes tell
    their spans apart by tag."""
    found = getattr(target, "_receiver", None)
    if found is None:
        import weakref

        from evals_cli.traces.otlp_body import protobuf_decoder
        from evals_cli.traces.receiver import OtlpReceiver

        protobuf_decoder()  # the otel extra, or exit 2 naming it, before any agent runs
        port = getattr(target.spec, "otlp_port", None)
        port = int(port if port is not None else getattr(target, "default_otlp_port", 0))
        found = target._receiver = OtlpReceiver(port, bind=getattr(target, "binds_telemetry", False),
                                                on_foreign=_say_foreign).start()
        weakref.finalize(target, found.stop)
        if getattr(target, "announces_receiver", False):  # an agent already running must be pointed at it
            from evals_cli.display.console import make_console

            make_console(stderr=True).print(f"OTLP receiver for the agent's spans: {found.endpoint}/v1/traces "
                                            f"(its OTEL_EXPORTER_OTLP_ENDPOINT: {found.endpoint})", markup=False,
                                            highlight=False, soft_wrap=True)
    return found


def _say_foreign(problem: str) -> None:
    """The first export request refused for coming from outside every episode, said on stderr as it happens: it
    is no sample's error (a process outside the run must not be able to fail one), so this is where it shows."""
    from evals_cli.display.console import make_console

    make_console(stderr=True).print(f"OTLP receiver: {problem}; its spans are nobody's (later ones are counted, not "
                                    "shown)", markup=False, highlight=False, soft_wrap=True)
