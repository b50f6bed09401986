"""Turn-level detectors: was the answer of turn i bad? The user's next message is the best witness.

- ccm (the user re-asks): turn i+1's user message is at least `thresholds.ccm_similarity` similar to turn i's
  (`text.similarity`); confidence is the similarity.
- rdm (the user corrects or rejects the answer): turn i+1's user message holds a correction phrase. Explicit
  ones ("that's wrong", "not what I asked", the suite's `correction_phrases`) give confidence 0.9 and are
  stated by the user (`stated_by_user`); softer ones ("actually, I meant", a leading "No,") give 0.7 and are
  inferred, like every other detection (a "No," may answer the agent's own question).
- hallucination: turn i's final response states facts (identifiers, numbers: see `text.py`) found nowhere in
  the evidence: the tool calls and results of this turn and earlier ones (an answer may restate what an earlier
  turn looked up), the user messages so far and the task. Only for turns with a tool call: without tool results
  there is nothing to check against. Confidence 0.6 + 0.4 x the unsupported share of the response's facts.

The last turn has no next message, so only the hallucination check (and the judge) can flag it. When the judge
is asked, it confirms or rejects the inferred deterministic detections and may flag a bad turn they missed
(`combine_turn`); a correction the user stated stands whatever the judge says: the user is the authority on
what they asked, a judge is not. Confidences are hand-set heuristics to rank findings, not probabilities.
"""

from __future__ import annotations

import json
import re

from evals_cli.sessions.models import AgentSession
from evals_cli.sessions.results import Detection, TurnResult
from evals_cli.sessions.spec import Thresholds
from evals_cli.sessions.text import Evidence, facts, similarity

STRONG, WEAK = 0.9, 0.7
PRIORITY = ("rdm", "ccm", "hallucination", "llm_judge")
_STRONG = [re.compile(p) for p in (
    r"\b(that|this|it)(?:'s| is| was) (?:(?:all|just|completely|totally) )?(?:wrong|incorrect|not (?:right|correct|true|"
    r"what i (?:asked|wanted|meant|said)))\b",
    r"\bnot what i (?:asked|wanted|meant|said)\b",
    r"\byou (?:misunderstood|got it wrong|are wrong|'re wrong)\b",
    r"\bi (?:didn't|did not|never) (?:ask|say|want|mean)\b",
    r"\bwrong (?:order|item|product|account|answer|one)\b",
)]
_WEAK = [re.compile(p) for p in (
    r"^\s*no[,.!]\s+(?!thanks?\b|thank you|problem|worries|need|rush)",
    r"\bactually,? i (?:meant|mean|want(?:ed)?|asked|said)\b",
    r"\bi meant\b",
    r"\bthat'?s not it\b",
)]


def _normal(message: str) -> str:
    return message.lower().replace("’", "'")


def correction(message: str, extra_phrases: list[str] | None = None) -> tuple[float, str] | None:
    """(confidence, the phrase found) when the message corrects or rejects the previous answer."""
    text = _normal(message)
    for phrase in extra_phrases or []:
        if phrase.strip() and _normal(phrase).strip() in text:
            return STRONG, phrase
    for patterns, confidence in ((_STRONG, STRONG), (_WEAK, WEAK)):
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return confidence, found.group(0).strip()
    return None


def next_user_message(session: AgentSession, turn_index: int) -> str | None:
    turns = session.turns
    return turns[turn_index + 1].user_message if turn_index + 1 < len(turns) else None


def detect_ccm(session: AgentSession, turn_index: int, threshold: float) -> tuple[Detection | None, float | None]:
    """(detection or None, the similarity) of turn i+1's user message to turn i's."""
    following = next_user_message(session, turn_index)
    if following is None:
        return None, None
    sim = similarity(session.turns[turn_index].user_message, following)
    if sim < threshold:
        return None, sim
    return Detection(type="ccm", confidence=round(sim, 3), source="deterministic",
                     evidence=f"turn {turn_index + 2} re-asks (similarity {sim:.2f} >= {threshold:g}): "
                              f"{following[:120]!r}"), sim


def detect_rdm(session: AgentSession, turn_index: int, extra_phrases: list[str] | None = None) -> Detection | None:
    following = next_user_message(session, turn_index)
    found = correction(following, extra_phrases) if following is not None else None
    if found is None:
        return None
    confidence, phrase = found
    return Detection(type="rdm", confidence=confidence, source="deterministic", stated_by_user=confidence >= STRONG,
                     evidence=f"turn {turn_index + 2} corrects the answer ({phrase!r})")


