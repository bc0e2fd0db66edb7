"""``@file`` arguments and other files a command reads are read up to a documented limit:
an endless device (``/dev/zero``) or a sparse file of gigabytes is refused, never read whole."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from flowkit.cli import main
from flowkit.errors import InputTooLargeError

ZERO = "/dev/zero"
needs_dev_zero = pytest.mark.skipif(not Path(ZERO).exists(), reason="no /dev/zero")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def sparse(tmp_path: Path) -> Path:
    """A file of 6 GB that takes no room on the disk."""
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(6 << 30)
    return path


@needs_dev_zero
@pytest.mark.parametrize(
    "argv",
    [
        ["start", "review", "t", "--input", "@{file}"],
        ["resume", "t0", "--input", "@{file}"],
        ["update-state", "t0", "--patch", "@{file}"],
    ],
    ids=["start", "resume", "update-state"],
)
@pytest.mark.parametrize("which", ["/dev/zero", "sparse file"])
def test_an_at_file_past_the_limit_is_refused_naming_the_file_and_the_limit(
    argv: list[str], which: str, sparse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    assert run(capsys, "start", "review", "t0", "--store", store)[0] == 0
    file = ZERO if which == "/dev/zero" else str(sparse)
    words = [word.format(file=file) for word in argv]
    code, out, err = run(capsys, *words, "--store", store)
    assert (code, out) == (2, "")
    assert f"`{file}` is larger than 16 MB, the limit of {words[-2]} @file" in err
    assert len(err) < 400


@needs_dev_zero
def test_reading_stops_one_byte_past_the_limit(sparse: Path) -> None:
    from flowkit.terminal.inputs import MAX_JSON_BYTES, read_limited

    for path in (ZERO, sparse):
        with pytest.raises(InputTooLargeError) as caught:
            read_limited(path, what="--input file", max_bytes=MAX_JSON_BYTES)
        assert (caught.value.path, caught.value.limit) == (str(path), MAX_JSON_BYTES)


def test_a_pipe_is_read_like_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `--input @<(jq ...)` and `@/dev/stdin` are pipes: read until they end, within the limit.
    read, write = os.pipe()
    payload = json.dumps({"topic": "from a pipe"}).encode()
    writer = threading.Thread(target=lambda: (os.write(write, payload), os.close(write)))
    writer.start()
    try:
        code, out, err = run(capsys, "start", "review", "p", "--input", f"@/dev/fd/{read}",
                             "--store", str(tmp_path), "--json")  # fmt: skip
    finally:
        writer.join()
        os.close(read)
    assert code == 0, err
    assert json.loads(out)["state"]["topic"] == "from a pipe"
