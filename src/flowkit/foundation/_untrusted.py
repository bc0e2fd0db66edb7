"""The one guarded door for untrusted text: JSON and YAML parsed within size, depth and alias
limits, and files opened only when they are regular files of bounded size.

Every loader (route tables, domains, catalogs, module steps, cassettes, parameter tables) and
every LLM answer parser goes through here. Depth is measured *before* the parser runs: CPython's
``json`` and PyYAML's composers recurse, and libyaml's C composer crashes the interpreter
outright on pathological nesting, so a deep document must never reach them.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputTooDeepError, InputTooLargeError, YAMLAliasError
from ._long_numbers import INT_TOO_LONG, JSON_STRING, long_json_integer, long_yaml_integer

if TYPE_CHECKING:
    import yaml

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_YAML_NODES",
    "check_data_depth",
    "check_json_depth",
    "compose_yaml",
    "json_depth",
    "parse_json",
    "parse_yaml",
    "read_regular_file",
]

#: Default size limit of a document (a route table, domain or catalog is a few kilobytes).
MAX_BYTES = 8 * 1024 * 1024
#: Default nesting limit; real documents nest under 20 levels, recursion fails near 1,000.
MAX_DEPTH = 100
#: Default limit on YAML nodes once aliases are expanded (alias bombs stop here).
MAX_YAML_NODES = 200_000

# A JSON string (skipped whole, so brackets inside it do not count) or one bracket.
_JSON_TOKENS = re.compile(JSON_STRING + r"|[\[\]{}]")
_BRACKETS = re.compile(r"[\[\]{}]")


def json_depth(text: str, *, strings: bool = True, stop_above: int | None = None) -> int:
    """The deepest bracket nesting in ``text``, without parsing it.

    With ``strings`` (JSON), brackets inside double-quoted strings do not count; without
    (prose around JSON, where a stray quote would hide brackets) every bracket counts, an
    over-estimate that is safe. With ``stop_above``, the scan ends as soon as the depth
    passes it (the depth returned is then ``stop_above + 1``): a limit check reads no further
    than the first too-deep bracket, not megabytes of them.
    """
    depth = deepest = 0
    for match in (_JSON_TOKENS if strings else _BRACKETS).finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and deepest > stop_above:
                    break
        elif token in "]}":
            depth = max(0, depth - 1)
    return deepest


def check_json_depth(
    text: str,
    *,
    what: str,
    path: str | None = None,
    max_depth: int = MAX_DEPTH,
    strings: bool = True,
) -> None:
    """Raise ``InputTooDeepError`` if ``text`` nests deeper than ``max_depth``."""
    if text.count("[") + text.count("{") <= max_depth:
        return  # cannot nest deeper than it has openers: the common case, no scan
    if json_depth(text, strings=strings, stop_above=max_depth) > max_depth:
        raise InputTooDeepError(
            f"the {what} is nested too deeply (over {max_depth} levels); no real {what} "
            "is, so it was refused unread. Check what produced it",
            what=what,
            limit=max_depth,
            path=path,
        )


def check_data_depth(
    data: object, *, what: str, path: str | None = None, max_depth: int = MAX_DEPTH
) -> None:
    """Raise ``InputTooDeepError`` if Python data (dicts, lists, tuples) nests deeper than
    ``max_depth``: for data handed over already parsed. Iterative, so any depth is safe."""
    pending: list[tuple[object, int]] = [(data, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, Mapping):
            children: Iterable[object] = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth + 1 > max_depth:
            raise InputTooDeepError(
                f"the {what} is nested too deeply (over {max_depth} levels); no real {what} "
                "is, so it was refused unread. Check what produced it",
                what=what,
                limit=max_depth,
                path=path,
            )
        pending.extend((child, depth + 1) for child in children)


def _check_size(size: int, *, what: str, path: str | None, max_bytes: int) -> None:
    if size > max_bytes:
        raise InputTooLargeError(
            f"the {what} is {size:,} bytes, over the limit of {max_bytes:,}; pass the {what} "
            "itself, or raise the limit if it really is that large",
            what=what,
            limit=max_bytes,
            path=path,
        )


def parse_json(
    text: str | bytes,
    *,
    what: str,
    path: str | None = None,
    max_bytes: int | None = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """``json.loads`` within limits (``max_bytes=None``: the caller bounded the size already).

    Raises:
        InputTooLargeError: ``text`` is longer than ``max_bytes``.
        InputTooDeepError: it nests deeper than ``max_depth``.
        ValueError: it is not JSON (``json.JSONDecodeError``, or ``UnicodeDecodeError`` for
            bytes that are not UTF-8); callers report it in their own terms.
    """
    if max_bytes is not None:
        _check_size(len(text), what=what, path=path, max_bytes=max_bytes)
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig")
    check_json_depth(text, what=what, path=path, max_depth=max_depth)
    try:
        return json.loads(text)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) or INT_TOO_LONG not in str(exc):
            raise
        raise long_json_integer(text, what=what, path=path) from exc


def compose_yaml(
    text: str,
    *,
    what: str,
    path: str | None = None,
    loader: type[yaml.SafeLoader] | None = None,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_YAML_NODES,
    allow_aliases: bool = True,
) -> yaml.Node | None:
    """The YAML node tree of one document, after a streaming pre-check of its limits.

    The pre-check reads parser events (the parser keeps an explicit stack, it does not
    recurse), counting depth and nodes with every alias counted as the nodes it stands for.

    Raises:
        InputTooLargeError, InputTooDeepError, YAMLAliasError: a limit is broken.
        yaml.YAMLError: the text is not YAML; callers report it in their own terms.
    """
    import yaml

    _check_size(len(text), what=what, path=path, max_bytes=max_bytes)
    loader_class = loader or _safe_loader()
    progress = _Progress()
    try:
        _precheck(
            progress.track(yaml.parse(text, Loader=loader_class)),
            what=what,
            path=path,
            max_depth=max_depth,
            max_nodes=max_nodes,
            allow_aliases=allow_aliases,
        )
    except yaml.YAMLError as exc:
        too_deep = progress.too_deep(exc, text, what=what, path=path, limit=max_depth)
        if too_deep is not None:
            raise too_deep from exc
        raise
    instance = loader_class(text)
    try:
        return instance.get_single_node()
    finally:
        instance.dispose()


def parse_yaml(
    text: str,
    *,
    what: str,
    path: str | None = None,
    loader: type[yaml.SafeLoader] | None = None,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_YAML_NODES,
    allow_aliases: bool = True,
) -> Any:
    """One YAML document's data (safe loader only), within the limits of ``compose_yaml``."""
    loader_class = loader or _safe_loader()
    node = compose_yaml(
        text,
        what=what,
        path=path,
        loader=loader_class,
        max_bytes=max_bytes,
        max_depth=max_depth,
        max_nodes=max_nodes,
        allow_aliases=allow_aliases,
    )
    return construct_yaml(node, loader_class, what=what, path=path)


