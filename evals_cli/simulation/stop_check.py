"""When a simulated user's stop is put back to it once before it is taken.

A user who hangs up while the assistant is waiting on them ends the conversation before the task could be done:
the assistant asked a question, asked for a detail or for the go-ahead ("Shall I cancel R100?"), or said
nothing at all. Small simulator models do exactly that, often at the first confirmation, and the sample then
fails for the user's sake, not the agent's. So such a stop is put to the simulator once more, with a note naming
what the assistant is waiting for; a second stop is taken as it stands (the user may still give up, and a goal
that is met is met). A stop after an answer that waits on nothing is taken at once. The note restates the
built-in prompt's rule for ending (simulation/prompt.py), so only users played with that prompt are checked: a
suite's own `system_prompt_file` says itself when its users end, and an attacker's template when an attack is
over."""

from __future__ import annotations

import re

from evals_cli.models.simulated_user import END_TOOL, STOP_TOKEN

_ASKS = re.compile(
    r"\?"
    r"|\b(?:please|kindly)\s+(?:provide|confirm|give|tell|share|send|specify|enter|select|choose|verify|let\s+me)\b"
    r"|\blet\s+me\s+know\b|\bwould\s+you\s+like\b|\bdo\s+you\s+want\b",
    re.IGNORECASE,
)


def awaits_user(reply: str) -> bool:
    """Does the assistant's reply wait on the user (a question, a request for a detail or a confirmation, or no
    words at all)? A false "yes" costs one simulator call; a false "no" takes the stop at once, as before."""
    return not reply.strip() or _ASKS.search(reply) is not None


def check_note(reply: str, stop: str) -> str:
    """The note that puts the stop back to the simulator: what the assistant is waiting for, and how to end
    again if the goal is met or clearly cannot be."""
    waiting = ("[You ended the conversation, but the assistant's last message said nothing: it may still be "
               "working on your request." if not reply.strip() else
               "[You ended the conversation, but the assistant's last message asks you something and it is "
               "waiting for your answer.")
    how = f"call the {END_TOOL} tool" if stop == "tool" else f"reply with {STOP_TOKEN}"
    return (f"{waiting} If your goal is not met yet, write your next message as the user (answer it, or say what "
            f"is still missing). Only if your goal is met, or clearly cannot be met, {how} again.]")
