"""The user simulator's system prompt: the built-in template, or the suite's `user_simulator.system_prompt_file`,
rendered with Jinja2 in the same bounded sandbox as rubrics. The simulator gets the persona, the goal and the
facts the user knows; never the agent's system prompt. The built-in template keeps the user in the conversation
until the goal is met or clearly cannot be (a question, a request for the go-ahead or a promise is not the end), as
tau2-bench's user guidelines do; simulation/stop_check.py puts back a stop sent while the agent waits. An attacker
(`kind: attacker`) gets the built-in attacker template (simulation/attacker_prompt.py) whatever the suite's file
says: that file describes its customers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evals_cli.models.sample import Sample
from evals_cli.models.simulated_user import END_TOOL, STOP_TOKEN, UserSpec

DEFAULT_TEMPLATE = """\
You are playing a user who is talking to a customer-service assistant. You are the user, never the assistant: \
write only what this user would type, one message at a time, in the user's own voice.
{% if persona %}
Who you are: {{ persona }}
{% endif %}{% if goal %}
What you want: {{ goal }}
{% endif %}{% if knows %}
Facts you know. Give a fact only when the assistant asks for it (do not volunteer it):
{% for name, value in knows.items() %}- {{ name }}: {{ value }}
{% endfor %}{% endif %}
Rules:
- Do not make up facts you were not given; if asked for something you do not know, say you do not know.
- Do not help the assistant, do not play the assistant, do not describe these instructions.
- Keep each message short, as a real user would.
When to end:
- Stay in the conversation until your goal is met or clearly cannot be met. When the assistant asks you \
something, asks for a detail or for your go-ahead, or says it will do something, your goal is not met yet: \
answer, and wait until it tells you it is done.
- Before you end, check what the assistant says it did against what you want, details included (ids, \
amounts, seats, dates). If something is wrong or missing, say so.
- If the assistant refuses or says it cannot help, ask once why or what else can be done. Your goal clearly \
cannot be met when it still cannot help after that, or when it keeps repeating itself.
{% if stop == "tool" %}- Only when your goal is met or clearly cannot be met, call the {{ end_tool }} tool \
instead of writing a message.
{% else %}- Only when your goal is met or clearly cannot be met, reply with {{ stop_token }} (alone, or at \
the end of your last message).
{% endif %}"""


def variables(sample: Sample, user: UserSpec) -> dict[str, Any]:
    """What the template may use."""
    from evals_cli.simulation.attacker_prompt import TACTICS

    return {"persona": user.persona or "", "goal": user.goal or "", "knows": dict(user.knows),
            "stop": user.stop, "stop_token": STOP_TOKEN, "end_tool": END_TOOL, "success": sample.success or "",
            "sample_id": str(sample.id), "metadata": sample.metadata, "kind": user.kind,
            "strategy": user.attack_strategy if user.kind == "attacker" else "",
            "tactics": TACTICS[user.attack_strategy] if user.kind == "attacker" else "", "max_turns": user.max_turns}


def template_for(user: UserSpec, template: str) -> str:
    """The template that plays this user: the run's (built-in or the suite's file), or the attacker's."""
    if user.kind == "attacker":
        from evals_cli.simulation.attacker_prompt import ATTACKER_TEMPLATE

        return ATTACKER_TEMPLATE
    return template


def load_template(path: Path | None, shown: str = "") -> str:
    """The template text: the suite's file, else the built-in one; a missing file or a syntax error is a
    ConfigError naming `user_simulator.system_prompt_file`."""
    if path is None:
        return DEFAULT_TEMPLATE
    from evals_cli.graders.rubric import read_template

    return read_template(path, f"user_simulator.system_prompt_file: {shown or path}",
                         " not found (the path is relative to the suite file)")


def render(template: str, sample: Sample, user: UserSpec) -> str:
    """The system prompt for one sample's simulated user."""
    from evals_cli.graders.rubric import render_rubric

    return render_rubric(template, variables(sample, user)).strip()
