"""Domain writing without friction (#27): action-only goals, response variations (seedable),
several messages per turn (`then:`), replies that branch on slot values (`when:`), an
optional "anything else?" after a finished task, and reserved names only where a name would
clash, with the reason in the error."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import yaml

from flowkit import Runner
from flowkit.dialogue import Dialogue, build_flow, load_domain
from flowkit.dialogue.actions import ActionCall, ActionResult
from flowkit.dialogue.responses import Renderer
from flowkit.dialogue.state import DialogueState, GoalState, ResponsePlan
from flowkit.errors import DomainError

from .conftest import monday

CAFE = """
version: 1
name: cafe
languages: [en, ja]
intents:
  restart_machine:
    examples: {en: [restart the coffee machine], ja: [コーヒーマシンを再起動して]}
    keywords: {en: [restart], ja: [再起動]}
  order:
    examples: {en: [I want a coffee, order a drink], ja: [コーヒーをください]}
    keywords: {en: [order, coffee], ja: [注文, コーヒー]}
  affirm:                       # allowed: a small-talk answer outside a form
    kind: small_talk
    response: glad
    examples: {en: [great, perfect], ja: [いいね, 最高]}
  greet:
    kind: small_talk
    response: greet
    examples: {en: [hello], ja: [こんにちは]}
entities:
  size:
    kind: choice
    values:
      small: {en: [small], ja: [小さい, Sサイズ]}
      large: {en: [large, big], ja: [大きい, Lサイズ]}
      medium: {en: [medium], ja: [普通, Mサイズ]}
slots:
  size:
    entity: size
    question: {en: "Small, medium or large?", ja: サイズはどうしますか？}
goals:
  restart_machine:              # action-only: no slots to ask for
    intent: restart_machine
    mode: SLOT_FILLING
    action: restart
    done: restarted
  order:
    intent: order
    mode: SLOT_FILLING
    slots: [size]
    action: serve
    done: served
actions:
  restart: {}
  serve: {}
responses:
  greet:
    en: [Hello!, Hi there!, Welcome!]
    ja: [こんにちは！, いらっしゃいませ！]
  glad: {en: Glad to hear it., ja: よかったです。}
  restarted:
    en: The machine is restarting.
    ja: マシンを再起動しています。
    then: [restart_tip]
  restart_tip: {en: It takes about a minute., ja: 1分ほどかかります。}
  served:
    text: {en: "Here is your {size} coffee.", ja: "{size}のコーヒーです。"}
    when:
      - slots: {size: large}
        text: {en: "Here is your large coffee. Careful, it is hot!"}
      - slots: {size: [small, medium]}
        text: {ja: "{size}のコーヒーです。ごゆっくりどうぞ。"}
