"""The report page's charts as inline SVG, drawn here so the page needs no script library and no network."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

W, H = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 20, 16, 44
MAX_X_LABELS = 8
PALETTE = (
    "#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
    "#be185d", "#4d7c0f", "#4f46e5", "#a16207", "#0f766e", "#64748b",
)  # fmt: skip
DASHES = ("", "6 3", "2 3")
"""Past twelve series, colours repeat with another dash."""
CHAR_W, LABEL_H = 6.6, 12.0
"""A label's size at the charts' 11px text: width per character, height."""


@dataclass
class _Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlap(self, other: _Box) -> float:
        w = min(self.x1, other.x1) - max(self.x0, other.x0)
        h = min(self.y1, other.y1) - max(self.y0, other.y0)
        return w * h if w > 0 and h > 0 else 0.0


def place_labels(
    items: Sequence[tuple[float, float, str]], frame: tuple[float, float, float, float], avoid: Sequence[_Box] = ()
) -> list[tuple[float, float, str]]:
    """Where to write each (x, y, text) beside its point: the first of eight spots around it that stays in
    `frame` (x0, y0, x1, y1) and overlaps no label placed before it nor a mark in `avoid`; where every spot
    overlaps, the one that overlaps least. Returns (x, y, text-anchor) per item."""
    placed: list[_Box] = []
    out = []
    spots = ((8, -8, "start"), (8, 14, "start"), (-8, -8, "end"), (-8, 14, "end"), (0, -12, "middle"),
             (0, 22, "middle"), (12, 3, "start"), (-12, 3, "end"))  # fmt: skip
    fx0, fy0, fx1, fy1 = frame
    for x, y, text in items:
        width = CHAR_W * len(text) + 2
        best: tuple[float, tuple[float, float, str], _Box] | None = None
        for dx, dy, anchor in spots:
            left = x + dx if anchor == "start" else x + dx - width if anchor == "end" else x + dx - width / 2
            box = _Box(left, y + dy - LABEL_H + 2, left + width, y + dy + 2)
            outside = max(0.0, fx0 - box.x0) + max(0.0, box.x1 - fx1) + max(0.0, fy0 - box.y0) + max(0.0, box.y1 - fy1)
            cost = outside * 1000 + sum(box.overlap(b) for b in placed) + sum(box.overlap(b) for b in avoid) / 4
            if best is None or cost < best[0]:
                best = (cost, (x + dx, y + dy, anchor), box)
            if cost == 0:
                break
        assert best is not None
        placed.append(best[2])
        out.append(best[1])
    return out


@dataclass(frozen=True)
class Point:
    key: str
    label: str
    number: int
    x: float
    y: float
    tip: str


def _nice_log_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    for exp in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**exp
            if lo <= v <= hi:
                ticks.append(v)
    return ticks or [lo, hi]


def _linear_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    start = math.ceil(lo / step) * step
    return [round(start + i * step, 10) for i in range(int((hi - start) / step) + 1)]


def _fmt_ms(v: float) -> str:
    return f"{v:g}" if v < 1000 else f"{v / 1000:g} s"


def _frame(inner: str, title: str, x_label: str, y_label: str, cls: str) -> Markup:
    return Markup(
        f'<svg class="chart {cls}" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{inner}"
        f'<text class="axis-label" x="{LEFT + (W - LEFT - RIGHT) / 2}" y="{H - 6}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text class="axis-label" transform="rotate(-90)" x="{-(TOP + (H - TOP - BOTTOM) / 2)}" y="14" '
        f'text-anchor="middle">{escape(y_label)}</text></svg>'
    )


def _share_axis(lo: float, hi: float, y) -> str:
    out = []
    for t in _linear_ticks(lo, hi):
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y(t):.1f}" y2="{y(t):.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>'
        )
    return "".join(out)


@dataclass(frozen=True)
class _TimeScale:
    """Where a (median ms, quality) pair falls: time on a log scale across, quality up."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float

    @classmethod
    def over(cls, timed: Sequence[Point]) -> _TimeScale:
        ys = [p.y for p in timed]
        y_lo, y_hi = max(0.0, min(ys) - 0.05), min(1.0, max(ys) + 0.05) if max(ys) <= 1 else max(ys) * 1.05
        return cls(
            min(p.x for p in timed) / 1.5, max(p.x for p in timed) * 1.5, y_lo, y_hi if y_hi > y_lo else y_lo + 0.1
        )

    def x(self, v: float) -> float:
        span = math.log10(self.x_hi) - math.log10(self.x_lo)
        return LEFT + (math.log10(v) - math.log10(self.x_lo)) / span * (W - LEFT - RIGHT)

    def y(self, v: float) -> float:
        return TOP + (1 - (v - self.y_lo) / (self.y_hi - self.y_lo)) * (H - TOP - BOTTOM)


