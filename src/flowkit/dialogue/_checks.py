"""Cross-checks of a domain the pydantic models cannot express: names that must exist,
phrases every language needs, rules that must fit the entity kind. Every problem is listed,
each as ``location: what is wrong; what to do``.

``broken`` names the items whose shape was already reported (section -> names, ``*`` for the
whole section): references to them are not reported again as missing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..errors import DomainError, UnsafePatternError
from ..foundation._safe_regex import compile_pattern
from ._defaults import BUILTIN_RESPONSES, REASONS
from ._models import (
    AFFIRM,
    CONTROL_INTENTS,
    DENY,
    INFORM,
    NON_TASK_INTENTS,
    UNCLEAR,
    Domain,
    parse_timezone,
)
from ._text import normalize
from .entities import BUILTIN_ROLES, entity_values
from .forms import STOP

__all__ = ["domain_problems", "domain_warnings", "response_ids"]

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: An intent's name: an identifier, or a group and an identifier (Rasa's retrieval intents,
#: `chitchat/ask_name`).
_INTENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(?:/[A-Za-z][A-Za-z0-9_]*)?$")
_RULES_BY_KIND = {
    "number": {"min", "max", "whole"},
    "amount": {"min", "max"},
    "date": {"not_past", "max_days_ahead"},
    "time": {"earliest", "latest"},
    "text": {"min_length", "max_length", "pattern"},
    "regex": {"min_length", "max_length", "pattern"},
    "choice": set(),
}


def response_ids(domain: Domain) -> set[str]:
    return set(domain.responses) | set(BUILTIN_RESPONSES)


Broken = Mapping[str, Collection[str]]

#: Responses said only when the domain asks "anything else?" after a task.
_ASKED_ONLY = ("anything_else", "nothing_else")
#: Intent names a task intent cannot have, and why: IR reports them as the intent type of a
#: turn, which is what GST reads. Other kinds (small_talk) may use them.
_TASK_RESERVED = {
    AFFIRM: 'IR reports `affirm` for a yes to a confirmation or a "continue?" question',
    DENY: 'IR reports `deny` for a no to a confirmation or a "continue?" question',
    UNCLEAR: "IR reports `unclear` for an answer to a yes/no question that is neither",
    STOP: 'IR reports `stop` for a bare "stop" that pauses a form',
    INFORM: "IR reports `inform` for a message that only gives slot values",
}


def domain_problems(domain: Domain, *, broken: Broken | None = None) -> list[str]:
    broken = broken or {}
    if "languages" in broken:  # unknown languages: which phrases are missing is unknowable
        domain = domain.model_copy(update={"languages": []})
    found: list[str] = []
    found += _language_problems(domain)
    found += _timezone_problems(domain)
    found += _intent_problems(domain, broken)
    found += _entity_problems(domain)
    found += _slot_problems(domain, broken)
    found += _goal_problems(domain, broken)
    found += _response_problems(domain, broken)
    return found


def _gone(broken: Broken, section: str, name: str) -> bool:
    names = broken.get(section, ())
    return "*" in names or name in names


def _timezone_problems(domain: Domain) -> list[str]:
    try:
        parse_timezone(domain.timezone)
    except DomainError as exc:
        return list(exc.problems)
    return []


def _missing_languages(
    where: str, localized: Mapping[str, object], langs: Sequence[str], what: str
) -> list[str]:
    return [
        f"{where}: no {what} in `{lang}`; add {what} for `{lang}` (the domain's languages are "
        f"{', '.join(langs)})"
        for lang in langs
        if not localized.get(lang)
    ]


def _language_problems(domain: Domain) -> list[str]:
    langs = domain.languages
    found = []
    if len(set(langs)) != len(langs):
        found.append("languages: a language is listed twice; list each once")
    for lang in langs:
        if not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]+)?", lang):
            found.append(f"languages: `{lang}` is not a language code like `en` or `ja`")
    return found


def _intent_problems(domain: Domain, broken: Broken) -> list[str]:
    found: list[str] = []
    langs = domain.languages
    for name, intent in domain.intents.items():
        where = f"intents.{name}"
        if name in NON_TASK_INTENTS:
            found.append(
                f"{where}: `{name}` is reserved: it is one of IR's intent types "
                f"({', '.join(NON_TASK_INTENTS)}) that routing reads; rename it"
            )
        elif name in _TASK_RESERVED and intent.kind == "task":
            found.append(
                f"{where}: `{name}` is reserved for task intents: {_TASK_RESERVED[name]}, and "
                "the goal would take it for that; rename it, or make it `kind: small_talk` "
                "(an answer outside a form)"
            )
        if not _INTENT.match(name):
            found.append(
                f"{where}: intent names are identifiers (letters, digits, _), or a group and "
                "one (`chitchat/ask_name`)"
            )
        if intent.kind == "control" and name not in CONTROL_INTENTS:
            found.append(
                f"{where}: control intents are {', '.join(CONTROL_INTENTS)}; make `{name}` a "
                "task or small_talk intent"
            )
        if (
            intent.kind == "task"
            and domain.goal_for_intent(name) is None
            and not broken.get("goals")
        ):
            found.append(
                f"{where}: no goal starts on this task intent; add a goal with "
                f"`intent: {name}` or change its kind"
            )
        if intent.kind == "small_talk" and intent.response is None:
            found.append(f"{where}: a small_talk intent needs `response:` (a response id)")
        if intent.kind != "small_talk" and (intent.response or intent.ends_conversation):
            found.append(f"{where}: `response`/`ends_conversation` only apply to small_talk")
        phrases = {
            lang: [*intent.examples.get(lang, []), *intent.keywords.get(lang, [])] for lang in langs
        }
        if not intent.external:
            found += _missing_languages(where, phrases, langs, "examples or keywords")
    for name, faq in domain.faq.items():
        where = f"faq.{name}"
        if not _IDENT.match(name):
            found.append(f"{where}: FAQ ids are identifiers (letters, digits, _)")
        found += _missing_languages(f"{where}.questions", faq.questions, langs, "questions")
        found += _missing_languages(f"{where}.answer", faq.answer, langs, "an answer")
    return found


def _entity_problems(domain: Domain) -> list[str]:
    found: list[str] = []
    for name, entity in domain.entities.items():
        where = f"entities.{name}"
        for index, pattern in enumerate(entity.patterns):
            try:
                compile_pattern(pattern, what="pattern", ignore_case=True)
            except UnsafePatternError as exc:
                found.append(f"{where}.patterns.{index}: {exc}")
        if entity.kind == "regex" and not entity.patterns:
            found.append(f"{where}: a regex entity needs `patterns:`")
        if entity.kind == "choice":
            if not entity.values:
                found.append(f"{where}: a choice entity needs `values:` (value -> synonyms)")
            for value, synonyms in entity.values.items():
                if not any(synonyms.values()):
                    found.append(f"{where}.values.{value}: list at least one synonym")
        if entity.kind not in ("regex", "text") and entity.patterns:
            found.append(f"{where}: `patterns` only apply to regex and text entities")
    return found


def _slot_problems(domain: Domain, broken: Broken) -> list[str]:
    found: list[str] = []
    for name, slot in domain.slots.items():
        where = f"slots.{name}"
        if not _IDENT.match(name):
            found.append(f"{where}: slot names are identifiers (letters, digits, _)")
        found += _from_intent_problems(domain, name, broken)
        found += _slot_entity_problems(domain, name, broken)
        if slot.validation.pattern is not None:
            try:
                compile_pattern(slot.validation.pattern, what="pattern")
            except UnsafePatternError as exc:
                found.append(f"{where}.validation.pattern: {exc}")
        found += _missing_languages(
            f"{where}.question", slot.question, domain.languages, "question"
        )
    return found


def _slot_entity_problems(domain: Domain, name: str, broken: Broken) -> list[str]:
    slot, where = domain.slots[name], f"slots.{name}"
    if slot.entity is None:
        return []
    entity = domain.entities.get(slot.entity)
    found: list[str] = []
    if entity is None:
        if not _gone(broken, "entities", slot.entity):
            found.append(
                f"{where}.entity: entity `{slot.entity}` is not defined; add it under "
                "entities or fix the name"
            )
        return found
    if slot.role is not None and slot.role not in {*entity.roles, *BUILTIN_ROLES}:
        found.append(
            f"{where}.role: entity `{slot.entity}` gives no cue words for role "
            f"`{slot.role}`; add `roles: {{{slot.role}: {{en: [...]}}}}` to it or use "
            f"{' or '.join(BUILTIN_ROLES)}"
        )
    rules = _rules(slot.validation.model_dump())
    for rule in sorted(set(slot.validation.messages) - rules):
        found.append(
            f"{where}.validation.messages.{rule}: the slot has no `{rule}` rule; name one of "
            f"its rules ({', '.join(sorted(rules)) or 'none'})"
        )
    for rule in sorted(rules - _RULES_BY_KIND[entity.kind]):
        found.append(
            f"{where}.validation.{rule}: does not apply to a {entity.kind} entity; "
            f"use {', '.join(sorted(_RULES_BY_KIND[entity.kind])) or 'no rules'}"
        )
    return found


def _rules(validation: Mapping[str, Any]) -> set[str]:
    """The rules a slot's ``validation`` sets (its ``messages`` are not a rule)."""
    return {k for k, v in validation.items() if k != "messages" and v not in (None, False)}


