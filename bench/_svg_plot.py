"""A line chart as a standalone SVG file, with no plotting library: axes, ticks, labels, one
polyline (with point markers) per series, and a legend.

For the growth curves ``bench/scale.py --plots DIR`` draws (cost against threads, history
length, Map size): x is on a log scale by default, and so is y when the values span more than
two decades, so a flat curve reads as flat and a linear one climbs. Nothing here knows about
flowkit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape

__all__ = ["line_chart"]

Points = Sequence[tuple[float, float]]

#: Colour-blind-safe (Okabe-Ito), then two greys.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")
#: The plot's own box; the legend goes below it, a line per series.
WIDTH, HEIGHT = 720, 440
LEGEND_LINE = 18
LEFT, RIGHT, TOP, BOTTOM = 78, 44, 44, 56


def line_chart(
    title: str,
    series: Mapping[str, Points],
    *,
    x_label: str,
    y_label: str,
    x_log: bool = True,
    y_log: bool | None = None,
) -> str:
    """The SVG text of a chart of ``series`` (name -> (x, y) points); ``y_log=None`` picks a
    log y axis when the positive values span more than 100x. Points that a log axis cannot
    show (<= 0) are left out."""
    ys = [y for points in series.values() for _, y in points if y > 0]
    if y_log is None:
        y_log = bool(ys) and max(ys) / min(ys) > 100
    shown = {
        name: sorted((x, y) for x, y in points if (x > 0 or not x_log) and (y > 0 or not y_log))
        for name, points in series.items()
    }
    shown = {name: points for name, points in shown.items() if points}
    xs = [x for points in shown.values() for x, _ in points] or [1.0, 10.0]
    ys = [y for points in shown.values() for _, y in points] or [0.0, 1.0]
    x_axis = _Axis(min(xs), max(xs), log=x_log, start=LEFT, end=WIDTH - RIGHT)
    y_axis = _Axis(min(ys), max(ys), log=y_log, start=HEIGHT - BOTTOM, end=TOP, from_zero=not y_log)
    total = HEIGHT + LEGEND_LINE * len(shown) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{total}" '
        f'viewBox="0 0 {WIDTH} {total}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{total}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="15" '
        f'font-weight="bold">{escape(title)}</text>',
        *_grid(x_axis, y_axis),
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 14}" '
        f'text-anchor="middle">{escape(x_label)}</text>',
        f'<text x="16" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {(TOP + HEIGHT - BOTTOM) / 2})">{escape(y_label)}</text>',
    ]
    for index, (name, points) in enumerate(shown.items()):
        colour = PALETTE[index % len(PALETTE)]
        coords = " ".join(f"{x_axis.at(x):.1f},{y_axis.at(y):.1f}" for x, y in points)
        parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        parts += [
            f'<circle cx="{x_axis.at(x):.1f}" cy="{y_axis.at(y):.1f}" r="3" fill="{colour}">'
            f"<title>{escape(name)}: {_label(x)}, {_label(y)}</title></circle>"
            for x, y in points
        ]
    parts += _legend(list(shown))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


class _Axis:
    """Maps values in [low, high] to pixels in [start, end], linearly or by log10."""

    def __init__(
        self,
        low: float,
        high: float,
        *,
        log: bool,
        start: float,
        end: float,
        from_zero: bool = False,
    ) -> None:
        self.log = log
        if log:
            low, high = 10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high))
            if low == high:
                high = low * 10
        else:
            if from_zero:
                low = min(low, 0.0)
            step = _nice_step(low, high)
            low, high = math.floor(low / step) * step, math.ceil(high / step) * step
            if low == high:
                high = low + step
        self.low, self.high, self.start, self.end = low, high, start, end

    def _f(self, value: float) -> float:
        return math.log10(value) if self.log else value

    def at(self, value: float) -> float:
        share = (self._f(value) - self._f(self.low)) / (self._f(self.high) - self._f(self.low))
        return self.start + share * (self.end - self.start)

    def ticks(self) -> list[float]:
        if self.log:
            first, last = round(math.log10(self.low)), round(math.log10(self.high))
            return [10.0**power for power in range(first, last + 1)]
        step = _nice_step(self.low, self.high)
        count = round((self.high - self.low) / step)
        return [self.low + i * step for i in range(count + 1)]

    def minor(self) -> list[float]:
        """2x .. 9x of each decade on a log axis (unlabelled lines)."""
        if not self.log:
            return []
        return [t * k for t in self.ticks()[:-1] for k in range(2, 10)]


def _nice_step(low: float, high: float, wanted: int = 5) -> float:
    """A step of 1, 2 or 5 x 10^n giving about ``wanted`` intervals over [low, high]."""
    span = (high - low) or abs(high) or 1.0
    raw = span / wanted
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.4g}"
    return f"{value:.3g}"


def _grid(x: _Axis, y: _Axis) -> list[str]:
    left, right, top, bottom = LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM
    parts = ['<g stroke="#eeeeee">']
    parts += [
        f'<line x1="{x.at(v):.1f}" y1="{top}" x2="{x.at(v):.1f}" y2="{bottom}"/>' for v in x.minor()
    ]
    parts += [
        f'<line x1="{left}" y1="{y.at(v):.1f}" x2="{right}" y2="{y.at(v):.1f}"/>' for v in y.minor()
    ]
    parts.append("</g>")
    parts.append('<g stroke="#cccccc">')
    parts += [
        f'<line x1="{x.at(v):.1f}" y1="{top}" x2="{x.at(v):.1f}" y2="{bottom}"/>' for v in x.ticks()
    ]
    parts += [
        f'<line x1="{left}" y1="{y.at(v):.1f}" x2="{right}" y2="{y.at(v):.1f}"/>' for v in y.ticks()
    ]
    parts.append("</g>")
    parts.append(f'<path d="M{left},{top} V{bottom} H{right}" fill="none" stroke="#333333"/>')
    parts += [
        f'<text x="{x.at(v):.1f}" y="{bottom + 18}" text-anchor="middle">{_label(v)}</text>'
        for v in x.ticks()
    ]
    parts += [
        f'<text x="{left - 6}" y="{y.at(v) + 4:.1f}" text-anchor="end">{_label(v)}</text>'
        for v in y.ticks()
    ]
    return parts


def _legend(names: list[str]) -> list[str]:
    """A line per series under the x axis's label: a stroke of its colour, then its name."""
    if not names:
        return [f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no data</text>']
    parts = []
    for index, name in enumerate(names):
        colour = PALETTE[index % len(PALETTE)]
        y = HEIGHT + LEGEND_LINE * index
        parts.append(
            f'<line x1="{LEFT}" y1="{y - 4}" x2="{LEFT + 24}" y2="{y - 4}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{LEFT + 30}" y="{y}">{escape(name)}</text>')
    return parts
