"""Layout annotations of the text form: the editor's bookkeeping of a step line, kept so that
text -> steps -> XML gives back what the editor showed.

A step line may end in ``@`` and groups separated by ``|``: first the step's own
(``id="..." no=3 x=-170 y=40 collapsed=true``), then one per value block written on that line,
in document order, each opening with its type (``| logic_compare id="..." no=1``). Deleting an
annotation (or a key) means "let the compiler choose": a fresh id, the next free block number,
a position clear of the other stacks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..foundation._plain import shorten
from ._text_lex import RESERVED, TextSyntaxError, Token, quote
from .steps import Markup, Step

#: ``attrs="type id x y"``, ``children="field:NAME mutation"``, ``closed="mutation"``: the
#: lists of ``Step.markup`` (how another tool wrote the block), space-separated.
_MARKUP_LISTS = {"attrs": "attributes", "children": "children", "closed": "closed"}

__all__ = [
    "Annotation",
    "annotate",
    "parse_annotation",
    "render_annotation",
    "split_annotation",
    "text_markup",
]

#: Keys with a meaning of their own; every other key is a ``<block>`` attribute as found.
_MODEL_KEYS = frozenset({"id", "no", "x", "y", "editable", "comment", *_MARKUP_LISTS})
_COMMENT = "comment."
#: ``space.KEY="..."``: text between elements with an XML comment in it (``Markup.space``).
_SPACE = "space."
_QUOTED = RESERVED | {"|", "@"}
#: ``-id -x -y -no -fields``: what the block was written without (``Step.absent``).
_ABSENT_KEYS = {"data-blockNo": "no"}
_ABSENT_NAMES = {"-id": "id", "-x": "x", "-y": "y", "-no": "data-blockNo", "-fields": "fields"}


@dataclass
class Annotation:
    """One group: the editor bookkeeping of one block."""

    block_type: str | None = None
    data: dict[str, object] = field(default_factory=dict)


def _line_values(step: Step) -> Iterator[Step]:
    """The value blocks written on a step's line (its statement bodies have lines of their
    own), in document order, with everything nested in them."""
    for item in step.inputs.values():
        if isinstance(item, Step):
            yield from item.walk()


def _group(step: Step, *, position: bool) -> list[str]:
    words: list[str] = []
    if step.id is not None:
        words.append(f"id={quote(step.id, _QUOTED)}")
    if step.block_no is not None:
        words.append(f"no={step.block_no}")
    if position and step.x is not None:
        words.append(f"x={step.x}")
    if position and step.y is not None:
        words.append(f"y={step.y}")
    if step.editable is not None:
        words.append(f"editable={'true' if step.editable else 'false'}")
    words.extend(f"{_attribute_key(k)}={quote(v, _QUOTED)}" for k, v in step.attributes.items())
    words.extend("-" + _ABSENT_KEYS.get(name, name) for name in step.absent)
    words.extend(_markup_words(step.markup))
    if step.comment is not None:
        if step.comment:
            words.extend(f"{_COMMENT}{k}={quote(v, _QUOTED)}" for k, v in step.comment.items())
        else:
            words.append("comment")
    return words


def text_markup(markup: Markup | None) -> Markup | None:
    """What the text form keeps of ``markup``: all but the text between elements that is
    only whitespace (the compiler indents instead)."""
    if markup is None:
        return None
    space = {k: v for k, v in markup.space.items() if v.strip()}
    kept = markup.model_copy(update={"space": space})
    return None if kept == Markup() else kept


def _markup_words(markup: Markup | None) -> list[str]:
    kept = text_markup(markup)
    if kept is None:
        return []
    words = [
        f"{key}={quote(' '.join(getattr(kept, name)), _QUOTED)}"
        for key, name in _MARKUP_LISTS.items()
        if getattr(kept, name)
    ]
    # ``statement:DO.text`` is written ``space.statement.DO.text`` (a word has no colon).
    words.extend(
        f"{_SPACE}{k.replace(':', '.')}={quote(v, _QUOTED)}" for k, v in kept.space.items()
    )
    return words


def _attribute_key(name: str) -> str:
    # An attribute named like an annotation key is written `@no=...` so it reads back as one.
    clash = name in _MODEL_KEYS or name.startswith((_COMMENT, _SPACE))
    return "@" + name if clash else name


def render_annotation(step: Step, *, position: bool = True) -> str:
    """`` @ id=... | type id=...`` for a step line, or "" when there is nothing to keep."""
    own = _group(step, position=position)
    values = [(s.type, _group(s, position=True)) for s in _line_values(step)]
    if not own and not any(words for _type, words in values):
        return ""
    groups = [" ".join(own)] if own else [""]
    groups.extend(" ".join([quote(t, _QUOTED), *words]) for t, words in values)
    return "  @ " + " | ".join(groups).lstrip()


def split_annotation(tokens: list[Token]) -> tuple[list[Token], list[Token] | None]:
    """The tokens before a spaced ``@`` and those after it (None without an annotation)."""
    for index, token in enumerate(tokens):
        if token.kind == "word" and token.text == "@" and token.spaced:
            return tokens[:index], tokens[index + 1 :]
    return tokens, None


def parse_annotation(tokens: list[Token]) -> list[Annotation]:
    """The groups of an annotation; the first is the step's own (its ``block_type`` None)."""
    groups: list[Annotation] = [Annotation()]
    index = 0
    first_in_group = True
    while index < len(tokens):
        token = tokens[index]
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if token.kind == "word" and token.text == "|":
            groups.append(Annotation())
            first_in_group = True
            index += 1
            continue
        is_key = following is not None and following.kind == "punct" and following.text == "="
        if token.kind not in ("word", "string"):
            raise TextSyntaxError(f"unexpected `{shorten(token.text)}` in the `@` annotation")
        if not is_key:
            if token.kind == "word" and token.text == "comment":
                groups[-1].data["comment"] = {}
            elif token.kind == "word" and token.text in _ABSENT_NAMES:
                absent = groups[-1].data.setdefault("absent", [])
                assert isinstance(absent, list)
                if _ABSENT_NAMES[token.text] in absent:
                    raise TextSyntaxError(
                        f"`{shorten(token.text)}` is given twice in the annotation"
                    )
                absent.append(_ABSENT_NAMES[token.text])
            elif first_in_group and len(groups) > 1:
                groups[-1].block_type = token.value
            else:
                raise TextSyntaxError(
                    f"expected key=value in the `@` annotation, found `{shorten(token.text)}`"
                )
            first_in_group = False
            index += 1
            continue
        if index + 2 >= len(tokens) or tokens[index + 2].kind not in ("word", "string"):
            raise TextSyntaxError(f"expected a value after `{token.text}=` in the annotation")
        _set(groups[-1], token.value, tokens[index + 2].value)
        first_in_group = False
        index += 3
    if any(g.block_type is None for g in groups[1:]):
        raise TextSyntaxError("each `|` group of an annotation starts with its block type")
    return groups


