"""Issue 25's acceptance in one run: every cost that could grow with the store, as a ratio to
its floor, its small-size figure or its limit, with PASS/MISS; and the growth curves as plots.

It runs each measure module of this folder that is there (a missing one is reported "not
available", one that fails is reported and the others go on), each with ``measure(quick)``:

- ``listing`` (``_listing.py``): ``flowkit threads --json`` and the server's first page as the
  store grows to 20,000 / 100,000 threads (acceptance 1)
- ``cold_open`` (``_cold_open.py``): a fresh ``get_state`` and a cold resume as a thread's
  history grows to 100,000 steps, and the memory it takes (acceptance 2)
- ``map`` (``_map_scale.py``): a durable ``Map`` of 10 to 10,000 items (acceptance 3)
- ``quality`` (``_quality_scale.py``): the quality state store at 1,500 issues, resume of 200
  (acceptance 4)
- ``http`` (``_http_scale.py``): start+resume pairs per second against a FastAPI floor
  (acceptance 5)
- ``per_node`` (``_per_node.py``): per node, durable, against write+fdatasync (acceptance 6)
- ``pg_commits`` (``_pg_commits.py``): commits and round trips of a PostgreSQL worker per
  10-step thread (the issue's "15.9 commits"; no target)

A measure may return ``{"skipped": why}`` (no PostgreSQL server, say): it is reported so.

Every row of the table is a ratio: figure / reference, where the reference is the floor or the
small-size figure measured in the same run, or the issue's limit for an absolute target (then
the target is 1x). Timings are printed, never asserted; a MISS is printed, never raised.
``--plots DIR`` writes one SVG line chart per growth curve (``_svg_plot.py``). Scratch stores go
under ``--dir`` (default: the current folder), which should be on the disk you care about.

usage: python bench/scale.py [--quick] [--json] [--only NAME[,NAME]] [--plots DIR] [--dir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

#: Each measure by name, and the module of this folder that makes it.
MEASURES = {
    "listing": "_listing",
    "cold_open": "_cold_open",
    "map": "_map_scale",
    "quality": "_quality_scale",
    "http": "_http_scale",
    "per_node": "_per_node",
    "pg_commits": "_pg_commits",
}

Figures = dict[str, float]


# -- running the measures ------------------------------------------------------------------------


def flatten(data: Any, prefix: str) -> tuple[Figures, dict[str, str]]:
    """A measure's result as dotted names: numbers in the first dict, words in the second
    (``"fs": "ext4"``). Lists (raw samples) are left out."""
    numbers: Figures = {}
    words: dict[str, str] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            more_numbers, more_words = flatten(value, name)
            numbers.update(more_numbers)
            words.update(more_words)
    elif isinstance(data, bool):
        words[prefix] = str(data).lower()
    elif isinstance(data, int | float):
        numbers[prefix] = float(data)
    elif isinstance(data, str):
        words[prefix] = data
    return numbers, words


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Run with ``folder`` as the current one: every measure makes its scratch stores there."""
    before = Path.cwd()
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_measure(name: str, quick: bool, folder: Path) -> tuple[str, Any]:
    """``("ok", result)``, ``("not available", None)`` or ``("failed: ...", None)``."""
    module_name = MEASURES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return "not available", None
        return f"failed: {type(exc).__name__}: {exc}", None
    measure: Callable[[bool], Any] | None = getattr(module, "measure", None)
    if measure is None:
        return "not available", None
    try:
        # stdout is the report's: whatever a measure prints or logs goes to stderr.
        with _inside(folder), contextlib.redirect_stdout(sys.stderr):
            return "ok", measure(quick)
    except Exception as exc:  # one broken measure must not cost the others
        log("".join(traceback.format_exception(exc)[-3:]))
        return f"failed: {type(exc).__name__}: {str(exc)[:200]}", None


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _logs_to_stderr() -> None:
    """flowkit's log lines (warnings and up) on stderr: unconfigured structlog prints every
    event to stdout, and some measures run flows that log failures on purpose. The measures'
    own ``quiet_logging`` changes the level, never where the lines go."""
    import logging

    import structlog

    structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    )


