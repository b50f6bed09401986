"""The airline's tools with logic (suites/airline.yaml): each function gets the call's arguments and the
episode's world (records by collection and id) and returns the result, or raises ToolError to refuse. Unlike a
fixed effect, they check the policy's facts (an already-cancelled reservation, a basic-economy fare) and change
several records at once (the reservation and the user's travel credit)."""

from evals_cli.tools.logic import ToolError


def _reservation(world, arguments):
    found = world.records["reservations"].get(str(arguments.get("reservation_id", "")).strip().upper())
    if found is None:
        raise ToolError(f"no reservation with id {arguments.get('reservation_id')!r}")
    return found


def get_user(arguments, world):
    user = world.records["users"].get(str(arguments.get("user_id", "")).strip())
    if user is None:
        raise ToolError(f"no user with id {arguments.get('user_id')!r}")
    reservations = [r["id"] for r in world.records["reservations"].values() if r["user_id"] == user["id"]]
    return {**user, "reservations": reservations}


def get_reservation(arguments, world):
    return _reservation(world, arguments)


def cancel_reservation(arguments, world):
    booking = _reservation(world, arguments)
    if booking["status"] == "cancelled":
        raise ToolError(f"reservation {booking['id']} is already cancelled")
    if booking["fare"] == "basic_economy":
        raise ToolError(f"reservation {booking['id']} is basic economy: it cannot be cancelled")
    booking["status"] = "cancelled"
    user = world.records["users"][booking["user_id"]]
    user["travel_credit"] = user["travel_credit"] + booking["price"]
    return {"reservation_id": booking["id"], "status": "cancelled", "travel_credit_added": booking["price"]}


def change_seat(arguments, world):
    booking = _reservation(world, arguments)
    if booking["status"] == "cancelled":
        raise ToolError(f"reservation {booking['id']} is cancelled")
    seat = str(arguments.get("seat", "")).strip().upper()
    if not seat:
        raise ToolError("give the new seat, e.g. 14C")
    taken = {r["seat"] for r in world.records["reservations"].values()
             if r["flight"] == booking["flight"] and r["status"] != "cancelled"}
    if seat in taken:
        raise ToolError(f"seat {seat} is taken on flight {booking['flight']}")
    booking["seat"] = seat
    return {"reservation_id": booking["id"], "seat": seat}
