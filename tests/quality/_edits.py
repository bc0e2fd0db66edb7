"""Edits that move text about, for the re-mapping tests: each ``Edit`` is an old and a new
manuscript, the issue's range in the old one and where that text truly is in the new one.

Kinds (each in Japanese and English): a paragraph moved with one word changed in it (the
reported case, at three distances), a sentence moved to another paragraph, a sentence split
in two, two sentences merged into one, and a range whose neighbours were rewritten (its own
wording touched too, so neither ``exact_match`` nor ``diff3`` can place it).
"""

from __future__ import annotations

from dataclasses import dataclass

from flowkit.quality.models import TextRange, sha256_text

__all__ = ["EDITS", "MOVED", "Edit"]


@dataclass(frozen=True)
class Edit:
    name: str
    old: str
    new: str
    old_piece: str
    new_piece: str

    @property
    def range(self) -> TextRange:
        start = self.old.index(self.old_piece)
        return TextRange.of(self.old, start, start + len(self.old_piece))

    @property
    def checksum(self) -> str:
        return sha256_text(self.old_piece)

    @property
    def truth(self) -> tuple[int, int]:
        start = self.new.index(self.new_piece)
        return start, start + len(self.new_piece)

    def __post_init__(self) -> None:
        assert self.old.count(self.old_piece) == 1, self.name
        assert self.new.count(self.new_piece) == 1, self.name


JA = [
    "駅前の商店街は、夕暮れになるといっそう賑やかになる。八百屋の主人は大きな声で客を呼び込み、"
    "魚屋の店先には氷の上に今朝の魚が並んでいた。",
    "少女は古びた本屋の前で足を止めた。ガラス戸の向こうに、見覚えのある表紙がいくつも並んでいた。"
    "彼女はそっと扉を押し開けて、薄暗い店の中へ入っていった。",
    "店主の老人は眼鏡を外して、「いらっしゃい」と穏やかに言った。棚の埃を払いながら、"
    "彼は少女に一冊の本を差し出した。",
    "それは、祖母が昔読んでくれた絵本だった。表紙の角は擦り切れ、色もすっかり褪せていたが、"
    "見返しには祖母の字で少女の名前が書いてあった。",
    "外ではいつの間にか雨が降り始めていた。少女は本を胸に抱えたまま、しばらく店の中で"
    "屋根を打つ雨の音を聞いていた。",
]
EN = [
    "The shopping street by the station grew livelier at dusk. The greengrocer called out to "
    "the passers-by in a loud voice, and the fishmonger laid the morning's catch out on ice.",
    "A girl stopped in front of an old bookshop. Behind the glass door stood several covers she "
    "recognised. She pushed the door open gently and walked into the dim shop.",
    'The old shopkeeper took off his glasses and said "Welcome" softly. Dusting the shelf, he '
    "handed the girl a single book.",
    "It was the picture book her grandmother used to read to her. Its corners were worn and its "
    "colours had faded, but her name was written inside in her grandmother's hand.",
    "Outside it had started to rain without anyone noticing. Holding the book to her chest, the "
    "girl stood in the shop for a while and listened to the rain on the roof.",
]


def _join(paragraphs: list[str]) -> str:
    return "\n\n".join(paragraphs) + "\n"


def _moved(paragraphs: list[str], src: int, dst: int, word: str, by: str) -> list[str]:
    out = [p for i, p in enumerate(paragraphs) if i != src]
    out.insert(dst, paragraphs[src].replace(word, by, 1))
    return out


def _moved_paragraph(
    lang: str, paragraphs: list[str], src: int, dst: int, word: str, by: str
) -> Edit:
    new = _moved(paragraphs, src, dst, word, by)
    return Edit(
        f"{lang}-paragraph-{src}-to-{dst}",
        _join(paragraphs),
        _join(new),
        paragraphs[src],
        paragraphs[src].replace(word, by, 1),
    )


#: The reported case: a paragraph moved and one word changed in it, the range the paragraph.
MOVED: list[Edit] = [
    _moved_paragraph("ja", JA, 1, 4, "古びた", "古ぼけた"),
    _moved_paragraph("ja", JA, 3, 0, "擦り切れ", "すり切れ"),
    _moved_paragraph("ja", JA, 0, 3, "賑やか", "にぎやか"),
    _moved_paragraph("en", EN, 1, 4, "old", "ancient"),
    _moved_paragraph("en", EN, 3, 0, "worn", "frayed"),
    _moved_paragraph("en", EN, 0, 3, "livelier", "busier"),
]


def _sentence_moved(lang: str, paragraphs: list[str], sentence: str, by: str, to: int) -> Edit:
    """``sentence`` leaves its paragraph (reworded to ``by``) for the end of paragraph ``to``."""
    new = [p.replace(sentence, "") for p in paragraphs]
    new[to] = new[to] + by
    return Edit(f"{lang}-sentence-moved", _join(paragraphs), _join(new), sentence, by)