def _time_ticks(s: _TimeScale) -> str:
    return "".join(
        f'<line class="grid" x1="{s.x(t):.1f}" x2="{s.x(t):.1f}" y1="{TOP}" y2="{H - BOTTOM}"/>'
        f'<text class="tick" x="{s.x(t):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{_fmt_ms(t)}</text>'
        for t in _nice_log_ticks(s.x_lo, s.x_hi)
    )


def _frontier_line(timed: Sequence[Point], frontier: Sequence[str], s: _TimeScale) -> str:
    by_key = {p.key: p for p in timed}
    line = sorted((by_key[k] for k in frontier if k in by_key), key=lambda p: p.x)
    if not line:
        return ""
    coords = " ".join(f"{s.x(p.x):.1f},{s.y(p.y):.1f}" for p in line)
    return f'<polyline class="frontier" points="{coords}" data-keys="{escape(",".join(p.key for p in line))}"/>'


def _shared_labels(timed: Sequence[Point], s: _TimeScale) -> dict[int, list[Point]]:
    """Marks closer than a label's width share one label ("7, 8"), written once beside the first of them:
    each first mark's number and the marks its label names."""
    labels: dict[int, list[Point]] = {}
    anchors: list[tuple[float, float, int]] = []
    for p in sorted(timed, key=lambda p: p.number):
        near = next((i for ax, ay, i in anchors if abs(ax - s.x(p.x)) < 14 and abs(ay - s.y(p.y)) < 10), None)
        if near is None:
            anchors.append((s.x(p.x), s.y(p.y), p.number))
            labels[p.number] = [p]
        else:
            labels[near].append(p)
    return labels


def _label_spots(timed: Sequence[Point], s: _TimeScale) -> dict[int, tuple[float, float, str, str]]:
    """Where each shared label goes (clear of every mark): x, y, anchor and its text, by the first mark's number."""
    labels = _shared_labels(timed, s)
    marks = [_Box(s.x(p.x) - 6, s.y(p.y) - 6, s.x(p.x) + 6, s.y(p.y) + 6) for p in timed]
    firsts = [p for p in timed if p.number in labels]
    names = {p.number: ", ".join(str(q.number) for q in labels[p.number]) for p in firsts}
    spots = place_labels([(s.x(p.x), s.y(p.y), names[p.number]) for p in firsts], (LEFT, 2, W - 2, H - BOTTOM), marks)
    return {p.number: (*spot, names[p.number]) for p, spot in zip(firsts, spots, strict=True)}


def quality_vs_time(points: Sequence[Point], frontier: Sequence[str], y_label: str) -> Markup:
    """One mark per setup: quality up, median search time across on a log scale; the frontier (setups
    nothing beats on both) joined by a line from the fastest to the best."""
    timed = [p for p in points if p.x > 0]
    if not timed:
        return Markup('<p class="empty">No setup has search times to draw.</p>')
    s = _TimeScale.over(timed)
    parts = [_share_axis(s.y_lo, s.y_hi, s.y), _time_ticks(s), _frontier_line(timed, frontier, s)]
    where = _label_spots(timed, s)
    for p in timed:
        on = " on-frontier" if p.key in frontier else ""
        text = ""
        if p.number in where:
            lx, ly, anchor, name = where[p.number]
            text = f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{name}</text>'
        parts.append(
            f'<g class="mark{on}" data-key="{escape(p.key)}"><title>{escape(p.tip)}</title>'
            f'<circle cx="{s.x(p.x):.1f}" cy="{s.y(p.y):.1f}" r="6"/>{text}</g>'
        )
    return _frame(
        "".join(parts),
        f"{y_label} against median search time",
        "median search time, ms (log scale)",
        y_label,
        "scatter",
    )


