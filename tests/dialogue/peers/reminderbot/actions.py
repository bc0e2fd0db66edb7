"""The reminderbot's actions as flowkit handlers (the behaviour of Rasa's example actions)."""

from __future__ import annotations

from flowkit.dialogue.actions import ActionCall, ActionResult, Schedule


def set_reminder(call: ActionCall) -> ActionResult:
    """Schedule ``EXTERNAL_reminder`` in 5 seconds with the message's name."""
    entities = {"name": call.slots["name"]} if call.slots.get("name") else {}
    remind = Schedule(intent="EXTERNAL_reminder", entities=entities, after=5, name="my_reminder")
    return ActionResult(schedule=[remind])


def forget_reminders(call: ActionCall) -> ActionResult:
    """Cancel every pending reminder."""
    return ActionResult(cancel="all")


def tell_id(call: ActionCall) -> ActionResult:
    return ActionResult(summary={"conversation_id": call.thread_id})


def react_to_reminder(call: ActionCall) -> ActionResult:
    return ActionResult(summary={"who": call.slots.get("name") or "someone"})


def warn_dry(call: ActionCall) -> ActionResult:
    return ActionResult(summary={"what": call.slots.get("plant") or "someone"})
