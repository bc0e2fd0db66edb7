"""A conversation under way goes on when its domain is edited between two turns (a process
restarted with the new domain on the same store): a slot added to the goal under way is
asked for, one taken out is dropped, and a goal taken out is cancelled. Each of them made
every later turn fail the flow's slot checks, "cancel" included (found by a defect hunt)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from flowkit.dialogue import Dialogue, load_domain
from flowkit.stores import JsonFileStore

from .conftest import monday

BASE: dict[str, Any] = yaml.safe_load("""
name: table
intents:
  book: {examples: {en: [book a table]}, keywords: {en: [book]}}
  cancel: {kind: control, keywords: {en: [cancel]}}
entities:
  people: {kind: number}
  person: {kind: text}
  phone: {kind: regex, patterns: ['\\d{3}-\\d{4}']}
slots:
  people: {entity: people, question: {en: "How many people?"}}
  name: {entity: person, question: {en: "Under what name?"}}
  phone: {entity: phone, question: {en: "Your phone number?"}}
goals:
  book: {intent: book, mode: SLOT_FILLING, slots: [people, name], action: reserve, done: booked}
actions:
  reserve: {}
responses:
  booked: {en: "Booked."}
""")


def _edited(change: str) -> dict[str, Any]:
    domain = copy.deepcopy(BASE)
    goal = domain["goals"]["book"]
    if change == "slot added":
        goal["slots"] = ["people", "name", "phone"]
    elif change == "slot removed":
        goal["slots"] = ["name"]
    else:  # the goal removed (and its intent with it)
        del domain["goals"]["book"]
        domain["intents"]["book"] = {
            "kind": "small_talk",
            "response": "booked",
            "keywords": {"en": ["book"]},
        }
    return domain


def _restarted(folder: Path, change: str) -> Dialogue:
    with JsonFileStore(folder) as store:
        Dialogue(load_domain(BASE), store=store, clock=monday).send("t", "book a table for 4")
    return Dialogue(load_domain(_edited(change)), store=JsonFileStore(folder), clock=monday)


def test_a_slot_added_to_the_goal_under_way_is_asked_for(tmp_path: Path) -> None:
    bot = _restarted(tmp_path, "slot added")

    asked = bot.send("t", "Ann")
    assert asked.slots == {"people": 4, "name": "Ann"}
    assert asked.missing_slots == ["phone"] and asked.text == "Your phone number?"
    assert bot.send("t", "555-1234").text == "Booked."


def test_a_slot_taken_out_of_the_goal_is_dropped(tmp_path: Path) -> None:
    bot = _restarted(tmp_path, "slot removed")

    reply = bot.send("t", "Ann")
    assert reply.text == "Booked."


def test_cancel_works_after_an_edit(tmp_path: Path) -> None:
    bot = _restarted(tmp_path, "slot added")

    reply = bot.send("t", "cancel")
    assert reply.missing_slots == [] and "Under what name?" not in reply.text


def test_a_goal_taken_out_of_the_domain_is_cancelled(tmp_path: Path) -> None:
    bot = _restarted(tmp_path, "goal removed")

    reply = bot.send("t", "hello there")
    assert reply.missing_slots == [] and reply.slots == {}


def test_a_step_by_step_goal_whose_steps_were_taken_out_goes_on_from_its_last_step(
    tmp_path: Path,
) -> None:
    guided = copy.deepcopy(BASE)
    guided["intents"]["guide"] = {"examples": {"en": ["guide me"]}, "keywords": {"en": ["guide"]}}
    guided["intents"]["next"] = {"kind": "control", "keywords": {"en": ["next"]}}
    guided["goals"]["guide"] = {
        "intent": "guide",
        "mode": "STEP_BY_STEP",
        "steps": [{"en": f"Step {n}."} for n in range(1, 5)],
        "done": "booked",
    }
    with JsonFileStore(tmp_path) as store:
        bot = Dialogue(load_domain(guided), store=store, clock=monday)
        bot.send("g", "guide me")
        assert bot.send("g", "next").text.endswith("Step 2.")
        bot.send("g", "next")  # at step 3 of 4
    shorter = copy.deepcopy(guided)
    shorter["goals"]["guide"]["steps"] = shorter["goals"]["guide"]["steps"][:2]
    with JsonFileStore(tmp_path) as store:
        reply = Dialogue(load_domain(shorter), store=store, clock=monday).send("g", "next")
    assert reply.state.goal_state.total_steps == 2
