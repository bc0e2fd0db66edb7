"""Who speaks next: the ``[Next: …]`` nomination of seed 004, as pure functions.

A reply nominates the next speaker with ``[Next: ID]`` tags and ``{"next": "ID"}`` objects;
the last nomination in the text wins. The name is normalised (NFKC, quotes, brackets,
punctuation and whitespace dropped, honorifics such as さん / 様 / ちゃん removed, ASCII
upper-cased) and matched against the registry: internal id, then display name, then short
name, then synonyms, then a fuzzy match at ``fuzzy_threshold`` or better. ``USER``, unknown
names, the speaker itself (unless ``allow_self_nomination``) and characters in ``exclude``
are refused. Without an accepted nomination the fallback picks: round robin in registry order
after the speaker, or a random other character from a seeded generator; ``none`` when nobody
is left, which ends the characters' round.

Nothing here logs, reads a clock or calls a model: the nodes do, with what these return.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "USER_NAMES",
    "Member",
    "NextPolicy",
    "NextSpeaker",
    "Nomination",
    "Reason",
    "Refusal",
    "extract_nominations",
    "fallback_speaker",
    "match_nomination",
    "normalize_name",
    "resolve_next_speaker",
    "strip_think",
]

#: Why a speaker was chosen: by its tag, by a fuzzy match of it, by a fallback, or nobody.
Reason = Literal["tag", "fuzzy", "round_robin", "random", "none"]
#: Why a nomination was not taken.
Refusal = Literal["missing", "user", "unknown", "self", "spoken"]

#: Names that mean the person at the table, never a character (normalised form).
USER_NAMES = frozenset({"USER", "ユーザー", "ユーザ", "HUMAN"})
_HONORIFICS = ("さん", "様", "さま", "ちゃん", "君", "くん")
# Replies come from models, so the patterns must not backtrack on what a model may write: a
# possessive run (*+) never gives characters back, an atomic group (?>...) never retries
# another way once it matched, and a run is only tried from its first character.
_ASCII_HONORIFICS = re.compile(r"(?i)(?<![-\s])[-\s]++(san|sama|chan|kun|dono)$")
_THINK = re.compile(r"<(think|thought)>.*?(</\1>|$)", re.IGNORECASE | re.DOTALL)
# Some chat templates open the section themselves, so only its close reaches us.
_STRAY_CLOSE = re.compile(r"</(?:think|thought)>", re.IGNORECASE)
# The name keeps its trailing spaces (stripped after): a lazy name before \s* was cubic. It
# stops at the next "[", so unclosed tags are not each read to the end (quadratic).
_TAG = re.compile(r"\[\s*+next\s*+:\s*+([^\[\]\n]*+)\s*+\]", re.IGNORECASE)
_JSON_NEXT = re.compile(r'\{(?>[^{}]*?"next"\s*:\s*"([^"\n]*)")[^{}]*+\}', re.IGNORECASE)


class Member(BaseModel):
    """A character of the registry (seed 004 §3): ids and names the nominations may use."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    internal_id: str
    display_name: str
    short_name: str = ""
    synonyms: tuple[str, ...] = ()


