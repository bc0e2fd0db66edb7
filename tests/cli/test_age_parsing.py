"""``--older-than AGE``: the accepted and refused forms, and a long argument read in one pass
(the old pattern retried from every digit of a run without a unit: 12,000 digits took 0.8 s,
a million would take hours and now fail pytest's timeout instead)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.cli.lifecycle import parse_age
from flowkit.terminal.errors import CommandError

ACCEPTED = [
    ("45s", 45),
    ("90m", 5_400),
    ("12h", 43_200),
    ("30d", 30 * 86_400),
    ("2w", 14 * 86_400),
    ("1.5d", 1.5 * 86_400),
    ("1h30m", 5_400),
    ("1d1d", 2 * 86_400),
    ("0s", 0),
    ("007m", 420),
    ("  3h  ", 10_800),  # surrounding blanks are dropped
    ("٣d", 3 * 86_400),  # any Unicode digit float() reads
]
REFUSED = [
    "",
    "   ",
    "45",
    "s",
    "d3",
    "1.d",
    ".5d",
    "1.5.5d",
    "3 d",
    "3D",
    "3y",
    "-3d",
    "+3d",
    "3d ago",
    "1h 30m",
    "1e3s",
    "3d\x00",
    "1" * 1_000_000,
    "1s" * 1000 + "1" * 1_000_000,
    "1." * 500_000 + "d",
]


@pytest.mark.parametrize(("text", "seconds"), ACCEPTED, ids=[a for a, _ in ACCEPTED])
def test_an_age_is_read_as_seconds(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", REFUSED, ids=lambda t: repr(t[:12]) + f"[{len(t)}]")
def test_anything_else_is_refused_with_the_forms_to_use(text: str) -> None:
    with pytest.raises(CommandError, match="give an age like 45s, 90m, 12h, 30d or 2w") as caught:
        parse_age(text)
    assert caught.value.code == 2


_OLD = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def _old_parse(text: str) -> float | None:
    found = _OLD.findall(text.strip())
    if not found or "".join(n + u for n, u in found) != text.strip():
        return None
    return sum(
        float(n) * {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}[u] for n, u in found
    )


@given(st.text(alphabet="0123456789.smhdwx ٣", max_size=24))
def test_the_same_ages_are_accepted_as_before(text: str) -> None:
    expected = _old_parse(text)
    try:
        got: float | None = parse_age(text)
    except CommandError:
        got = None
    assert got == expected
