"""Chart labels and legends: labels moved apart (no two overlap) and kept inside the chart,
and legend entries wrapped in rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.web.svg import Box, Svg, num

# A label's box is estimated from its length: an average glyph of the charts' system-ui font
# is about 0.6 em wide (digits 0.55 em, capitals up to 0.7 em); the ascent is about 0.8 em,
# the descent 0.25 em. LABEL_GAP pixels keep two placed labels visibly apart.
GLYPH_EM = 0.6
ASCENT_EM = 0.8
DESCENT_EM = 0.25
LABEL_GAP = 2.0
LABEL_SIZE = 11.0  # px, the .label class


@dataclass(frozen=True, slots=True)
class Label:
    """A text label: its anchor point (x, baseline y), text, CSS class, anchor and font size."""

    x: float
    y: float
    text: str
    cls: str = "label"
    anchor: str = "start"
    size: float = LABEL_SIZE

    @property
    def width(self) -> float:
        """The estimated width of the text in pixels."""
        return len(self.text) * self.size * GLYPH_EM

    def box(self) -> Box:
        """The estimated box the text covers."""
        shift = {"start": 0.0, "middle": self.width / 2, "end": self.width}[self.anchor]
        left = self.x - shift
        return Box(
            left, self.y - self.size * ASCENT_EM, left + self.width, self.y + self.size * DESCENT_EM
        )


def overlap(a: Box, b: Box) -> bool:
    """Whether two boxes share any area (touching edges do not)."""
    return a.left < b.right and b.left < a.right and a.top < b.bottom and b.top < a.bottom


def _inside_x(label: Label, width: float) -> Label:
    """The label moved sideways (its anchor kept) so that its box lies within [0, width]."""
    box = label.box()
    if box.left < 0:
        return replace(label, x=label.x - box.left)
    if box.right > width:
        return replace(label, x=label.x - (box.right - width))
    return label


def _y_range(label: Label, height: float) -> tuple[float, float]:
    """The baselines at which the label's box lies within [0, height]."""
    return label.size * ASCENT_EM, height - label.size * DESCENT_EM


def _nearest_free(label: Label, placed: list[Box], height: float) -> Label | None:
    """The label at the free baseline nearest its own (clear of `placed` by LABEL_GAP and
    inside [0, height]); None when there is none. A free spot, if any, starts at an edge of
    the chart or just past a placed box, so those baselines are the only candidates."""
    low, high = _y_range(label, height)
    up, down = label.size * ASCENT_EM + LABEL_GAP, label.size * DESCENT_EM + LABEL_GAP
    box = label.box()
    beside = [p for p in placed if box.left < p.right and p.left < box.right]
    candidates = [min(max(label.y, low), high), low, high]
    candidates += [y for p in beside for y in (p.top - down, p.bottom + up)]
    best: Label | None = None
    for y in candidates:
        moved = replace(label, y=y)
        if not low <= y <= high or any(overlap(_padded(moved.box()), p) for p in beside):
            continue
        if best is None or abs(y - label.y) < abs(best.y - label.y):
            best = moved
    return best


def _padded(box: Box) -> Box:
    return Box(
        box.left - LABEL_GAP, box.top - LABEL_GAP, box.right + LABEL_GAP, box.bottom + LABEL_GAP
    )


def _stacked(labels: list[Label], height: float) -> list[Label] | None:
    """The labels in one column of baselines, in the order of their own, each clear of the
    next (whatever their x), pushed down then back up to stay inside; None if they cannot."""
    order = sorted(range(len(labels)), key=lambda i: labels[i].y)
    ys: dict[int, float] = {}
    floor = 0.0
    for i in order:
        low, high = _y_range(labels[i], height)
        ys[i] = max(min(max(labels[i].y, low), high), floor + labels[i].size * ASCENT_EM)
        floor = ys[i] + labels[i].size * DESCENT_EM + LABEL_GAP
    ceiling = height + LABEL_GAP
    for i in reversed(order):
        ys[i] = min(ys[i], ceiling - labels[i].size * DESCENT_EM - LABEL_GAP)
        ceiling = ys[i] - labels[i].size * ASCENT_EM
        if ceiling < 0:
            return None
    return [replace(label, y=ys[i]) for i, label in enumerate(labels)]


def place_labels(
    labels: Sequence[Label], width: float, height: float, obstacles: Sequence[Box] = ()
) -> list[Label]:
    """The labels moved as little as they must so that none overlaps another or leaves the
    [0, width] x [0, height] chart: sideways into the chart, then each (in the given order,
    the most important first) to the free baseline nearest its own, clear of `obstacles` too
    (the lines a label would be struck through by). Should that leave one without a place,
    all are set in one column of baselines instead; labels that do not fit even so (or are
    wider than the chart) are dropped, the last given first."""
    fitting = [_inside_x(label, width) for label in labels if label.width <= width]
    placed: list[Label] = []
    for label in fitting:
        spot = _nearest_free(label, [*obstacles, *(p.box() for p in placed)], height)
        if spot is None:
            break
        placed.append(spot)
    else:
        return placed
    while fitting:
        column = _stacked(fitting, height)
        if column is not None:
            return column
        fitting = fitting[:-1]
    return []


def draw_labels(svg: Svg, labels: Sequence[Label]) -> None:
    """Draw labels (placed by place_labels) as text."""
    for label in labels:
        svg.text(label.x, label.y, label.text, label.cls, label.anchor)


@dataclass(frozen=True, slots=True)
class Key:
    """A legend entry: a swatch (`line`, `dot` or `bar`) of CSS class `cls`, and its text."""

    text: str
    cls: str
    swatch: str = "line"


_SWATCH = 18  # pixels a swatch takes, before its text


def legend(svg: Svg, keys: Sequence[Key], left: float, top: float, right: float) -> float:
    """Legend entries in rows from (left, top), wrapped at `right`; returns the bottom. Each
    swatch wears its mark's class, and `key`."""
    x, row = left, top + LABEL_SIZE
    for key in keys:
        width = _SWATCH + len(key.text) * LABEL_SIZE * GLYPH_EM + 14
        if x > left and x + width > right:
            x, row = left, row + LABEL_SIZE + 8
        mid = row - LABEL_SIZE * 0.35
        if key.swatch == "bar":
            svg.add(
                f'<rect x="{num(x)}" y="{num(mid - 5)}" width="13" height="10" '
                f'class="key {key.cls}"/>'
            )
        elif key.swatch == "dot":  # a round rect: the chart's circles stay its points alone
            svg.add(
                f'<rect x="{num(x + 1.5)}" y="{num(mid - 4.5)}" width="9" height="9" rx="4.5" '
                f'class="key {key.cls}"/>'
            )
        else:
            svg.line(x, mid, x + 13, mid, f"key {key.cls}")
        svg.text(x + _SWATCH, row, key.text, "key-label")
        x += width
    return row + LABEL_SIZE * DESCENT_EM