def _from_intent_problems(domain: Domain, name: str, broken: Broken) -> list[str]:
    slot, where = domain.slots[name], f"slots.{name}"
    found: list[str] = []
    if slot.entity is None and not slot.from_intent:
        found.append(
            f"{where}: a slot needs `entity:` or `from_intent:`; add the entity that fills it"
        )
    for intent in slot.from_intent:
        known = intent in domain.intents or intent in domain.faq or intent in (AFFIRM, DENY)
        if not known and not _gone(broken, "intents", intent):
            found.append(
                f"{where}.from_intent: `{intent}` is not an intent of this domain, nor affirm "
                "or deny (a yes or a no); name one of them"
            )
    return found


def _goal_problems(domain: Domain, broken: Broken) -> list[str]:
    found: list[str] = []
    owners: dict[str, str] = {}
    for name, goal in domain.goals.items():
        where = f"goals.{name}"
        intent = domain.intents.get(goal.intent)
        if _gone(broken, "intents", goal.intent):
            pass
        elif intent is None or intent.kind != "task":
            found.append(f"{where}.intent: `{goal.intent}` is not a task intent of this domain")
        elif goal.intent in owners:
            found.append(
                f"{where}.intent: goal `{owners[goal.intent]}` already starts on "
                f"`{goal.intent}`; one goal per intent"
            )
        owners.setdefault(goal.intent, name)
        if goal.mode == "SLOT_FILLING":
            if not goal.slots and goal.action is None:
                found.append(
                    f"{where}: a SLOT_FILLING goal needs `slots:`, or an `action:` to run at "
                    "once (an action-only goal)"
                )
            if goal.steps:
                found.append(f"{where}: `steps` only apply to STEP_BY_STEP goals")
        else:
            if not goal.steps:
                found.append(f"{where}: a STEP_BY_STEP goal needs `steps:`")
            if goal.slots:
                found.append(f"{where}: `slots` only apply to SLOT_FILLING goals")
        for slot in goal.slots:
            if slot not in domain.slots and not _gone(broken, "slots", slot):
                found.append(f"{where}.slots: slot `{slot}` is not defined under slots")
        if len(set(goal.slots)) != len(goal.slots):
            found.append(f"{where}.slots: a slot is listed twice")
        for index, step in enumerate(goal.steps):
            found += _missing_languages(f"{where}.steps.{index}", step, domain.languages, "text")
        if (
            goal.action is not None
            and goal.action not in domain.actions
            and not _gone(broken, "actions", goal.action)
        ):
            found.append(f"{where}.action: action `{goal.action}` is not declared under actions")
        if goal.confirm and goal.mode != "SLOT_FILLING":
            found.append(
                f"{where}.confirm: only SLOT_FILLING goals ask for confirmation; remove "
                "`confirm` or make the goal SLOT_FILLING"
            )
        elif goal.confirm and goal.action is None:
            found.append(
                f"{where}.confirm: the goal has no action, so there is nothing to confirm; add "
                "`action:` or remove `confirm`"
            )
        if goal.done not in response_ids(domain) and not _gone(broken, "responses", goal.done):
            found.append(f"{where}.done: response `{goal.done}` is not defined under responses")
    return found