"""


def cafe(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(CAFE)
    data.update(changes)
    return data


def _count(calls: list[str]) -> Any:
    def handler(call: ActionCall) -> ActionResult:
        calls.append(call.goal)
        return ActionResult(summary={})

    return handler


def test_an_action_only_goal_runs_at_once_without_slots() -> None:
    calls: list[str] = []
    bot = Dialogue(cafe(), actions={"restart": _count(calls)})
    reply = bot.send("a", "restart the coffee machine")
    assert reply.response_id == "restarted" and reply.missing_slots == []
    assert calls == ["restart_machine"]
    goals = cafe()["goals"]
    del goals["restart_machine"]["action"]
    with pytest.raises(DomainError) as caught:
        load_domain(cafe(goals=goals))
    assert (
        "goals.restart_machine: a SLOT_FILLING goal needs `slots:`, or an `action:` to run at "
        "once (an action-only goal)"
    ) in caught.value.problems


def test_several_messages_per_turn_follow_each_other() -> None:
    bot = Dialogue(cafe())
    assert bot.send("m", "restart the coffee machine").text.splitlines() == [
        "The machine is restarting.",
        "It takes about a minute.",
    ]
    assert bot.send("m", "コーヒーマシンを再起動して").text.splitlines() == [
        "マシンを再起動しています。",
        "1分ほどかかります。",
    ]
    responses = cafe()["responses"]
    responses["restart_tip"]["then"] = ["restarted"]
    responses["glad"]["then"] = ["no_such_response"]
    with pytest.raises(DomainError) as caught:
        load_domain(cafe(responses=responses))
    problems = caught.value.problems
    assert any(
        p.startswith("responses.restarted.then: leads back to `restarted`") for p in problems
    )
    assert "responses.glad.then: response `no_such_response` is not defined under responses" in (
        problems
    )


def test_variations_are_chosen_per_reply_and_a_seed_repeats_the_choice() -> None:
    domain = load_domain(cafe())
    plan = ResponsePlan(id="greet", by="NP", lang="en")

    def said(seed: int) -> list[str]:
        renderer = Renderer(domain, seed=seed)
        return [renderer.render(plan, GoalState(), {}, None) for _ in range(30)]

    assert said(7) == said(7)
    assert said(7) != said(8)
    assert set(said(7)) == {"Hello!", "Hi there!", "Welcome!"}
    # Through the flow: `build_flow(..., response_seed=...)` makes a conversation repeatable.
    texts = []
    for thread in ("x", "y"):
        runner: Runner[DialogueState] = Runner(build_flow(domain, response_seed=3))
        runner.start(thread, {"domain": "cafe"})
        texts.append(
            [runner.resume(thread, {"text": "hello"}).state.final_answer for _ in range(6)]
        )
    assert texts[0] == texts[1] and len(set(texts[0])) > 1


def test_a_reply_branches_on_slot_values() -> None:
    bot = Dialogue(cafe())
    bot.send("w", "I want a coffee")
    assert bot.send("w", "large").text == "Here is your large coffee. Careful, it is hot!"
    bot.send("w", "order a drink")
    assert bot.send("w", "small").text == "Here is your small coffee."  # no English variant
    bot.send("j", "コーヒーをください")
    assert bot.send("j", "Mサイズ").text == "普通のコーヒーです。ごゆっくりどうぞ。"
    bot.send("j", "コーヒーをください")
    assert bot.send("j", "Lサイズ").text == "大きいのコーヒーです。"  # no Japanese variant
    responses = cafe()["responses"]
    responses["served"]["when"].append({"slots": {"milk": True}, "text": {"en": "With milk."}})
    with pytest.raises(DomainError) as caught:
        load_domain(cafe(responses=responses))
    assert caught.value.problems == [
        "responses.served.when.2.slots: slot `milk` is not defined under slots"
    ]


def test_unfilled_slots_match_null_in_a_when_variant() -> None:
    domain = load_domain(cafe())
    data = domain.model_dump()
    data["responses"]["served"]["when"] = [
        {"slots": {"size": None}, "text": {"en": "Here is your coffee."}}
    ]
    renderer = Renderer(load_domain(data))
    plan = ResponsePlan(id="served", by="GP", lang="en")
    assert renderer.render(plan, GoalState(), {}, None) == "Here is your coffee."
    assert (
        renderer.render(plan, GoalState(), {"size": "small"}, None) == "Here is your small coffee."
    )


def test_anything_else_is_off_by_default_and_asked_when_the_domain_says() -> None:
    plain = Dialogue(cafe())
    assert plain.send("o", "restart the coffee machine").text.count("\n") == 1
    calls: list[str] = []
    bot = Dialogue(cafe(anything_else=True), actions={"restart": _count(calls)})
    reply = bot.send("e", "restart the coffee machine")
    assert reply.text.splitlines()[-1] == "Is there anything else I can help you with?"
    reply = bot.send("e", "no")
    assert (reply.response_id, reply.text) == (
        "nothing_else",
        "All right. Just ask if you need anything.",
    )
    assert not reply.done and calls == ["restart_machine"]
    bot.send("e", "order a drink")
    assert bot.send("e", "medium").text.endswith("\nIs there anything else I can help you with?")
    assert bot.send("e", "yes").response_id == "no_active_goal"  # "What would you like to do?"
    bot.send("j", "コーヒーをください")
    assert bot.send("j", "Sサイズ").text.splitlines()[-1] == "ほかにご用件はありますか？"
    assert bot.send("j", "いいえ").text == "承知しました。また何かあればお声がけください。"
    # Only while it was just asked: later, a bare no is understood as usual.
    assert bot.send("j", "いいえ").response_id != "nothing_else"


def test_reserved_names_only_where_they_clash_and_the_error_says_why() -> None:
    bot = Dialogue(cafe())
    assert bot.send("r", "great").text == "Glad to hear it."  # small_talk `affirm` is fine
    intents = cafe()["intents"]
    intents["stop"] = {
        "kind": "small_talk",
        "response": "glad",
        "examples": {"en": ["stop"], "ja": ["止めて"]},
    }
    load_domain(cafe(intents=intents))  # small talk named `stop`: allowed
    for name, reason in (
        ("stop", 'IR reports `stop` for a bare "stop" that pauses a form'),
        ("deny", 'IR reports `deny` for a no to a confirmation or a "continue?" question'),
        ("inform", "IR reports `inform` for a message that only gives slot values"),
    ):
        intents = cafe()["intents"]
        intents[name] = {"examples": {"en": ["x y"], "ja": ["x y"]}}
        goals = cafe()["goals"]
        goals[name] = {"intent": name, "mode": "SLOT_FILLING", "action": "restart"}
        with pytest.raises(DomainError) as caught:
            load_domain(cafe(intents=intents, goals=goals))
        assert caught.value.problems == [
            f"intents.{name}: `{name}` is reserved for task intents: {reason}, and the goal "
            "would take it for that; rename it, or make it `kind: small_talk` (an answer "
            "outside a form)"
        ]
    intents = cafe()["intents"]
    intents["OOS"] = {
        "kind": "small_talk",
        "response": "glad",
        "examples": {"en": ["x"], "ja": ["x"]},
    }
    with pytest.raises(DomainError) as caught:
        load_domain(cafe(intents=intents))
    assert caught.value.problems[0].startswith(
        "intents.OOS: `OOS` is reserved: it is one of IR's intent types"
    )


def test_reason_responses_with_variations_use_their_first_text() -> None:
    robot = load_domain("robot_cell").model_dump()
    robot["responses"]["reason_min_length"] = {
        "text": {"en": ["Too short.", "Short."], "ja": ["短い"]}
    }
    bot = Dialogue(robot, clock=monday)
    bot.send("v", "book maintenance for robot 1 tomorrow at 10:00")
    assert bot.send("v", "X").text.startswith("Too short.")


def test_then_and_anything_else_make_three_messages_in_one_turn() -> None:
    bot = Dialogue(cafe(anything_else=True))
    lines = bot.send("c", "restart the coffee machine").text.splitlines()
    assert max(Counter(lines).values()) == 1 and len(lines) == 3
