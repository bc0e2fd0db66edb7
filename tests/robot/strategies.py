"""Hypothesis strategies for module steps: any step the model can hold, with catalog types,
random types, awkward values and nested inputs."""

from __future__ import annotations

from functools import cache

from hypothesis import strategies as st

from flowkit.robot import Step, default_catalog

CATALOG = default_catalog()
TYPES = sorted(CATALOG.blocks)
_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,5}", fullmatch=True)
_XML_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufffe\uffff").filter(
        lambda c: c in "\t\n\r" or ord(c) >= 0x20
    ),
    max_size=8,
)
_VALUE = st.one_of(
    _XML_TEXT,
    st.sampled_from(
        [
            "P21",
            "N5",
            "F481",
            "TRUE",
            "FALSE",
            "2",
            "-1",
            "or",
            "until",
            "=",
            "--",
            "—",
            "[-]",
            "a b",
            "x:",
            "@x",
            "if",
            "on",
            "enable",
            "Open_BRG&PLT_Crump",
            "\u2028",
            "a\nb",
        ]
    ),
)
_TYPE = st.one_of(st.sampled_from(TYPES), _NAME, st.sampled_from(["if", "not", "N5", "TRUE"]))
_INPUT = st.one_of(
    st.sampled_from(
        [
            "IF0",
            "DO0",
            "IF1",
            "DO1",
            "ELSE",
            "DO",
            "STACK",
            "condition",
            "A",
            "B",
            "BOOL",
            "right_hand_side",
            "EVENT",
        ]
    ),
    _NAME,
)
_MUTATION = st.one_of(
    st.none(),
    st.just(False),
    st.dictionaries(
        st.sampled_from(["timeout", "name", "elseif", "else", "x"]), _VALUE, max_size=2
    ),
)


# Every strategy a draw uses is built once, here or cached: building one inside a composite
# (and Hypothesis validating it) on every draw cost more than the tests themselves.
_INPUT_NAMES = st.lists(_INPUT, max_size=3, unique=True)
_REASONS = st.lists(st.sampled_from(["MANUALLY_DISABLED", "X1"]), max_size=2)
_SOURCE = st.none() | _XML_TEXT


@cache
def _fields(block_type: str) -> st.SearchStrategy[dict[str, str]]:
    spec = CATALOG.get(block_type)
    names = [f.name for f in spec.fields] if spec else []
    shorts = [f.short for f in spec.fields if f.short] if spec else []
    inputs = [i.name for i in spec.inputs if "{n}" not in i.name] if spec else []
    keys = st.one_of(st.sampled_from([*names, *shorts, *inputs, "x", "extra"]), _NAME)
    return st.dictionaries(keys, _VALUE, max_size=3)


def _level(nested: st.SearchStrategy[Step] | None) -> st.SearchStrategy[Step]:
    nested_list = None if nested is None else st.lists(nested, max_size=2)

    @st.composite
    def build(draw: st.DrawFn) -> Step:
        block_type = draw(_TYPE)
        inputs: dict[str, Step | list[Step]] = {}
        if nested is not None and nested_list is not None:
            for name in draw(_INPUT_NAMES):
                as_value = draw(st.booleans())
                inputs[name] = draw(nested if as_value else nested_list)
        reasons = draw(_REASONS)
        return Step(
            type=block_type,
            fields=draw(_fields(block_type)),
            mutation=draw(_MUTATION),
            inputs=inputs,
            disabled=draw(st.booleans()) or bool(reasons),
            disabled_reasons=reasons,
            source=draw(_SOURCE),
        )

    return build()


#: Any step the model can hold, with up to two levels of nested value inputs and bodies.
STEPS = _level(_level(_level(None)))


_CHAINS = st.lists(STEPS, min_size=1, max_size=3)


def chains() -> st.SearchStrategy[list[Step]]:
    """A chain of one to three steps."""
    return _CHAINS