def _dump(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def evidence_for(session: AgentSession, turn_index: int) -> Evidence:
    """Tool calls and results of turns 0..i, the user messages 0..i and the task."""
    texts = [session.task]
    for turn in session.turns[: turn_index + 1]:
        texts.append(turn.user_message)
        for interaction in turn.agent_interactions:
            for _, call in interaction.tool_calls:
                texts += [_dump(call.parameters), _dump(call.result)]
    return Evidence(texts)


def detect_hallucination(session: AgentSession, turn_index: int) -> Detection | None:
    turn = session.turns[turn_index]
    if not any(i.tool_calls for i in turn.agent_interactions):
        return None
    stated = facts(turn.final_response)
    evidence = evidence_for(session, turn_index)
    unsupported = [f for f in stated if not evidence.supports(f)]
    if not unsupported:
        return None
    confidence = 0.6 + 0.4 * len(unsupported) / len(stated)
    shown = ", ".join(str(f) for f in unsupported[:5])
    return Detection(type="hallucination", confidence=round(confidence, 3), source="deterministic",
                     evidence=f"the final response states {shown} found in no tool result, user message or the task")


def deterministic_detections(session: AgentSession, turn_index: int,
                             thresholds: Thresholds) -> tuple[list[Detection], float | None]:
    """Every deterministic detection of a turn, and the similarity to the next user message (None: last turn)."""
    ccm, sim = detect_ccm(session, turn_index, thresholds.ccm_similarity)
    found = [ccm, detect_rdm(session, turn_index, thresholds.correction_phrases),
             detect_hallucination(session, turn_index)]
    return [d for d in found if d is not None], sim


def _primary(detections: list[Detection]) -> Detection:
    return min(detections, key=lambda d: PRIORITY.index(d.type))


def combine_turn(turn_index: int, detections: list[Detection], similarity_to_next: float | None,
                 judge: tuple[str, str] | None, judge_confirms: bool = True) -> TurnResult:
    """The turn verdict from the deterministic detections and the judge's (label, reason), when asked.

    The judge confirms (any bad label: confidence moves halfway to 1) or rejects (label 'good': not bad,
    confidence 0.6) the deterministic detections; alone it flags a turn with confidence 0.7. It may reject only
    inferred detections: a correction the user stated (`stated_by_user`: "That's wrong, not what I asked") keeps
    the turn bad whatever the judge says, with the judge's 'good' noted. A rejected detection never vanishes: it
    stays in `detections`, marked `overruled_by_judge` with the judge's reason, so a reviewer sees what the judge
    overruled. With `judge_confirms` off the deterministic detections are final: the judge's 'good' is noted, the
    turn stays bad. Without a judge,
    a clean turn's confidence is 1 - its similarity to the next message (at least 0.5), 0.5 for the last turn.
    """
    if judge is None:
        if detections:
            top = _primary(detections)
            return TurnResult(turn_index=turn_index, is_bad=True, detection_type=top.type, confidence=top.confidence,
                              detections=detections, reason=top.evidence)
        calm = 0.5 if similarity_to_next is None else max(0.5, 1.0 - similarity_to_next)
        return TurnResult(turn_index=turn_index, is_bad=False, detection_type="none", confidence=round(calm, 3))
    label, why = judge
    if label == "good":
        return _judged_good(turn_index, detections, why, judge_confirms)
    kind = label if label in ("ccm", "rdm", "hallucination") else "llm_judge"
    confirmed = [d.model_copy(update={"confidence": round(d.confidence + (1 - d.confidence) / 2, 3)})
                 for d in detections]
    if not any(d.type == kind for d in confirmed):
        confirmed.append(Detection(type=kind, confidence=0.7, source="judge", evidence=f"judge: {why}"))
    top = _primary(confirmed)
    reason = top.evidence if top.source == "judge" else f"{top.evidence}; judge agrees: {why}"
    return TurnResult(turn_index=turn_index, is_bad=True, detection_type=top.type, confidence=top.confidence,
                      detections=confirmed, reason=reason)


def _judged_good(turn_index: int, detections: list[Detection], why: str, judge_confirms: bool) -> TurnResult:
    """The judge found the turn good: it overrules the inferred detections (kept, marked), never a correction the
    user stated, nor any detection with `judge_confirms` off."""
    if detections and not judge_confirms:
        top = _primary(detections)
        return TurnResult(turn_index=turn_index, is_bad=True, detection_type=top.type, confidence=top.confidence,
                          detections=detections, reason=f"{top.evidence}; the judge found the turn good "
                          f"(judge_confirms off: the detection stands): {why}")
    stated = [d for d in detections if d.stated_by_user]
    inferred = [d for d in detections if not d.stated_by_user]
    overruled = [d.model_copy(update={"overruled_by_judge": True, "judge_reason": why}) for d in inferred]
    if stated:
        top = _primary(stated)
        also = f"; it overruled {', '.join(d.type for d in overruled)}" if overruled else ""
        return TurnResult(turn_index=turn_index, is_bad=True, detection_type=top.type, confidence=top.confidence,
                          detections=stated + overruled,
                          reason=f"{top.evidence}; the user said so, which stands although the judge found the "
                          f"turn good{also}: {why}")
    if detections:
        rejected = "; ".join(d.evidence for d in detections)
        return TurnResult(turn_index=turn_index, is_bad=False, detection_type="none", confidence=0.6,
                          detections=overruled, reason=f"judge rejected the detection ({rejected}): {why}")
    return TurnResult(turn_index=turn_index, is_bad=False, detection_type="none", confidence=0.9, reason=why)
