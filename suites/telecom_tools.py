"""The telecom suite's tools with logic (suites/telecom.yaml), tau2-bench's dual control in small: the customer's
phone is a record the customer changes with their own tools (the suite's `user_tools`), the line is a record the
agent reads and changes with its tools, and the network check (an agent tool) reads the phone as the network sees
it. Each function gets the call's arguments and the episode's world and returns the result, or raises ToolError."""

from evals_cli.tools.logic import ToolError


def _phone(world):
    return world.records["phone"]["device"]


def _line(world, arguments):
    number = str(arguments.get("phone_number", "")).strip()
    line = world.records["lines"].get(number)
    if line is None:
        raise ToolError(f"no line with number {number!r}")
    return line


def _on_off(value):
    return "ON" if value else "OFF"


# the customer's tools (user_tools): what a person holding the phone can see and do


def check_status(arguments, world):
    phone = _phone(world)
    signal = "none" if phone["airplane_mode"] or not phone["sim_seated"] else "4 bars"
    return (f"Airplane mode: {_on_off(phone['airplane_mode'])}; SIM card: "
            f"{'detected' if phone['sim_seated'] else 'not detected'}; Data roaming: "
            f"{_on_off(phone['data_roaming'])}; Signal: {signal}")


def toggle_airplane_mode(arguments, world):
    phone = _phone(world)
    phone["airplane_mode"] = not phone["airplane_mode"]
    return f"Airplane mode is now {_on_off(phone['airplane_mode'])}"


def reseat_sim(arguments, world):
    _phone(world)["sim_seated"] = True
    return "You took the SIM card out and pushed it back in firmly: SIM card detected"


def toggle_data_roaming(arguments, world):
    phone = _phone(world)
    phone["data_roaming"] = not phone["data_roaming"]
    return f"Data roaming is now {_on_off(phone['data_roaming'])}"


# the agent's tools: the account and the network's view of the phone


def get_line(arguments, world):
    return _line(world, arguments)


def check_network(arguments, world):
    line, phone = _line(world, arguments), _phone(world)
    if phone["airplane_mode"]:
        return "The device is not registered on the network: no radio contact (airplane mode, or switched off)"
    if not phone["sim_seated"]:
        return "The device answers but presents no SIM: the SIM is not seated or is faulty"
    if line["abroad"] and not phone["data_roaming"]:
        return "Registered on a partner network abroad; data sessions refused: data roaming is off on the device"
    return "Registered on the network; data sessions allowed"


def enable_roaming_plan(arguments, world):
    line = _line(world, arguments)
    if line["roaming_plan"]:
        raise ToolError("the roaming plan is already on")
    line["roaming_plan"] = True
    return {"phone_number": line["id"], "roaming_plan": True}
