"""Where a transformer step goes, operation by operation (docs/formulas.md#breakdown).

The FLOPs and bytes of a prefill, a decode step and a training step (transformer.py,
training/step.py) are sums of these terms, so a breakdown adds up to the totals by
construction. Each term's time is its own roofline at the step's peak, max(FLOPs / peak,
bytes / bandwidth), plus the seconds it spends beside the roofs (a collective, a pipeline's
idle slots); its share is that time over the sum of the terms' times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import NamedTuple

from app.engine.roofline import Bound, Roofline, roofline_time


class Term(NamedTuple):
    """One operation of a step, over its `count` occurrences (layers, or 1), on one chip.

    A named tuple (its `count` hides the tuple's method): every estimate builds several, and a
    tuple costs a fifth of a frozen dataclass's construction (docs/performance.md)."""

    name: str
    count: float  # type: ignore[assignment]  # hides tuple.count, as the docstring says
    flops: float = 0.0
    bytes: float = 0.0
    seconds: float = 0.0  # beside the roofs: a collective, pipeline idle
    regime: Bound | None = None  # what `seconds` are (communication, overhead)


# A Term from all six of its fields, (name, count, flops, bytes, seconds, regime), built in
# C by tuple's own constructor: the named tuple's generated one is a Python function, which
# costs twice the instructions, and every forward pass builds about ten
term_of: Callable[[tuple[str, float, float, float, float, Bound | None]], Term] = partial(
    tuple.__new__, Term
)


@dataclass(frozen=True, slots=True)
class Share:
    """A term placed on the step's roofline."""

    name: str
    count: float
    flops: float
    bytes: float
    time: float
    share: float
    bound: Bound


def totals(terms: Sequence[Term]) -> tuple[float, float]:
    """The FLOPs and bytes of the terms together."""
    # the fields read in C (a generator's resumption per term cost four times as much); the
    # same floats added in the same order
    return sum(map(_FLOPS, terms)), sum(map(_BYTES, terms))


_FLOPS, _BYTES = attrgetter("flops"), attrgetter("bytes")


def shares(terms: Sequence[Term], roof: Roofline) -> tuple[Share, ...]:
    """The terms on `roof`'s peak and bandwidth: each one's time, share and regime."""
    placed = []
    for term in terms:
        compute = term.flops / roof.peak.flops_per_s
        memory = term.bytes / roof.memory_bandwidth
        regime = term.regime or (Bound.COMPUTE if compute >= memory else Bound.MEMORY)
        placed.append((term, roofline_time(compute, memory) + term.seconds, regime))
    whole = sum(time for _, time, _ in placed)
    return tuple(
        Share(t.name, t.count, t.flops, t.bytes, time, time / whole if whole else 0.0, regime)
        for t, time, regime in placed
    )