def lines(
    series: Sequence[tuple[str, str, Sequence[float | None]]],
    x_labels: Sequence[str],
    y_label: str,
    x_label: str,
    title: str,
    cls: str,
    marks: Sequence[int] = (),
    from_zero: bool = True,
) -> Markup:
    """A line per series (name shown at its end, tooltip with its full label) over shared x categories;
    `marks` draws a dashed rule before those x positions (where something changed)."""
    values = [v for _, _, vs in series for v in vs if v is not None]
    if not values or not x_labels:
        return Markup('<p class="empty">Nothing to draw.</p>')
    y_lo = 0.0 if from_zero else max(0.0, math.floor((min(values) - 0.05) * 20) / 20)
    y_hi = max(values) * 1.05 if max(values) > 1 else min(1.0, math.ceil((max(values) + 0.05) * 20) / 20)
    n = len(x_labels)

    def x(i: int) -> float:
        return LEFT + (i + 0.5) / n * (W - LEFT - RIGHT)

    def y(v: float) -> float:
        return TOP + (1 - (v - y_lo) / (y_hi - y_lo)) * (H - TOP - BOTTOM)

    parts = [_share_axis(y_lo, y_hi, y)]
    every = max(1, math.ceil(n / MAX_X_LABELS))
    for i, label in enumerate(x_labels):
        if i % every == 0 or i == n - 1:
            parts.append(
                f'<text class="tick" x="{x(i):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{escape(label)}</text>'
            )
    for i in marks:
        xm = (x(i - 1) + x(i)) / 2
        parts.append(
            f'<g class="index-changed"><title>the index changed here</title>'
            f'<line x1="{xm:.1f}" x2="{xm:.1f}" y1="{TOP}" y2="{H - BOTTOM}"/>'
            f'<text x="{xm + 3:.1f}" y="{TOP + 10}">index changed</text></g>'
        )
    ends = _end_labels(series, x, y)
    for s, (name, tip, vs) in enumerate(series):
        colour, dash = series_style(s)
        pts = [(x(i), y(v)) for i, v in enumerate(vs) if v is not None]
        coords = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
        dots = "".join(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3"/>' for a, b in pts)
        end = ""
        if s in ends:
            lx, ly, text, anchor = ends[s]
            end = f'<text class="end-label" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{escape(text)}</text>'
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<g class="series" data-name="{escape(name)}" stroke="{colour}" fill="{colour}">'
            f'<title>{escape(tip)}</title><polyline fill="none" points="{coords}"{dashed}/>{dots}{end}</g>'
        )
    return _frame("".join(parts), title, x_label, y_label, cls) + legend(series)