class NextPolicy(BaseModel):
    """How nominations are judged and what happens without one (origin: ``NextPolicy``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allow_self_nomination: bool = Field(
        False, description="accept a speaker nominating itself (else the fallback decides)"
    )
    fallback: Literal["round_robin", "random"] = Field(
        "round_robin",
        description="round_robin: the next character in registry order after the speaker; "
        "random: any other character, from a generator seeded with `seed`",
    )
    fuzzy_threshold: float = Field(
        0.85, ge=0.0, le=1.0, description="similarity (0-1) a misspelt name needs to match"
    )
    seed: int = Field(0, description="seed of the random fallback (with the turn number)")


@dataclass(frozen=True, slots=True)
class Nomination:
    """What a reply said about the next speaker and whether it stands.

    ``raw`` is the last nomination as written (``None``: there was none), ``normalized`` its
    normalised form; ``internal_id`` the character it names, when accepted; ``method`` how
    it matched; ``refusal`` why it was not taken.
    """

    raw: str | None
    normalized: str | None
    internal_id: str | None = None
    method: Literal["tag", "fuzzy"] | None = None
    refusal: Refusal | None = None


@dataclass(frozen=True, slots=True)
class NextSpeaker:
    """The decision: ``internal_id`` (``None`` with reason ``none``), why, and the nomination."""

    internal_id: str | None
    reason: Reason
    nomination: Nomination


def strip_think(text: str) -> str:
    """``text`` without ``<think>…</think>`` (or ``<thought>``) sections; an unclosed one runs
    to the end of the text, and a stray ``</think>`` (its opening tag never sent) takes
    everything before it."""
    text = _THINK.sub("", text)
    strays = list(_STRAY_CLOSE.finditer(text))
    return text[strays[-1].end() :] if strays else text


def extract_nominations(text: str) -> list[str]:
    """Every nomination in ``text`` in order: ``[Next: X]`` tags and ``{"next": "X"}``
    objects, outside ``<think>`` sections (full-width forms count too)."""
    cleaned = unicodedata.normalize("NFKC", strip_think(text))
    found = [(m.start(), m.group(1).rstrip()) for m in _TAG.finditer(cleaned)]
    found += [(m.start(), m.group(1)) for m in _JSON_NEXT.finditer(cleaned)]
    return [name for _, name in sorted(found)]


def normalize_name(raw: str) -> str:
    """A name as nominations are compared: NFKC, no quotes, brackets, punctuation or spaces,
    no honorific, ASCII upper-cased (``「ルミナさん」`` -> ``ルミナ``, `` nox `` -> ``NOX``)."""
    text = unicodedata.normalize("NFKC", raw).strip()
    text = _ASCII_HONORIFICS.sub("", text)
    kept = "".join(
        ch for ch in text if not unicodedata.category(ch).startswith(("P", "Z", "C", "S"))
    )
    for suffix in _HONORIFICS:
        if kept.endswith(suffix) and len(kept) > len(suffix):
            kept = kept[: -len(suffix)]
            break
    return "".join(ch.upper() if ch.isascii() else ch for ch in kept)


def _keys(registry: Sequence[Member]) -> list[tuple[str, str]]:
    """(normalised name, internal id) in matching order: ids, display names, short names,
    synonyms."""
    ordered: list[tuple[str, str]] = []
    for pick in (
        lambda m: (m.internal_id,),
        lambda m: (m.display_name,),
        lambda m: (m.short_name,),
        lambda m: m.synonyms,
    ):
        for member in registry:
            for name in pick(member):
                key = normalize_name(name)
                if key:
                    ordered.append((key, member.internal_id))
    return ordered


def match_nomination(
    text: str,
    current: str | None,
    registry: Sequence[Member],
    policy: NextPolicy | None = None,
    *,
    exclude: Iterable[str] = (),
) -> Nomination:
    """The last nomination in ``text``, matched against ``registry`` and judged."""
    policy = policy or NextPolicy()
    names = extract_nominations(text)
    if not names:
        return Nomination(None, None, refusal="missing")
    raw = names[-1].strip()
    normalized = normalize_name(raw)
    if not normalized:
        return Nomination(raw, normalized, refusal="unknown")
    if normalized in USER_NAMES:
        return Nomination(raw, normalized, refusal="user")
    keys = _keys(registry)
    found: str | None = next((member for key, member in keys if key == normalized), None)
    method: Literal["tag", "fuzzy"] = "tag"
    if found is None:
        found = _fuzzy(normalized, keys, policy.fuzzy_threshold)
        method = "fuzzy"
    if found is None:
        return Nomination(raw, normalized, refusal="unknown")
    if found == current and not policy.allow_self_nomination:
        return Nomination(raw, normalized, found, method, refusal="self")
    if found in set(exclude):
        return Nomination(raw, normalized, found, method, refusal="spoken")
    return Nomination(raw, normalized, found, method)


def _fuzzy(normalized: str, keys: list[tuple[str, str]], threshold: float) -> str | None:
    from rapidfuzz import fuzz, process

    if not keys:
        return None
    best = process.extractOne(
        normalized,
        [key for key, _ in keys],
        scorer=fuzz.ratio,
        score_cutoff=threshold * 100,
    )
    if best is None:
        return None
    return keys[best[2]][1]


def fallback_speaker(
    current: str | None,
    registry: Sequence[Member],
    policy: NextPolicy | None = None,
    *,
    rng: random.Random | None = None,
    exclude: Iterable[str] = (),
) -> tuple[str | None, Reason]:
    """The fallback's pick: round robin after ``current`` in registry order, or random (from
    ``rng``, default ``Random(policy.seed)``); never ``current`` unless self-nomination is
    allowed, never one of ``exclude``. ``(None, "none")`` when nobody is left."""
    policy = policy or NextPolicy()
    excluded = set(exclude)
    ids = [m.internal_id for m in registry]

    def allowed(member: str) -> bool:
        if member in excluded:
            return False
        return member != current or policy.allow_self_nomination

    if policy.fallback == "random":
        choices = [m for m in ids if allowed(m)]
        if not choices:
            return None, "none"
        return (rng or random.Random(policy.seed)).choice(choices), "random"
    start = ids.index(current) + 1 if current in ids else 0
    # Everyone after the speaker, wrapping round; the speaker last (when it may speak again).
    for offset in range(len(ids)):
        member = ids[(start + offset) % len(ids)]
        if allowed(member):
            return member, "round_robin"
    return None, "none"


def resolve_next_speaker(
    text: str,
    current: str | None,
    registry: Sequence[Member],
    policy: NextPolicy | None = None,
    *,
    rng: random.Random | None = None,
    exclude: Iterable[str] = (),
) -> NextSpeaker:
    """The next speaker after ``current`` said ``text``: its accepted nomination, else the
    fallback's pick (see the module docstring)."""
    excluded = frozenset(exclude)
    nomination = match_nomination(text, current, registry, policy, exclude=excluded)
    if nomination.refusal is None and nomination.method is not None:
        return NextSpeaker(nomination.internal_id, nomination.method, nomination)
    chosen, reason = fallback_speaker(current, registry, policy, rng=rng, exclude=excluded)
    return NextSpeaker(chosen, reason, nomination)