# -- the acceptance table ------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of the table: ``figure`` / ``reference`` = ``ratio``, judged against ``target``
    (``higher`` when more is better, as for throughput); ``verdict`` None when not judged."""

    measure: str
    figure: str
    reference: str
    ratio: float | None
    target: str
    verdict: str | None
    #: The figures this row needed that the measure did not report.
    missing: tuple[str, ...] = ()


def _largest(figures: Figures, stem: str) -> int | None:
    """The largest N of the figures named ``stem.N``."""
    sizes = [
        int(k.rsplit(".", 1)[1]) for k in figures if re.fullmatch(rf"{re.escape(stem)}\.\d+", k)
    ]
    return max(sizes) if sizes else None


def _judge(ratio: float, limit: float, higher: bool) -> str:
    return "PASS" if (ratio >= limit if higher else ratio <= limit) else "MISS"


def _quantity(value: float, unit: str) -> str:
    if unit == "s" and value < 1:
        return f"{value * 1000:.0f} ms"
    if unit in ("ms", "µs") and value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}"


def _missing(label: str, *names: str) -> Row:
    return Row(label, "not measured", "-", None, "-", "MISSING", names)


def ratio_row(
    figures: Figures,
    label: str,
    figure: str,
    reference: str,
    unit: str,
    limit: float,
    *,
    higher: bool = False,
    reference_label: str = "",
) -> Row:
    """figure / reference (both measured), judged against ``limit`` x."""
    if figure not in figures or reference not in figures:
        return _missing(label, figure, reference)
    value, base = figures[figure], figures[reference]
    ratio = value / base if base else None
    target = f"{'>=' if higher else '<='} {limit:g}x"
    return Row(
        label,
        _quantity(value, unit),
        f"{_quantity(base, unit)}{' ' + reference_label if reference_label else ''}",
        ratio,
        target,
        None if ratio is None else _judge(ratio, limit, higher),
    )


def limit_row(figures: Figures, label: str, figure: str, unit: str, limit: float) -> Row:
    """An absolute target: figure / limit, judged against 1x."""
    if figure not in figures:
        return _missing(label, figure)
    value = figures[figure]
    ratio = value / limit
    return Row(
        label,
        _quantity(value, unit),
        f"limit {_quantity(limit, unit)}",
        ratio,
        "<= 1x",
        _judge(ratio, 1.0, False),
    )


def _has(figures: Figures, prefix: str) -> bool:
    return any(key.startswith(prefix) for key in figures)


def acceptance_rows(figures: Figures, status: dict[str, str]) -> list[Row]:
    """Issue 25's acceptance 1-6 as rows, for the measures that ran. A row whose figures the
    measure did not report says "not measured" (verdict MISSING); PostgreSQL rows appear only
    when the measure reached a server."""
    ran = {name for name, state in status.items() if state == "ok"}
    rows: list[Row] = []
    if "listing" in ran:
        cli = _largest(figures, "listing.cli_s") or 20_000
        page = _largest(figures, "listing.page_ms") or 100_000
        rows += [
            ratio_row(figures, f"flowkit threads --json, {cli:,} / 200 threads",
                      f"listing.cli_s.{cli}", "listing.cli_s.200", "s", 3.0,
                      reference_label="(200)"),
            limit_row(figures, f"GET /threads?limit=50 at {page:,} threads",
                      f"listing.page_ms.{page}", "ms", 100.0),
        ]  # fmt: skip
    if "cold_open" in ran:
        for store in ("json", "pg"):
            if store == "pg" and not _has(figures, "cold_open.pg."):
                continue  # no server reached
            for flow in ("counter", "messages"):
                stem = f"cold_open.{store}.{flow}"
                rows.append(
                    ratio_row(figures,
                              f"get_state, fresh Runner, 2,000 / 20 steps ({store}, {flow})",
                              f"{stem}.get_state_ms.2000", f"{stem}.get_state_ms.20", "ms", 3.0,
                              reference_label="(20)")
                )  # fmt: skip
                big = _largest(figures, f"{stem}.cold_ms")
                if big is None or big <= 2000:
                    continue  # this flow is not grown that far in this run
                rows += [
                    limit_row(figures, f"cold resume, {big:,}-step thread ({store}, {flow})",
                              f"{stem}.cold_ms.{big}", "ms", 200.0),
                    limit_row(figures, f"  its peak RSS above `import flowkit` ({store}, {flow})",
                              f"{stem}.rss_mb.{big}", "MB", 100.0),
                ]  # fmt: skip
    if "map" in ran:
        rows += _map_rows(figures)
    if "quality" in ran:
        for store in ("json", "postgres"):
            stem = f"quality.{store}"
            if store == "postgres" and not _has(figures, stem):
                continue  # no server reached
            rows += [
                ratio_row(figures, f"quality record+commit at 1,500 / first 50 issues ({store})",
                          f"{stem}.record_commit.at_1500_ms",
                          f"{stem}.record_commit.first_50_ms", "ms", 2.0,
                          reference_label="(first 50)"),
                limit_row(figures, f"quality resume of 200 issues ({store})",
                          f"{stem}.resume_200.median_ms", "ms", 1000.0),
            ]  # fmt: skip
    if "http" in ran:
        rows.append(
            ratio_row(figures, "HTTP start+resume pairs/s, 16 clients, fsync",
                      "http.fsync.flowkit_pairs_s", "http.fsync.floor_pairs_s", "/s", 0.8,
                      higher=True, reference_label="(FastAPI floor)")
        )  # fmt: skip
    if "pg_commits" in ran:
        rows.append(_commits_row(figures))
    if "per_node" in ran:
        rows.append(
            ratio_row(figures, "per node, durable, new thread per 10-node run",
                      "per_node.durable_us", "per_node.floor_us", "µs", 1.5,
                      reference_label="(same bytes, write+fdatasync)")
        )  # fmt: skip
    return rows


def _map_rows(figures: Figures) -> list[Row]:
    label = "durable Map of 10,000 items"
    found = [
        (int(m["items"]), m["shape"])
        for k in figures
        if (m := re.fullmatch(r"map\.(?P<shape>[\w-]+)\.(?P<items>\d+)\.fsync_s", k))
    ]
    if not found:
        return [_missing(label, "map.<shape>.<items>.fsync_s")]
    items = max(n for n, _ in found)
    shapes = sorted(s for n, s in found if n == items)
    # The slowest shape is the one judged (as _map_scale's own verdict does).
    worst = max(shapes, key=lambda s: figures[f"map.{s}.{items}.fsync_s"])
    rows = [
        limit_row(figures, f"durable Map of {items:,} items ({worst})",
                  f"map.{worst}.{items}.fsync_s", "s", 3.0)
    ]  # fmt: skip
    nofsync = f"map.{worst}.{items}.nofsync_s"
    if nofsync in figures:
        rows.append(
            Row(f"  the same without fsync ({worst})", _quantity(figures[nofsync], "s"),
                "-", None, "-", None)
        )  # fmt: skip
    return rows


def _commits_row(figures: Figures) -> Row:
    """Commits per step of a PostgreSQL worker's 10-step thread: shown, not judged (the
    issue gives no target; it measured 15.9 commits per thread before)."""
    label, name = "PostgreSQL worker: commits per 10-step thread", "pg_commits.pg.commits"
    if name not in figures:
        return _missing(label, name)
    commits = figures[name]
    return Row(label, f"{commits:.1f} commits", "10 steps", commits / 10, "-", None)


def render(rows: list[Row], status: dict[str, str]) -> str:
    head = ("measure", "figure", "floor / reference", "ratio", "target", "")
    cells = [head] + [
        (r.measure, r.figure, r.reference, "-" if r.ratio is None else f"{r.ratio:.2f}x",
         r.target, r.verdict or "")
        for r in rows
    ]  # fmt: skip
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cells[0], widths, strict=True)).rstrip()]
    lines.append("-" * len(lines[0]))
    for c in cells[1:]:
        lines.append("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip())
    lines.append("")
    lines += [f"{name:10} {state}" for name, state in status.items()]
    missing = [name for row in rows for name in row.missing]
    if missing:
        lines.append(f"not reported by their measure: {', '.join(missing)}")
    return "\n".join(lines)


# -- the growth curves ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Curve:
    """One chart: every figure matching ``pattern`` (groups ``series`` and ``x``) is a point,
    scaled by ``scale`` into the chart's unit."""

    file: str
    title: str
    x_label: str
    y_label: str
    patterns: tuple[tuple[str, float], ...]