def construct_yaml(
    node: yaml.Node | None,
    loader: type[yaml.SafeLoader] | None = None,
    *,
    what: str = "YAML document",
    path: str | None = None,
) -> Any:
    """The data of a node tree ``compose_yaml`` returned.

    Raises:
        NumberTooLongError: an integer has more digits than Python converts.
    """
    if node is None:
        return None
    instance = (loader or _safe_loader())("")
    try:
        return instance.construct_document(node)
    except ValueError as exc:
        if INT_TOO_LONG not in str(exc):
            raise
        raise long_yaml_integer(node, what=what, path=path) from exc
    finally:
        instance.dispose()


def _safe_loader() -> type[yaml.SafeLoader]:
    import yaml

    # libyaml's loader when present (about ten times faster); its constructor is PyYAML's
    # SafeConstructor either way, so no tag can build a Python object.
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Progress:
    """How far the parser got before it stopped: collections open, and where the last event
    ended (the parser may have read further ahead)."""

    def __init__(self) -> None:
        self.depth = 0
        self.end = 0

    def track(self, events: Iterable[Any]) -> Iterator[Any]:
        import yaml

        for event in events:
            if isinstance(event, yaml.CollectionStartEvent):
                self.depth += 1
            elif isinstance(event, yaml.CollectionEndEvent):
                self.depth -= 1
            self.end = event.end_mark.index if event.end_mark else self.end
            yield event

    def too_deep(
        self, exc: Exception, text: str, *, what: str, path: str | None, limit: int
    ) -> InputTooDeepError | None:
        """Our refusal of a document the parser refused for its depth, in its own words.

        libyaml reads a line of flow brackets ahead of its next event and stops at a nesting
        limit of its own before the pre-check sees a level. Every bracket between the last
        event and where the parser stopped counts (an over-estimate of only what it read):
        past ``limit`` with the collections already open, the document is too deep.
        """
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        stop = getattr(mark, "index", None)
        ahead = text[self.end :] if stop is None else text[self.end : stop + 1]
        if self.depth + json_depth(ahead, strings=False) <= limit:
            return None
        line = getattr(mark, "line", None)
        return InputTooDeepError(
            f"the {what} is nested too deeply (over {limit} levels"
            f"{'' if line is None else f', line {line + 1}'}); no real {what} is, so it was "
            "refused unread",
            what=what,
            limit=limit,
            path=path,
        )