def _set(group: Annotation, key: str, value: str) -> None:
    data = group.data
    if key.startswith("@") or not (key in _MODEL_KEYS or key.startswith((_COMMENT, _SPACE))):
        _put(data, "attributes", key.removeprefix("@"), value)
    elif key in _MARKUP_LISTS or key.startswith(_SPACE):
        markup = data.setdefault("markup", {})
        assert isinstance(markup, dict)
        if key.startswith(_SPACE):
            _put(markup, "space", _space_key(key[len(_SPACE) :]), value)
        elif _MARKUP_LISTS[key] in markup:
            raise TextSyntaxError(f"`{shorten(key)}` is given twice in the annotation")
        else:
            markup[_MARKUP_LISTS[key]] = value.split()
    elif key.startswith(_COMMENT):
        _put(data, "comment", key[len(_COMMENT) :], value)
    elif key in data:
        raise TextSyntaxError(f"`{shorten(key)}` is given twice in the annotation")
    elif key in ("no", "x", "y"):
        try:
            data[key] = int(value)
        except ValueError:
            raise TextSyntaxError(f"annotation `{key}={value}` must be a whole number") from None
    elif key == "editable":
        if value not in ("true", "false"):
            raise TextSyntaxError("annotation `editable` is true or false")
        data["editable"] = value == "true"
    else:
        data[key] = value  # id; a bare `comment=` is refused by Step (not a mapping)


def _space_key(text: str) -> str:
    kind, dot, rest = text.partition(".")
    return f"{kind}:{rest}" if dot and kind in ("field", "value", "statement") else text


def _put(data: dict[str, object], where: str, name: str, value: str) -> None:
    mapping = data.setdefault(where, {})
    assert isinstance(mapping, dict)
    if name in mapping:
        raise TextSyntaxError(f"`{shorten(name)}` is given twice in the annotation")
    mapping[name] = value


def _update(group: Annotation) -> dict[str, object]:
    update = {("block_no" if k == "no" else k): v for k, v in group.data.items()}
    return update


def annotate(step: Step, groups: list[Annotation]) -> Step:
    """``step`` with the bookkeeping of ``groups``: its own first, then its value blocks,
    each matched to the next unused group of the same type (a person may have added or
    removed blocks in the condition)."""
    pending = list(groups[1:])

    def take(block: Step) -> Step:
        for index, group in enumerate(pending):
            if group.block_type == block.type:
                del pending[index]
                return _with(block, group, nested=True)
        return _with(block, Annotation(), nested=True)

    def _with(block: Step, group: Annotation, *, nested: bool) -> Step:
        inputs: dict[str, Step | list[Step]] = {}
        for name, item in block.inputs.items():
            if isinstance(item, Step):
                inputs[name] = take(item)
            elif nested:
                inputs[name] = [take(s) for s in item]
            else:
                inputs[name] = item
        fields = block.model_dump(exclude={"inputs"})
        return Step.model_validate({**fields, **_update(group), "inputs": inputs})

    return _with(step, groups[0], nested=False)