def _response_problems(domain: Domain, broken: Broken) -> list[str]:
    found: list[str] = []
    langs = domain.languages
    for name, intent in domain.intents.items():
        if (
            intent.response
            and intent.response not in response_ids(domain)
            and not _gone(broken, "responses", intent.response)
        ):
            found.append(
                f"intents.{name}.response: response `{intent.response}` is not "
                "defined under responses"
            )
    found += _then_problems(domain, broken)
    for name, response in domain.responses.items():
        for index, variant in enumerate(response.when):
            for slot in variant.slots:
                if slot not in domain.slots and not _gone(broken, "slots", slot):
                    found.append(
                        f"responses.{name}.when.{index}.slots: slot `{slot}` is not defined "
                        "under slots"
                    )
    for rid in sorted(response_ids(domain)):
        if _gone(broken, "responses", rid) or (rid in _ASKED_ONLY and not domain.anything_else):
            continue
        spec = domain.responses.get(rid)
        text: dict[str, str | list[str]] = dict(BUILTIN_RESPONSES.get(rid, {}))
        if spec is not None:
            text.update(spec.text)
        found += _missing_languages(f"responses.{rid}", text, langs, "text")
    # A rule every slot using it words itself needs no domain-wide text.
    used = {
        rule
        for slot in domain.slots.values()
        for rule in _rules(slot.validation.model_dump())
        if any(lang not in slot.validation.messages.get(rule, {}) for lang in langs)
    }
    for code, builtin in REASONS.items():
        if code not in used:
            continue
        spec = domain.responses.get(f"reason_{code}")
        text = {**builtin, **(spec.text if spec else {})}
        for lang in langs:
            if not text.get(lang):
                found.append(
                    f"responses.reason_{code}: no text in `{lang}`; define it (the "
                    "message for a slot value that breaks this rule)"
                )
    return found


