"""Every attempt has a deadline and a size cap, whatever pace and size the server sends.

The time bounds are the tests' own timeouts (pytest-timeout): a server dripping its body
would keep a client without a deadline for the drip's full minute.
"""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowkit.errors import LLMConfigError, LLMResponseError, LLMTimeoutError
from flowkit.llm._body import BodyLimitError, LineSplitter

from .conftest import complete, drip, drip_headers, huge, ok, stream


@pytest.mark.timeout(15)
def test_a_dripping_body_ends_at_the_deadline(server, connect, mode):
    llm = connect(server.url, timeout=1.0, max_retries=0)
    server.script(drip())

    with pytest.raises(LLMTimeoutError, match="no complete answer within 1 s"):
        complete(llm, mode)


@pytest.mark.timeout(15)
def test_a_dripping_stream_ends_at_the_deadline(server, connect, mode):
    llm = connect(server.url, timeout=1.0, max_retries=0)
    server.script(drip())

    with pytest.raises(LLMTimeoutError, match="not complete within 1 s"):
        stream(llm, mode, [])


@pytest.mark.timeout(15)
@pytest.mark.parametrize("call", ["complete", "stream"])
def test_headers_dripping_within_the_read_timeout_end_at_the_deadline(server, connect, mode, call):
    # A byte every 0.3 s keeps each read within the 1 s timeout, and the headers never end:
    # only the attempt's deadline ends the call (without it, the drip's whole minute).
    llm = connect(server.url, timeout=1.0, max_retries=0)
    server.script(drip_headers())

    with pytest.raises(LLMTimeoutError):
        complete(llm, mode) if call == "complete" else stream(llm, mode, [])


@pytest.mark.timeout(20)
def test_the_deadline_is_per_attempt_and_a_timed_out_attempt_is_retried(server, connect, mode):
    llm = connect(server.url, timeout=1.0, max_retries=1)
    server.script(drip(), ok("after the drip"))

    assert complete(llm, mode).text == "after the drip"
    assert len(server.requests) == 2


@pytest.mark.timeout(60)
@pytest.mark.parametrize("declared", [False, True], ids=["chunked", "content-length"])
def test_a_60_mb_body_is_refused_without_being_buffered(server, connect, mode, declared):
    llm = connect(server.url, max_retries=2)
    server.script(huge(60, declared=declared))

    tracemalloc.start()
    try:
        with pytest.raises(LLMResponseError, match="max_response_bytes=10485760") as caught:
            complete(llm, mode)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 30 * 1024 * 1024  # the cap (10 MiB) plus working room, not 60 MB
    assert len(server.requests) == 1  # a body too large will not shrink on a retry
    assert caught.value.raw_text == ""


@pytest.mark.timeout(30)
def test_the_size_cap_is_configurable_and_bounds_streams_too(server, connect, mode):
    small = connect(server.url, max_retries=0, max_response_bytes=1000)
    server.script(huge(1), huge(1))

    with pytest.raises(LLMResponseError, match="max_response_bytes=1000"):
        complete(small, mode)
    with pytest.raises(LLMResponseError, match="max_response_bytes=1000"):
        stream(small, mode, [])


def test_answers_under_the_cap_are_read_whole(server, connect, mode):
    llm = connect(server.url, max_response_bytes=100_000)
    server.script(ok("x" * 1000), ok("y" * 1000))

    assert complete(llm, mode).text == "x" * 1000
    assert "".join(c.text for c in stream(llm, mode, [])) == "y" * 1000


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_a_bad_size_cap_is_a_config_error(server, connect, bad):
    with pytest.raises(LLMConfigError, match="max_response_bytes"):
        connect(server.url, max_response_bytes=bad)


@pytest.mark.parametrize(
    ("pieces", "lines"),
    [
        ([b"a\nb\n"], ["a", "b"]),
        ([b"a\r", b"\nb\r\n"], ["a", "b"]),  # CRLF split across chunks
        ([b"a\rb"], ["a", "b"]),
        ([b'{"t": "x\xe2\x80', b'\xa8y"}\n'], ['{"t": "x\u2028y"}']),  # U+2028 is no EOL
        ([b"no newline"], ["no newline"]),
    ],
)
def test_line_splitter_splits_like_http_lines(pieces, lines):
    splitter = LineSplitter()
    got = [line for piece in pieces for line in splitter.feed(piece)] + splitter.end()
    assert [line for line in got if line] == lines