def _precheck(
    events: Any, *, what: str, path: str | None, max_depth: int, max_nodes: int, allow_aliases: bool
) -> None:
    import yaml

    depth = nodes = 0
    # anchor -> the nodes it stands for; the stack holds anchored collections still open.
    weight: dict[str, int] = {}
    open_anchors: list[tuple[str | None, int]] = []
    for event in events:
        anchor = getattr(event, "anchor", None)
        if (isinstance(event, yaml.AliasEvent) or anchor) and not allow_aliases:
            line = event.start_mark.line + 1 if event.start_mark else "?"
            raise YAMLAliasError(
                f"uses a YAML anchor or alias (line {line}); a {what} does not need them, "
                "write each value out",
                what=what,
                limit=0,
                path=path,
            )
        if isinstance(event, yaml.AliasEvent):
            nodes += weight.get(str(event.anchor), 1)
        elif isinstance(event, yaml.NodeEvent):
            nodes += 1
            if isinstance(event, yaml.ScalarEvent) and anchor:
                weight[anchor] = 1
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            open_anchors.append((anchor, nodes - 1))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            name, start = open_anchors.pop()
            if name:
                weight[name] = nodes - start
        if depth > max_depth:
            line = event.start_mark.line + 1 if event.start_mark else "?"
            raise InputTooDeepError(
                f"the {what} is nested too deeply (over {max_depth} levels, line {line}); "
                f"no real {what} is, so it was refused unread",
                what=what,
                limit=max_depth,
                path=path,
            )
        if nodes > max_nodes:
            raise YAMLAliasError(
                f"the {what} has over {max_nodes} values (aliases counted as what they "
                "repeat); write a smaller file, or drop the anchors and aliases",
                what=what,
                limit=max_nodes,
                path=path,
            )


def read_regular_file(
    path: str | os.PathLike[str], *, what: str, max_bytes: int = MAX_BYTES
) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``max_bytes``.

    A FIFO, a device (``/dev/zero``) or a directory is refused without blocking: the file is
    opened non-blocking and checked with ``fstat`` before anything is read.

    Raises:
        OSError: it cannot be opened, or is not a regular file (``errno`` EISDIR / EINVAL).
        InputTooLargeError: it is larger than ``max_bytes``.
    """
    import errno

    where = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(where, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", where)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({what}s are files)", where)
        _check_size(info.st_size, what=what, path=where, max_bytes=max_bytes)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    _check_size(len(data), what=what, path=where, max_bytes=max_bytes)
    return data


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names an existing regular file (never opens it)."""
    try:
        return stat.S_ISREG(Path(path).stat().st_mode)
    except (OSError, ValueError):
        return False
