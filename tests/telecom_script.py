"""A scripted stand-in for both sides of suites/telecom.yaml (dual control), served by the loopback
ScriptedServer through the real openai client: a support agent that looks the line up, checks the network and
asks for one fix at a time, and a customer who acts on the phone with its own tools (the simulator's request
offers them) and reports what it sees.

The customer of `no-data-abroad`, repeat 1, cannot find the data-roaming setting and gives up: that repeat fails
final_state, so a run of it shows pass^2 below pass@2. (The shipped suites/telecom.recording.jsonl is the real small
model's, not this stand-in's.)"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.scripted_server import SIM_MARK, call, is_simulator, text


def _number(messages: list[dict[str, Any]]) -> str | None:
    for message in messages:
        found = re.search(r"\b555-\d{4}\b", str(message.get("content") or ""))
        if found:
            return found.group(0)
    return None


def agent(body: dict[str, Any]) -> dict[str, Any]:
    """The support agent: phone number, get_line, check_network, then one fix at a time."""
    messages = body["messages"]
    last = messages[-1]
    number = _number(messages)
    if last["role"] == "tool":
        result = str(last["content"])
        if '"abroad"' in result:  # get_line answered
            return call("check_network", {"phone_number": number})
        if "airplane mode" in result:
            return text("Your phone is not on the network. Please turn airplane mode off and tell me what you see.")
        if "no SIM" in result:
            return text("The network sees no SIM. Please take the SIM card out and put it back in.")
        if "roaming is off" in result:
            line = next(m for m in messages if m["role"] == "tool" and '"abroad"' in str(m["content"]))
            if not json.loads(line["content"])["roaming_plan"] and "roaming_plan\": true" not in json.dumps(messages):
                return call("enable_roaming_plan", {"phone_number": number})
            return text("Last step: please turn data roaming on in your phone's settings.")
        if "roaming_plan" in result:  # the plan was just enabled
            return text("I enabled the roaming plan on your line. Please turn data roaming on on your phone.")
        return text("Your phone is registered and data works now.")
    said = str(last.get("content") or "").lower()
    if "thank" in said:
        return text("You're welcome, goodbye!")
    if "give up" in said:
        return text("Sorry I could not fix it today; call us back when you find the setting.")
    if number is None:
        return text("Sorry about that. What is your phone number?")
    if not any(m["role"] == "tool" for m in messages):
        return call("get_line", {"phone_number": number})
    return call("check_network", {"phone_number": number})


def customer(body: dict[str, Any]) -> dict[str, Any]:
    """The customer: acts with its own tools (offered in the request) when asked, then says what the phone shows."""
    offered = {tool["function"]["name"] for tool in body.get("tools") or []}
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return text(f"OK, I did it. {last['content']}.")
    said = str(last.get("content") or "").lower()
    flaky = str(body.get("user", "")).startswith(f"{SIM_MARK}no-data-abroad:1")
    if "phone number" in said:
        found = re.search(r"phone_number: (\S+)", messages[0]["content"])
        return text(f"It's {found.group(1) if found else 'unknown'}.")
    if "airplane mode off" in said and "toggle_airplane_mode" in offered:
        return call("toggle_airplane_mode", {})
    if "sim card out" in said and "reseat_sim" in offered:
        return call("reseat_sim", {})
    if "data roaming on" in said:
        if flaky:
            return text("I can't find that setting anywhere, sorry. I give up. ###STOP###")
        return call("toggle_data_roaming", {})
    if "works now" in said:
        return text("Great, thank you! ###STOP###")
    return text("What should I do?")


def both(path: str, body: dict[str, Any]) -> dict[str, Any]:
    return customer(body) if is_simulator(body) else agent(body)
