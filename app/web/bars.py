"""The comparison chart: one horizontal bar of realistic tokens/s per chip, in rank order, on a
linear axis from 0 (so bar lengths compare as ratios); chips the workload does not fit on are
grey."""

from __future__ import annotations

from app import formatting as fmt
from app.schemas.comparison import ChipRow, Comparison
from app.web.labels import GLYPH_EM, LABEL_SIZE, Key, legend
from app.web.svg import (
    Box,
    Scale,
    Svg,
    axes,
    esc,
    linear_ticks,
    nice_max,
    num,
)

_ROW = 28  # pixels per chip
_BAR = 18
_TOP = 8
_MAX_GUTTER = 170  # the chip names' column at most; longer names are shortened
WIDE = 480  # narrower than the other charts: a bar per chip needs no more


def _short(text: str, width: float) -> str:
    """`text` cut to what fits in `width` pixels (estimated), with an ellipsis if cut."""
    most = int(width / (LABEL_SIZE * GLYPH_EM))
    return text if len(text) <= most else text[: most - 1] + "…"


def comparison_svg(answer: Comparison, width: int = WIDE) -> str:
    """Realistic tokens/s of the workload on each chip with figures, best first, `width`
    wide."""
    rows: list[ChipRow] = [r for r in answer.rows if r.realistic_tokens_per_s is not None]
    names = [r.chip.name for r in rows] or ["-"]
    most = _MAX_GUTTER if width >= WIDE else 0.4 * width  # a phone's: the bars need room too
    gutter = min(max(len(n) for n in names) * LABEL_SIZE * GLYPH_EM + 16, most)
    box = Box(left=gutter, top=_TOP, right=width - 16, bottom=_TOP + _ROW * max(len(rows), 1))
    title = f"Realistic tokens/s of {answer.model.name} by chip"
    svg = Svg(title, width=width, height=int(box.bottom) + 40)
    rates = [r.realistic_tokens_per_s or 0.0 for r in rows]
    x = Scale(0, nice_max(max(rates, default=1.0)), box.left, box.right)
    y = Scale(0, 1, box.top, box.bottom)
    axes(svg, box, x, y, xs=linear_ticks(x.lo, x.hi, 4), ys=[])
    svg.text((box.left + box.right) / 2, box.bottom + 32, "realistic tokens/s", "axis", "middle")
    if not rows:
        svg.text(box.left + 8, box.top + 18, "no chip has figures for this workload", "note")
    for index, (row, value) in enumerate(zip(rows, rates, strict=True)):
        top = box.top + index * _ROW + (_ROW - _BAR) / 2
        cls = "bar-fits" if row.fits is not False else "bar-unfit"
        end = x(value)
        svg.add(
            f'<rect x="{num(box.left)}" y="{num(top)}" width="{num(end - box.left)}" '
            f'height="{_BAR}" class="{cls}"><title>{esc(row.chip.name)}: '
            f"{esc(fmt.rate(value, 'tokens/s'))}</title></rect>"
        )
        baseline = top + _BAR / 2 + 4
        svg.text(box.left - 6, baseline, _short(row.chip.name, gutter - 10), "label", "end")
        text = fmt.rate(value, "tokens/s")
        if end + 6 + len(text) * LABEL_SIZE * GLYPH_EM <= box.right:
            svg.text(end + 4, baseline, text, "label")
        else:  # no room after the bar: inside its end
            svg.text(end - 4, baseline, text, "bar-value", "end")
    keys = [Key("fits in memory", "bar-fits", "bar")]
    if any(r.fits is False for r in rows):
        keys.append(Key("does not fit: a configuration that cannot run", "bar-unfit", "bar"))
    svg.height = int(legend(svg, keys, 8, box.bottom + 40, width - 8) + 6)
    return svg.render()
