"""Action handlers of the shipped ``robot_cell`` example domain (offline stand-ins for the
cell's calendar and logbook): deterministic, so conversation tests can quote their results.

The calendar is the dialogue's ledger: a slot (machine, day, time) is booked once, and a second
requester is refused it and asked for another time.
"""

from __future__ import annotations

import hashlib
import json

from ..actions import ActionCall, ActionRefused, ActionResult

__all__ = ["book_maintenance", "record_changeover", "report_fault"]


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def book_maintenance(call: ActionCall) -> ActionResult:
    """Reserve the slot unless another conversation holds it; the booking number derives
    from what was booked, and booking the same slot again from the same conversation returns
    the same booking."""
    slots = dict(call.slots)
    booking_id = "MB-" + _digest(slots.get("machine"), slots.get("date"), slots.get("time"))[:6]
    key = f"maintenance/{slots.get('machine')}/{slots.get('date')}/{slots.get('time')}"
    held = call.ledger.claim(key, {"booking_id": booking_id.upper(), "thread_id": call.thread_id})
    if held is not None and held.get("thread_id") != call.thread_id:
        raise ActionRefused("slot_taken", slot="time")
    return ActionResult(
        summary={"booking_id": booking_id.upper()},
        data={
            "booking_id": booking_id.upper(),
            "machine": slots.get("machine"),
            "date": slots.get("date"),
            "time": slots.get("time"),
            "duration_min": 90,
        },
    )


def record_changeover(call: ActionCall) -> ActionResult:
    """Log the changeover with its full checklist: large, so the state keeps a reference."""
    record_id = "CO-" + _digest(call.thread_id, call.goal)[:6].upper()
    checklist = [
        {
            "step": n,
            "checked": True,
            "torque_nm": 4.5 if n == 3 else None,
            "notes": "verified by operator; see the cell's changeover standard CS-12 " * 3,
        }
        for n in range(1, 6)
    ]
    return ActionResult(summary={"record_id": record_id}, data={"checklist": checklist})


def report_fault(call: ActionCall) -> ActionResult:
    """File the fault report; ``priority`` is an optional slot, ``normal`` when not given."""
    report_id = "FR-" + _digest(call.thread_id, call.slots.get("faulty_machine"))[:6].upper()
    priority = call.slots.get("priority") or "normal"
    return ActionResult(summary={"report_id": report_id}, data={"priority": priority})
