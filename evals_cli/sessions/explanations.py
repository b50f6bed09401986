"""What each finding of a sessions analysis means and why it matters, in words a reader of the report can act on.

One table for every view of an analysis: the HTML report pins these texts to the turns and calls they concern,
and `evals analyze` prints them under each finding in the terminal, so the two never say different things. The
keys are the detection types (sessions/detectors.py), the tool violation kinds (sessions/tool_validation.py) and
the coordination findings (sessions/coordination.py). Kept import-free: the exporters and the terminal view both
read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Explanation:
    meaning: str  # what was found
    matters: str  # why a reader should care

    def __str__(self) -> str:
        return f"{self.meaning}. Why it matters: {self.matters}"


FINDINGS: dict[str, Explanation] = {
    "ccm": Explanation("the user re-asks: their next message repeats this turn's question (similar enough), so this "
                       "answer did not serve them",
                       "a user who has to ask again did not get what they came for, even when the answer looked fine"),
    "rdm": Explanation("the user corrects or rejects this answer in their next message (\"that's wrong\", \"not what I "
                       "asked\", \"actually, I meant\")",
                       "the user, who knows what they wanted, said the answer missed it"),
    "hallucination": Explanation("the final answer states ids or numbers found in no tool result, user message or the "
                                 "task",
                                 "an invented order id, amount or date misleads the user, and looks as sure as a "
                                 "true one"),
    "llm_judge": Explanation("the judge found another problem with this turn's answer (its reason is given)",
                             "the deterministic checks cannot see every wrong answer; read the judge's reason"),
    "overruled": Explanation("an inferred detection the judge found wrong: kept for review, the turn counts as good",
                             "the heuristics guess; when the judge disagrees, a person should look before trusting "
                             "either"),
    "UNAUTHORIZED_TOOL": Explanation("an agent called a tool its role was not given (HIGH: a security problem)",
                                     "an agent acting outside its role can change what it was never meant to touch"),
    "HALLUCINATED_PARAMETER": Explanation("a call sent a parameter the tool does not declare (MEDIUM)",
                                          "the tool ignores or rejects it: the agent believes it asked for something "
                                          "it did not get"),
    "MISSING_REQUIRED": Explanation("a call left out a parameter the tool requires (MEDIUM)",
                                    "the call fails or runs on a default the agent never chose"),
    "TYPE_MISMATCH": Explanation("a parameter of the wrong type (MEDIUM)",
                                 "the tool may refuse it or read it wrong (\"42\" is not 42 to every API)"),
    "INVALID_VALUE": Explanation("a parameter value the tool's schema does not allow (MEDIUM)",
                                 "the call is refused or does something other than what was meant"),
    "lost handoff": Explanation("an agent handed the work on with a context missing the task's ids or amounts (or "
                                "empty)",
                                "the next agent has to guess or ask again what the user already said"),
    "redundant call": Explanation("an agent redid a call another agent had made, with the same parameters",
                                  "work done twice because it was not passed on: time and cost, and results that "
                                  "can disagree"),
    "repeated call": Explanation("an agent made the same call (same tool, same parameters) again and again within "
                                 "one turn",
                                 "an identical call brings no new information: a loop that only ends at a step cap, "
                                 "with no answer for the user"),
}


def explain(kind: str) -> str:
    """The explanation of a finding kind in one line ('' for a kind this table does not know)."""
    found = FINDINGS.get(kind) or FINDINGS.get(kind.upper())
    return str(found) if found is not None else ""