def test_default_cap_matches_the_docs():
    from flowkit.llm.openai import OpenAICompatibleLLM

    assert OpenAICompatibleLLM(model="m", base_url="http://x/v1").max_response_bytes == 10485760


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.timeout(30)
@pytest.mark.parametrize("status", [200, 400, 500])
def test_a_deeply_nested_body_is_a_response_or_unavailable_error(server, connect, mode, status):
    from flowkit.errors import LLMError

    from .conftest import fail

    llm = connect(server.url, max_retries=0)
    server.script(fail(status, DEEP))

    with pytest.raises(LLMError) as caught:
        complete(llm, mode)
    assert type(caught.value).__name__ in ("LLMResponseError", "LLMUnavailableError")


@pytest.mark.timeout(30)
def test_a_deeply_nested_stream_line_is_a_response_error(server, connect, mode):
    from .conftest import deep_line

    llm = connect(server.url, max_retries=0)
    server.script(deep_line())

    with pytest.raises(LLMResponseError, match="cannot be read"):
        stream(llm, mode, [])


@pytest.mark.timeout(15)
@pytest.mark.parametrize("call", ["complete", "stream"])
def test_a_drip_just_inside_the_read_timeout_ends_at_the_deadline(
    server, connect, mode, monkeypatch, call
):
    # A byte every 0.8 s keeps each read under the 1 s timeout. A deadline checked only as
    # bytes arrive would end the call at the second byte (1.6 s); the deadline ends it at
    # 1 s, when at most the first byte is in. The error's detail counts them.
    from flowkit.llm._body import Budget

    llm = connect(server.url, timeout=1.0, max_retries=0)
    server.script(drip(every=0.8))
    details: list[str] = []
    overdue = Budget.overdue

    def counted(self: Budget):
        details.append(overdue(self).detail)
        return overdue(self)

    monkeypatch.setattr(Budget, "overdue", counted)

    with pytest.raises(LLMTimeoutError):
        complete(llm, mode) if call == "complete" else stream(llm, mode, [])
    assert details and details[0].endswith(("(0 bytes received)", "(1 bytes received)"))


class _CountingEOL:
    """Stands in for the line splitter's end-of-line pattern and counts the text it scans."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.scanned = 0

    def finditer(self, text):
        self.scanned += len(text)
        return self.pattern.finditer(text)

    def split(self, text):
        self.scanned += len(text)
        return self.pattern.split(text)


@pytest.mark.parametrize("megabytes", [2, 8])
def test_one_long_stream_line_is_scanned_once_not_once_per_chunk(monkeypatch, megabytes):
    # An 8 MB line arriving in 4 KB pieces used to be re-scanned from its start at every
    # piece: 2,048 pieces, ~8.6 GB scanned. Each byte is now looked at a bounded number of times.
    from flowkit.llm import _body

    counting = _CountingEOL(_body._EOL)
    monkeypatch.setattr(_body, "_EOL", counting)
    size, piece = megabytes * 1024 * 1024, b"x" * 4096
    splitter = LineSplitter()
    lines = []
    for _ in range(size // len(piece)):
        lines += splitter.feed(piece)
    lines += splitter.feed(b"\r")
    lines += splitter.feed(b"\nnext")
    lines += splitter.end()

    assert [len(line) for line in lines] == [size, 4]
    assert counting.scanned <= 2 * size + 16


def _cut(body: bytes, cuts: list[int]) -> list[bytes]:
    pieces, start = [], 0
    for end in sorted(cuts):
        pieces.append(body[start:end])
        start = max(start, end)
    pieces.append(body[start:])
    return pieces


_TEXT = st.text(alphabet=st.sampled_from('ab \r\n\u2028é日🙂{}"'), max_size=40)
_CUTS = st.lists(st.integers(min_value=0, max_value=160), max_size=6)


@given(_TEXT.map(str.encode), _CUTS)
def test_line_splitter_gives_the_same_lines_however_the_body_is_cut(body, cuts):
    whole = LineSplitter()
    expected = whole.feed(body) + whole.end()
    split = LineSplitter()
    got = [line for piece in _cut(body, cuts) for line in split.feed(piece)] + split.end()
    assert got == expected


@given(
    _TEXT.map(str.encode),
    _TEXT.map(str.encode),
    st.sampled_from([b"\xff", b"\xe9a", b"\xed\xa0\x80"]),
    _CUTS,
)
def test_bytes_that_are_not_text_are_refused_however_the_body_is_cut(before, after, bad, cuts):
    # Never handed over with U+FFFD in place of what the server sent.
    split = LineSplitter()
    with pytest.raises(BodyLimitError) as caught:
        for piece in _cut(before + bad + after, cuts):
            split.feed(piece)
        split.end()
    assert caught.value.kind == "response"