CURVES = (
    Curve(
        "threads.svg",
        "Listing cost vs threads in the store",
        "threads in the store",
        "ms",
        (
            (r"listing\.(?P<series>cli)_s\.(?P<x>\d+)", 1000.0),
            (r"listing\.(?P<series>page)_ms\.(?P<x>\d+)", 1.0),
            (r"listing\.(?P<series>scandir)_ms\.(?P<x>\d+)", 1.0),
        ),
    ),
    Curve(
        "history.svg",
        "Opening a thread vs its history length",
        "steps in the thread's history",
        "ms",
        (
            (r"cold_open\.(?P<series>\w+\.\w+\.get_state)_ms\.(?P<x>\d+)", 1.0),
            (r"cold_open\.(?P<series>\w+\.\w+\.cold)_ms\.(?P<x>\d+)", 1.0),
            (r"cold_open\.(?P<series>\w+\.\w+\.history50)_ms\.(?P<x>\d+)", 1.0),
        ),
    ),
    Curve(
        "map.svg",
        "A Map vs its number of items",
        "items in the Map",
        "seconds",
        ((r"map\.(?P<series>[\w-]+\.\d+\.\w+)_s", 1.0),),
    ),
)

#: What each series of a chart is called in its legend: by name, or by the last part of it.
SERIES_NAMES = {
    "cli": "flowkit threads --json (wall, fresh process)",
    "page": "GET /threads?limit=50 (first page)",
    "scandir": "floor: os.scandir of the threads folder",
    "get_state": "get_state, fresh Runner",
    "cold": "cold resume of one step, new process",
    "history50": "history(limit=50)",
    "fsync": "fsync",
    "nofsync": "no fsync",
}