def _then_problems(domain: Domain, broken: Broken) -> list[str]:
    """``then`` names responses that exist, and never leads back to where it started."""
    found: list[str] = []
    known = response_ids(domain)
    for name, spec in domain.responses.items():
        for rid in spec.then:
            if rid not in known and not _gone(broken, "responses", rid):
                found.append(
                    f"responses.{name}.then: response `{rid}` is not defined under responses"
                )
        seen, todo = set(), list(spec.then)
        while todo:
            rid = todo.pop()
            if rid == name:
                found.append(
                    f"responses.{name}.then: leads back to `{name}` (a loop); remove one of "
                    "the responses that follow each other"
                )
                break
            if rid not in seen and rid in domain.responses:
                seen.add(rid)
                todo += domain.responses[rid].then
    return found


def domain_warnings(domain: Domain) -> list[str]:
    """What loads but may not work as meant: keywords that are also entity values (entity
    extraction cuts them out before intents are scored, so they only fire weakly)."""
    values = entity_values(domain)
    found: list[str] = []
    sections = [
        *((f"intents.{n}", s.keywords) for n, s in domain.intents.items()),
        *((f"faq.{n}", s.keywords) for n, s in domain.faq.items()),
    ]
    for where, keywords in sections:
        for lang, words in keywords.items():
            for word in words:
                entity = values.get(normalize(word))
                if entity is not None:
                    found.append(
                        f"{where}.keywords: `{word}` ({lang}) is also a value of entity "
                        f"`{entity}`, so it is read as that entity first and only fires the "
                        "intent when nothing else does (it never interrupts a question); use "
                        "another keyword, or examples with the value in them"
                    )
    return found
