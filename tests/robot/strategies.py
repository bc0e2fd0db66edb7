"""Hypothesis strategies for module steps: catalog-shaped steps and arbitrary ones."""

from __future__ import annotations

from hypothesis import strategies as st

from flowkit.robot import Step, default_catalog

CATALOG = default_catalog()
TYPES = sorted(CATALOG.blocks)
_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
_XML_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufffe\uffff").filter(
        lambda c: c in "\t\n\r" or ord(c) >= 0x20
    ),
    max_size=12,
)
_VALUE = st.one_of(
    _XML_TEXT,
    st.sampled_from(["P21", "N5", "F481", "TRUE", "FALSE", "2", "-1", "or", "until", "=", "--",
                     "—", "[-]", "a b", "x:", "@x", "if", "on", "enable", "Open_BRG&PLT_Crump"]),
)  # fmt: skip
_TYPE = st.one_of(st.sampled_from(TYPES), _NAME, st.sampled_from(["if", "not", "N5", "TRUE"]))


def _fields(block_type: str) -> st.SearchStrategy[dict[str, str]]:
    spec = CATALOG.get(block_type)
    names = [f.name for f in spec.fields] if spec else []
    shorts = [f.short for f in spec.fields if f.short] if spec else []
    keys = st.one_of(st.sampled_from(names + shorts + ["x", "extra"]), _NAME)
    return st.dictionaries(keys, _VALUE, max_size=4)


_MUTATION = st.one_of(
    st.none(),
    st.just(False),
    st.dictionaries(st.sampled_from(["timeout", "name", "elseif", "else", "x"]), _VALUE,
                    max_size=3),
)  # fmt: skip


@st.composite
def steps(draw: st.DrawFn, depth: int = 2) -> Step:
    """Any step the model can hold: random types, fields, mutations and nested inputs."""
    block_type = draw(_TYPE)
    inputs: dict[str, Step | list[Step]] = {}
    if depth > 0:
        names = st.one_of(
            st.sampled_from(["IF0", "DO0", "IF1", "DO1", "ELSE", "DO", "STACK", "condition",
                             "A", "B", "BOOL", "right_hand_side", "EVENT"]),
            _NAME,
        )  # fmt: skip
        for name in draw(st.lists(names, max_size=4, unique=True)):
            if draw(st.booleans()):
                inputs[name] = draw(steps(depth - 1))
            else:
                inputs[name] = draw(st.lists(steps(depth - 1), max_size=2))
    disabled = draw(st.booleans())
    reasons = draw(st.lists(st.sampled_from(["MANUALLY_DISABLED", "X1"]), max_size=2))
    return (
        Step(
            type=block_type,
            fields=draw(_fields(block_type)),
            mutation=draw(_MUTATION),
            inputs=inputs,
            disabled=disabled or bool(reasons),
            disabled_reasons=reasons if draw(st.booleans()) else [],
            source=draw(st.none() | _XML_TEXT),
        )
        if False
        else _build(draw, block_type, inputs, disabled, reasons)
    )


def _build(
    draw: st.DrawFn,
    block_type: str,
    inputs: dict[str, Step | list[Step]],
    disabled: bool,
    reasons: list[str],
) -> Step:
    keep_reasons = reasons if draw(st.booleans()) else []
    return Step(
        type=block_type,
        fields=draw(_fields(block_type)),
        mutation=draw(_MUTATION),
        inputs=inputs,
        disabled=disabled or bool(keep_reasons),
        disabled_reasons=keep_reasons,
        source=draw(st.none() | _XML_TEXT),
    )


@st.composite
def chains(draw: st.DrawFn) -> list[Step]:
    return draw(st.lists(steps(), min_size=1, max_size=3))
