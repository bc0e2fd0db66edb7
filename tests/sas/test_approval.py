"""Approval is a whole message equal to an approval word, in English, Japanese or Chinese."""

from __future__ import annotations

import pytest

from flowkit.sas.approval import is_approval, normalise


@pytest.mark.parametrize(
    "message",
    [
        "approve",
        "Approve",
        "  OK ",
        "ok.",
        "Yes!",
        "LGTM",
        "looks good",
        "ＯＫ",
        "ｙｅｓ",
        "はい",
        "はい。",
        "承認",
        "承認します",
        "OKです",
        "ＯＫです",
        "問題ありません",
        "同意",
        "好的",
        "没问题",
        "可以！",
        "「承認」",
    ],
)
def test_whole_approval_words_approve(message: str) -> None:
    assert is_approval(message)


@pytest.mark.parametrize(
    "message",
    [
        "not ok",
        "token",
        "book",
        "ok but slower",
        "yes, and add a wait",
        "okay?? no",
        "はい、でも速度を下げて",
        "OKです、ただしP3を使って",
        "不可以",
        "不同意",
        "可以吗但是慢一点",
        "",
        "   ",
        "approve the main task but change P1",
    ],
)
def test_anything_else_is_feedback_not_approval(message: str) -> None:
    assert not is_approval(message)


def test_normalise_folds_width_case_and_end_punctuation() -> None:
    assert normalise("  ＬＧＴＭ！ ") == "lgtm"
    assert normalise("Looks   Good.") == "looks good"