def _series_label(name: str) -> str:
    """``json.counter.get_state`` -> ``json, counter: get_state, fresh Runner``."""
    if name in SERIES_NAMES:
        return SERIES_NAMES[name]
    head, _, last = name.rpartition(".")
    what = SERIES_NAMES.get(last, last.replace("_", " "))
    return f"{head.replace('.', ', ')}: {what}" if head else what


def curve_series(figures: Figures, curve: Curve) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = {}
    for pattern, scale in curve.patterns:
        for key, value in figures.items():
            match = re.fullmatch(pattern, key)
            if match is None:
                continue
            groups = match.groupdict()
            if "x" in groups:
                name, x = groups["series"], float(groups["x"])
            else:  # map: "<shape>.<items>.<fsync|nofsync>"
                shape, items, kind = groups["series"].split(".")
                name, x = f"{shape}.{kind}", float(items)
            series.setdefault(_series_label(name), []).append((x, value * scale))
    return {name: sorted(points) for name, points in series.items() if len(points) > 1}


def write_plots(figures: Figures, folder: Path) -> list[Path]:
    from _svg_plot import line_chart

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for curve in CURVES:
        series = curve_series(figures, curve)
        if not series:
            continue
        path = folder / curve.file
        path.write_text(
            line_chart(curve.title, series, x_label=curve.x_label, y_label=curve.y_label),
            encoding="utf-8",
        )
        written.append(path)
    return written


# -- the command ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--only", metavar="NAME[,NAME]", help=f"only these measures ({', '.join(MEASURES)})"
    )
    parser.add_argument("--plots", metavar="DIR", type=Path, help="write SVG growth curves here")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="where scratch stores go")
    args = parser.parse_args(argv)
    chosen = list(MEASURES)
    if args.only:
        chosen = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = [name for name in chosen if name not in MEASURES]
        if unknown:
            parser.error(f"--only: no measure {', '.join(unknown)}; use {', '.join(MEASURES)}")
    figures: Figures = {}
    words: dict[str, str] = {}
    status: dict[str, str] = {}
    seconds: dict[str, float] = {}
    folder = args.dir.resolve()
    _logs_to_stderr()
    for name in chosen:
        log(f"scale: {name} ...")
        started = time.perf_counter()
        state, result = run_measure(name, args.quick, folder)
        seconds[name] = time.perf_counter() - started
        if isinstance(result, dict) and set(result) == {"skipped"}:
            state, result = f"skipped: {result['skipped']}", None
        status[name] = state
        if result is not None:
            numbers, texts = flatten(result, "")
            # Each module's names, under the measure's name (once: `per_node.ratio` stays so).
            for key, value in numbers.items():
                figures[key if key.startswith(f"{name}.") else f"{name}.{key}"] = value
            for key, text in texts.items():
                words[key if key.startswith(f"{name}.") else f"{name}.{key}"] = text
        log(f"scale: {name} {state} ({seconds[name]:.0f} s)")
    rows = acceptance_rows(figures, status)
    plots = write_plots(figures, args.plots) if args.plots else []
    if args.json:
        report = {
            "quick": args.quick,
            "measures": status,
            "seconds": seconds,
            "rows": [asdict(row) for row in rows],
            "figures": figures,
            "notes": words,
            "plots": [str(path) for path in plots],
        }
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(render(rows, status))
        for path in plots:
            print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
