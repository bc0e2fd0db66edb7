"""Next-speaker resolution, rule by rule: extraction (last tag wins, JSON form, <think>),
normalisation (NFKC, brackets, honorifics, punctuation, case), matching order (id, display
name, short name, synonyms, fuzzy), refusals (self, USER, unknown, spoken) and fallbacks."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.roundtable.speaker import (
    Member,
    NextPolicy,
    extract_nominations,
    fallback_speaker,
    match_nomination,
    normalize_name,
    resolve_next_speaker,
)

REGISTRY = [
    Member(internal_id="LUMINA", display_name="ルミナ", short_name="る", synonyms=("Lumi",)),
    Member(internal_id="CLARIS", display_name="クラリス", short_name="く"),
    Member(internal_id="NOX", display_name="ノクス", short_name="の", synonyms=("夜",)),
]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("LUMINA", "LUMINA"),
        (" nox ", "NOX"),
        ("Ｎｏｘ", "NOX"),  # NFKC: full-width letters
        ("(クラリス)", "クラリス"),
        ("「ルミナさん」", "ルミナ"),
        ("ルミナ様", "ルミナ"),
        ("ノクスちゃん。", "ノクス"),
        ("'Claris'", "CLARIS"),
        ("Nox-san", "NOX"),
        ("Lu mi na!", "LUMINA"),
        ("さん", "さん"),  # an honorific alone is not stripped to nothing
        ("", ""),
    ],
)
def test_normalize_name(raw: str, expected: str) -> None:
    assert normalize_name(raw) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi. [Next: NOX]", ["NOX"]),
        ("[Next: NOX] then [next:claris]", ["NOX", "claris"]),
        ('I think so. {"next": "CLARIS"}', ["CLARIS"]),
        ('[Next: NOX] {"next":"LUMINA"}', ["NOX", "LUMINA"]),
        ('{"next":"LUMINA"} [Next: NOX]', ["LUMINA", "NOX"]),
        ("<think>[Next: NOX]</think> fine. [Next: CLARIS]", ["CLARIS"]),
        ("<think>unclosed [Next: NOX]", []),
        ("ノクスかな [Next: NOX]</think>答え。[Next: CLARIS]", ["CLARIS"]),
        ("［Ｎｅｘｔ：ノクス］", ["ノクス"]),  # full-width brackets and colon
        ("[ NEXT :  ルミナ ]", ["ルミナ"]),
        ("no tag at all", []),
    ],
)
def test_extract_nominations(text: str, expected: list[str]) -> None:
    assert extract_nominations(text) == expected


# (reply, speaker, expected next id, reason, refusal)
CASES = [
    # matched by tag: internal id, display name, short name, synonym
    ("Yes. [Next: NOX]", "LUMINA", "NOX", "tag", None),
    ("はい。[Next: クラリス]", "LUMINA", "CLARIS", "tag", None),
    ("はい。[Next: の]", "LUMINA", "NOX", "tag", None),
    ("はい。[Next: Lumi]", "NOX", "LUMINA", "tag", None),
    ("はい。[Next: 夜]", "LUMINA", "NOX", "tag", None),
    # normalisation before matching
    ("[next:   nox ]", "LUMINA", "NOX", "tag", None),
    ("[Next: (クラリス)]", "LUMINA", "CLARIS", "tag", None),
    ("[Next: ルミナさん]", "NOX", "LUMINA", "tag", None),
    ("[Next: 「ノクス様」。]", "LUMINA", "NOX", "tag", None),
    # fuzzy at >= 0.85
    ("[Next: CLARISS]", "LUMINA", "CLARIS", "fuzzy", None),
    ("[Next: LUMINAA]", "NOX", "LUMINA", "fuzzy", None),
    # last tag wins; JSON counts too
    ("[Next: NOX] no wait [Next: CLARIS]", "LUMINA", "CLARIS", "tag", None),
    ('Done. {"next": "NOX"}', "CLARIS", "NOX", "tag", None),
    ('[Next: NOX] {"next": "CLARIS"}', "LUMINA", "CLARIS", "tag", None),
    # refused: self, USER, unknown, missing -> round robin after the speaker
    ("[Next: LUMINA]", "LUMINA", "CLARIS", "round_robin", "self"),
    ("[Next: る]", "LUMINA", "CLARIS", "round_robin", "self"),
    ("[Next: USER]", "CLARIS", "NOX", "round_robin", "user"),
    ("[Next: ユーザー]", "NOX", "LUMINA", "round_robin", "user"),
    ("[Next: BOB]", "NOX", "LUMINA", "round_robin", "unknown"),
    ("[Next: CLA]", "LUMINA", "CLARIS", "round_robin", "unknown"),  # below the threshold
    ("[Next: ]", "LUMINA", "CLARIS", "round_robin", "unknown"),
    ("no tag", "CLARIS", "NOX", "round_robin", "missing"),
    ("<think>[Next: NOX]</think>ok", "LUMINA", "CLARIS", "round_robin", "missing"),
]


@pytest.mark.parametrize(("text", "speaker", "expected", "reason", "refusal"), CASES)
def test_resolve_next_speaker(
    text: str, speaker: str, expected: str, reason: str, refusal: str | None
) -> None:
    decision = resolve_next_speaker(text, speaker, REGISTRY)
    assert (decision.internal_id, decision.reason) == (expected, reason)
    assert decision.nomination.refusal == refusal


def test_self_nomination_is_taken_when_allowed() -> None:
    policy = NextPolicy(allow_self_nomination=True)
    decision = resolve_next_speaker("[Next: LUMINA]", "LUMINA", REGISTRY, policy)
    assert (decision.internal_id, decision.reason) == ("LUMINA", "tag")


def test_a_character_that_spoke_is_refused_and_skipped_by_the_fallback() -> None:
    decision = resolve_next_speaker("[Next: CLARIS]", "LUMINA", REGISTRY, exclude={"CLARIS"})
    assert decision.nomination.refusal == "spoken"
    assert (decision.internal_id, decision.reason) == ("NOX", "round_robin")


def test_nobody_left_is_reason_none() -> None:
    decision = resolve_next_speaker("[Next: NOX]", "LUMINA", REGISTRY, exclude={"CLARIS", "NOX"})
    assert (decision.internal_id, decision.reason) == (None, "none")
    alone = [REGISTRY[0]]
    assert fallback_speaker("LUMINA", alone) == (None, "none")


def test_the_fuzzy_threshold_is_the_policys() -> None:
    strict = NextPolicy(fuzzy_threshold=0.99)
    assert match_nomination("[Next: CLARISS]", "NOX", REGISTRY, strict).refusal == "unknown"
    loose = NextPolicy(fuzzy_threshold=0.5)
    assert match_nomination("[Next: CLA]", "NOX", REGISTRY, loose).internal_id == "CLARIS"


@pytest.mark.parametrize(
    ("current", "expected"),
    [("LUMINA", "CLARIS"), ("CLARIS", "NOX"), ("NOX", "LUMINA"), ("STRANGER", "LUMINA")],
)
def test_round_robin_follows_registry_order(current: str, expected: str) -> None:
    assert fallback_speaker(current, REGISTRY) == (expected, "round_robin")


def test_random_fallback_is_seeded_and_never_picks_the_speaker() -> None:
    policy = NextPolicy(fallback="random", seed=7)
    picks = [
        fallback_speaker("NOX", REGISTRY, policy, rng=random.Random(turn))[0] for turn in range(40)
    ]
    assert set(picks) == {"LUMINA", "CLARIS"}
    again = [
        fallback_speaker("NOX", REGISTRY, policy, rng=random.Random(turn))[0] for turn in range(40)
    ]
    assert picks == again
    decision = resolve_next_speaker("no tag", "NOX", REGISTRY, policy)
    assert decision.reason == "random" and decision.internal_id in {"LUMINA", "CLARIS"}


@given(st.text(max_size=200), st.sampled_from(["LUMINA", "CLARIS", "NOX"]))
def test_any_text_gets_another_registered_speaker(text: str, speaker: str) -> None:
    decision = resolve_next_speaker(text, speaker, REGISTRY)
    assert decision.internal_id in {"LUMINA", "CLARIS", "NOX"} - {speaker}
    assert decision.reason in ("tag", "fuzzy", "round_robin")


#: Replies that made the nomination patterns backtrack without bound (cubic in the run of
#: spaces after an unclosed tag, quadratic in an unclosed object or a long name); each is
#: read in linear time now, bounded by the test's timeout.
HOSTILE_REPLIES = [
    ("[Next:" + " " * 50_000, []),
    ("[Next:" + " " * 50_000 + "NOX ]", ["NOX"]),
    ("[Next:\n" + "\t" * 50_000 + "\n", []),
    ("{" + '"next": "NOX", ' * 5_000, []),
    ("{" + '"next": "NOX", ' * 5_000 + "}", ["NOX"]),
    ("{" + '"next":' * 10_000, []),
    ("[Next: " * 100_000, []),
    ("[Next: " * 100_000 + "NOX]", ["NOX"]),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("text", "expected"), HOSTILE_REPLIES)
def test_hostile_replies_are_read_in_linear_time(text: str, expected: list[str]) -> None:
    assert [name.strip() for name in extract_nominations(text)] == expected
    registry = [Member(internal_id="NOX", display_name="Nox")]
    match_nomination(text, None, registry)


@pytest.mark.timeout(30)
def test_a_long_nominated_name_is_normalised_in_linear_time() -> None:
    assert normalize_name("Nox" + " -" * 50_000 + "x") == "NOXX"
    assert normalize_name("Nox" + " -" * 50_000 + "-san") == "NOX"