def _replaced(
    name: str, paragraphs: list[str], old_piece: str, new_piece: str, more: dict[str, str]
) -> Edit:
    """``old_piece`` reworded to ``new_piece``, and each text of ``more`` rewritten."""
    new = _join(paragraphs).replace(old_piece, new_piece)
    for before, after in more.items():
        new = new.replace(before, after)
    return Edit(name, _join(paragraphs), new, old_piece, new_piece)


#: Every kind of edit, in Japanese and English.
EDITS: list[Edit] = [
    *MOVED,
    _sentence_moved(
        "ja",
        JA,
        "彼女はそっと扉を押し開けて、薄暗い店の中へ入っていった。",
        "彼女はそっと扉を押し開けて、薄暗い店の奥へ入っていった。",
        3,
    ),
    _sentence_moved(
        "en",
        EN,
        "She pushed the door open gently and walked into the dim shop.",
        "She pushed the door open gently and stepped into the dim shop.",
        3,
    ),
    Edit(
        "ja-split",
        _join(JA),
        _join(JA).replace(
            "表紙の角は擦り切れ、色もすっかり褪せていたが、見返しには祖母の字で少女の名前が書いてあった。",
            "表紙の角は擦り切れ、色もすっかり褪せていた。けれども見返しには、祖母の字で少女の名前が"
            "書いてあった。",
        ),
        "表紙の角は擦り切れ、色もすっかり褪せていたが、見返しには祖母の字で少女の名前が書いてあった。",
        "表紙の角は擦り切れ、色もすっかり褪せていた。けれども見返しには、祖母の字で少女の名前が"
        "書いてあった。",
    ),
    Edit(
        "en-split",
        _join(EN),
        _join(EN).replace(
            "Its corners were worn and its colours had faded, but her name was written inside in "
            "her grandmother's hand.",
            "Its corners were worn and its colours had faded. Yet her name was written inside, in "
            "her grandmother's hand.",
        ),
        "Its corners were worn and its colours had faded, but her name was written inside in "
        "her grandmother's hand.",
        "Its corners were worn and its colours had faded. Yet her name was written inside, in "
        "her grandmother's hand.",
    ),
    Edit(
        "ja-merged",
        _join(JA),
        _join(JA).replace(
            "少女は古びた本屋の前で足を止めた。ガラス戸の向こうに、見覚えのある表紙がいくつも並んでいた。",
            "古びた本屋の前で足を止めた少女は、ガラス戸の向こうに見覚えのある表紙がいくつも並んでいるのに"
            "気づいた。",
        ),
        "少女は古びた本屋の前で足を止めた。ガラス戸の向こうに、見覚えのある表紙がいくつも並んでいた。",
        "古びた本屋の前で足を止めた少女は、ガラス戸の向こうに見覚えのある表紙がいくつも並んでいるのに"
        "気づいた。",
    ),
    Edit(
        "en-merged",
        _join(EN),
        _join(EN).replace(
            "A girl stopped in front of an old bookshop. Behind the glass door stood several "
            "covers she recognised.",
            "A girl stopped in front of an old bookshop, where several covers she recognised "
            "stood behind the glass door.",
        ),
        "A girl stopped in front of an old bookshop. Behind the glass door stood several covers "
        "she recognised.",
        "A girl stopped in front of an old bookshop, where several covers she recognised stood "
        "behind the glass door.",
    ),
    _replaced(
        "ja-rewritten-neighbours",
        JA,
        "店主の老人は眼鏡を外して、「いらっしゃい」と穏やかに言った。",
        "店主の老人は眼鏡を外して、「いらっしゃいませ」と穏やかに言った。",
        {
            "それは、祖母が昔読んでくれた絵本だった。": (
                "幼い頃、祖母が毎晩のように読み聞かせてくれたあの絵本に違いなかった。"
            ),
            "棚の埃を払いながら、彼は少女に一冊の本を差し出した。": (
                "彼は棚の埃を手で払うと、一冊の本を黙って少女に手渡した。"
            ),
        },
    ),
    _replaced(
        "en-rewritten-neighbours",
        EN,
        'The old shopkeeper took off his glasses and said "Welcome" softly.',
        'The old shopkeeper took off his glasses and said "Welcome in" softly.',
        {
            "Dusting the shelf, he handed the girl a single book.": "He wiped the dust from the "
            "shelf with his hand and silently gave the girl one book.",
            "It was the picture book her grandmother used to read to her.": "Surely this was the "
            "very book that her grandmother had read aloud to her every night.",
        },
    ),
]
