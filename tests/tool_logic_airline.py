"""Tool functions for tests/test_tool_logic.py (copied into each test's suite folder): an airline's
reservations with logic a fixed effect cannot express."""

from evals_cli.tools.logic import ToolError


def cancel_reservation(arguments, world):
    reservations = world.records["reservations"]
    booking = reservations.get(str(arguments.get("reservation_id")))
    if booking is None:
        raise ToolError(f"no reservation {arguments.get('reservation_id')}")
    if booking["status"] == "cancelled":
        raise ToolError(f"reservation {booking['id']} is already cancelled")
    booking["status"] = "cancelled"
    user = world.records["users"][booking["user_id"]]
    user["credit"] = user["credit"] + booking["price"]  # two records changed by one call
    return {"reservation_id": booking["id"], "status": "cancelled", "refunded_credit": booking["price"]}


def get_reservation(arguments, world):
    booking = world.records["reservations"].get(str(arguments.get("reservation_id")))
    if booking is None:
        raise ToolError("no such reservation")
    return booking


def leaves(arguments, world):
    import sys

    sys.exit(0)


def breaks(arguments, world):
    return 1 / 0


def hangs(arguments, world):
    import threading

    threading.Event().wait(arguments.get("seconds", 60))
    return "woke"
