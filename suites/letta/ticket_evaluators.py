"""The custom extractor and grader of suites/letta/tickets_custom.yaml, written for letta-evals (its imports and
decorators): evals-cli stands in for that package, so the file loads unchanged. In a suite of your own, the
extractor may be a plain function (trajectory, config) -> str and the grader take @evals_cli.grader."""

import json
import re

from letta_evals.decorators import extractor, grader
from letta_evals.extractors.builtin import last_assistant
from letta_evals.models import GradeResult


@extractor
def json_object_extractor(trajectory, config):
    """The JSON object in the last assistant reply (the whole reply when it has none)."""
    reply = last_assistant(trajectory, config).strip()
    found = re.search(r"\{.*\}", reply, flags=re.DOTALL)
    return found.group(0) if found else reply


@grader
def ticket_classification_grader(sample, submission):
    """Half a point each for the right category and the right priority."""
    try:
        answer = json.loads(submission)
    except json.JSONDecodeError:
        return GradeResult(score=0.0, rationale="the submission is not JSON")
    wanted = json.loads(sample.ground_truth or "{}")
    right = [str(answer.get(key, "")).lower() == str(wanted.get(key, "")).lower() for key in ("category", "priority")]
    return GradeResult(score=sum(right) / 2, rationale=f"category ok: {right[0]}, priority ok: {right[1]}")
