"""How a range of an old text is carried through a character diff to the new text.

``diffs`` are diff-match-patch's ``(op, text)`` pairs (0 unchanged, 1 inserted, -1 deleted).
Pure functions, used by ``remap``'s ``diff3`` strategy and by ``semantic_search`` to align a
candidate with the range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = ["ANCHOR", "anchored", "edit_block", "map_range"]

#: Characters either side of a range whose survival sets ``diff3``'s confidence.
ANCHOR: Final = 10
_DIFF_EQUAL: Final = 0
_DIFF_INSERT: Final = 1
_DIFF_DELETE: Final = -1


def anchored(diffs: Sequence[tuple[int, str]], size: int, start: int, end: int) -> float:
    """How firmly ``[start, end)`` of an old text of ``size`` characters is anchored: the
    unchanged run of text ``diffs`` leaves right before ``start`` and right after ``end``, each
    up to ``ANCHOR`` characters, as a share of what the text has there. The range's own
    rewrite does not count against it."""
    want_before = min(ANCHOR, start)
    want_after = min(ANCHOR, size - end)
    if want_before + want_after == 0:
        return 0.0
    before = after = 0
    position = 0
    for op, text in diffs:
        if op == _DIFF_INSERT:
            continue
        span = (position, position + len(text))
        if op == _DIFF_EQUAL:
            if span[0] < start <= span[1]:
                before = min(want_before, start - span[0])
            if span[0] <= end < span[1]:
                after = min(want_after, span[1] - end)
        position = span[1]
    return (before + after) / (want_before + want_after)


def edit_block(diffs: Sequence[tuple[int, str]], start: int, end: int) -> tuple[int, int] | None:
    """The new text of the edit that ``[start, end)`` of the old text is part of.

    An edge of the range in unchanged text moves with it; an edge inside an edit takes the
    whole edit, to the unchanged text around it. ``None`` when that unchanged text is a run
    shorter than ``ANCHOR`` characters (the edit is entangled with others next to it, so its
    new text is not this range's alone), or when no unchanged text bounds it at all.
    """
    rows: list[tuple[int, int, int, int, int]] = []  # op, old start, old end, new start, new end
    old_pos = new_pos = 0
    for op, text in diffs:
        old_size = 0 if op == _DIFF_INSERT else len(text)
        new_size = 0 if op == _DIFF_DELETE else len(text)
        rows.append((op, old_pos, old_pos + old_size, new_pos, new_pos + new_size))
        old_pos, new_pos = old_pos + old_size, new_pos + new_size
    inside = [i for i, r in enumerate(rows) if r[0] != _DIFF_INSERT and r[1] < end and start < r[2]]
    if not inside:
        return None
    first, last = rows[inside[0]], rows[inside[-1]]
    bounded = False
    if first[0] == _DIFF_EQUAL:
        new_start, bounded = first[3] + start - first[1], True
    else:
        before = [r for r in rows[: inside[0]] if r[0] == _DIFF_EQUAL]
        if before and before[-1][2] - before[-1][1] < ANCHOR:
            return None
        new_start, bounded = (before[-1][4], True) if before else (0, False)
    if last[0] == _DIFF_EQUAL:
        new_end, bounded = last[3] + end - last[1], True
    else:
        after = [r for r in rows[inside[-1] + 1 :] if r[0] == _DIFF_EQUAL]
        if after and after[0][2] - after[0][1] < ANCHOR:
            return None
        new_end = after[0][3] if after else new_pos
        bounded = bounded or bool(after)
    # What replaced the range is not much longer than the range: a longer rewrite is more
    # than this range's, and no place in it is the range's for sure.
    if not (bounded and 0 <= new_end - new_start <= 2 * (end - start) + ANCHOR):
        return None
    return new_start, new_end


def map_range(diffs: Sequence[tuple[int, str]], start: int, end: int) -> tuple[int, int, bool]:
    """Carry ``[start, end)`` of the old text through ``diffs`` to the new text.

    A boundary in unchanged text moves with it. A range that begins in rewritten text begins
    where the rewrite begins; one that ends in rewritten text takes the whole rewrite (what
    was inserted in place of the deleted part), so a reworded range maps to its new wording.
    The flag says whether both boundaries fell on unchanged text or on the edge of a rewrite:
    a boundary inside a rewrite that reaches past it cannot be placed with confidence.
    """
    old_pos = new_pos = 0
    new_start = new_end = None
    aligned = True
    ops = list(diffs)
    for index, (op, text) in enumerate(ops):
        size = len(text)
        if op == _DIFF_INSERT:
            new_pos += size
            continue
        if new_start is None and start < old_pos + size:
            new_start = new_pos + (start - old_pos if op == _DIFF_EQUAL else 0)
            aligned = op == _DIFF_EQUAL or start == old_pos
        if new_start is not None and end <= old_pos + size:
            if end == start:
                new_end = new_start
            elif op == _DIFF_EQUAL:
                new_end = new_pos + (end - old_pos)
            else:  # in a deletion: take the insertions that replace this block
                aligned = aligned and end == old_pos + size
                after = new_pos
                for later_op, later_text in ops[index + 1 :]:
                    if later_op == _DIFF_EQUAL:
                        break
                    if later_op == _DIFF_INSERT:
                        after += len(later_text)
                new_end = after
            break
        old_pos += size
        if op == _DIFF_EQUAL:
            new_pos += size
    if new_start is None:  # at the very end of the old text
        new_start = new_pos
    if new_end is None:
        new_end = new_pos
    return new_start, max(new_start, new_end), aligned