def series_style(index: int) -> tuple[str, str]:
    """The colour and dash of the index-th series: twelve colours, then the same with dashes."""
    return PALETTE[index % len(PALETTE)], DASHES[(index // len(PALETTE)) % len(DASHES)]


def legend(series: Sequence[tuple[str, str, Sequence[float | None]]]) -> Markup:
    """Which line is which: a swatch in the line's colour (and dash), its number and its full label."""
    items = []
    for s, (name, tip, _) in enumerate(series):
        colour, dash = series_style(s)
        style = f"border-top: 3px {'dashed' if dash else 'solid'} {colour}"
        items.append(f'<li><span class="swatch" style="{style}"></span>{escape(name)}. {escape(tip)}</li>')
    return Markup(f'<ul class="legend">{"".join(items)}</ul>')


def _end_labels(series, x, y) -> dict[int, tuple[float, float, str, str]]:
    """One label per group of lines that end at the same height ("1, 2, 3"), the groups pushed apart so
    that no two overlap, kept inside the plot."""
    groups: dict[tuple[float, float], list[int]] = {}
    for s, (_, _, vs) in enumerate(series):
        last = max((i for i, v in enumerate(vs) if v is not None), default=None)
        if last is not None:
            groups.setdefault((round(x(last), 1), round(y(vs[last]), 1)), []).append(s)
    ordered = sorted(groups.items(), key=lambda item: item[0][1])
    out: dict[int, tuple[float, float, str, str]] = {}
    floor = TOP + LABEL_H - 2
    for (gx, gy), members in ordered:
        ly = max(gy + 4, floor)
        floor = ly + LABEL_H
        text = ", ".join(series[m][0] for m in members)
        fits = gx + 6 + CHAR_W * len(text) <= W - 2
        out[members[0]] = (gx + 6 if fits else gx - 6, min(ly, H - BOTTOM), text, "start" if fits else "end")
    return out


def bars(items: Sequence[tuple[str, float, str]], y_label: str, x_label: str, title: str, cls: str) -> Markup:
    """Vertical bars: (label under the bar, value, tooltip)."""
    if not items:
        return Markup('<p class="empty">Nothing to draw.</p>')
    top = max(v for _, v, _ in items) or 1.0
    n = len(items)
    width = (W - LEFT - RIGHT) / n

    def y(v: float) -> float:
        return TOP + (1 - v / top) * (H - TOP - BOTTOM)

    parts = [_share_axis(0.0, top, y)]
    for i, (label, value, tip) in enumerate(items):
        x0 = LEFT + i * width + width * 0.15
        parts.append(
            f'<g class="bar"><title>{escape(tip)}</title>'
            f'<rect x="{x0:.1f}" y="{y(value):.1f}" width="{width * 0.7:.1f}" height="{y(0) - y(value):.1f}"/>'
            f'<text class="tick" x="{x0 + width * 0.35:.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">'
            f"{escape(label)}</text></g>"
        )
    return _frame("".join(parts), title, x_label, y_label, cls)


def paired_bars(
    rows: Sequence[tuple[str, Sequence[tuple[str, float, str]]]], x_label: str, title: str, cls: str
) -> Markup:
    """Horizontal bars grouped by row: a row's label on the left, then one bar per (name, value, tooltip),
    e.g. a method without and with the reranker."""
    bars_in = [b for _, group in rows for b in group]
    if not bars_in:
        return Markup('<p class="empty">Nothing to draw.</p>')
    top = max(v for _, v, _ in bars_in) or 1.0
    label_w, bar_h, gap = 250, 16, 10
    height = TOP + sum(len(g) * (bar_h + 2) + gap for _, g in rows) + BOTTOM

    def x(v: float) -> float:
        return label_w + v / top * (W - label_w - RIGHT - 110)

    parts = []
    y0 = TOP
    for label, group in rows:
        parts.append(
            f'<text class="tick row-label" x="{label_w - 8}" y="{y0 + bar_h - 3}" text-anchor="end">'
            f"{escape(label[:44])}</text>"
        )
        for i, (name, value, tip) in enumerate(group):
            yb = y0 + i * (bar_h + 2)
            kind = "reranked" if name.startswith("+") else "plain"
            parts.append(
                f'<g class="hbar {kind}"><title>{escape(tip)}</title>'
                f'<rect x="{label_w}" y="{yb}" width="{x(value) - label_w:.1f}" height="{bar_h}"/>'
                f'<text class="tick" x="{x(value) + 4:.1f}" y="{yb + bar_h - 4}">{escape(name)} {value:.3f}</text></g>'
            )
        y0 += len(group) * (bar_h + 2) + gap
    return Markup(
        f'<svg class="chart {cls}" viewBox="0 0 {W} {height}" role="img" aria-label="{escape(title)}">'
        f"<title>{escape(title)}</title>{''.join(parts)}"
        f'<text class="axis-label" x="{label_w + (W - label_w) / 2}" y="{height - 8}" text-anchor="middle">'
        f"{escape(x_label)}</text></svg>"
    )
