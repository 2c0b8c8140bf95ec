"""A GPU trace's step, split in time: what the device did and why it was idle
(docs/formulas.md#the-steps-time).

The window is the recorded steps (torch.profiler's `ProfilerStep#` events, first start to last
end), or without them the trace's first start to its last end. Within it, each instant is one
of:

- kernels: a kernel, memset or copy within device memory runs (the union over all streams);
- copies: only a copy between host and device memory runs (trace_copies.py);
- idle, the rest, split by what the host was doing (after Holistic Trace Analysis's idle
  time breakdown, in its own terms: "host wait", "kernel wait", "other"). Each idle stretch
  ends when a device event starts; the host call that queued that event (by correlation)
  started at L:
  - synchronisation: the host was blocked in a synchronising call (`SYNC_CALLS`), or had
    returned from one within the stretch and not yet queued the next work (the wait emptied
    the queue);
  - host waits: before L, the host was busy elsewhere and had not queued the work yet;
  - launch gaps: from L, the work was queued and the device had not started it (the launch's
    own latency: HTA's "kernel wait"; a kernel of a replayed CUDA graph waits on the one
    before it, within the graph);
  - other: no device event follows, or the call that queued it is not in the trace.
The parts add up to the window, each at least 0.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from app.engine.trace_events import US, Call, Device

Interval = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Timeline:
    """The window's seconds, by what filled them; `gaps` counts the idle stretches with a
    launch gap before a kernel launched on its own, `graph_gaps` before a kernel of a CUDA
    graph, `steps` the recorded steps (0: the window is the whole trace)."""

    window: float
    kernels: float
    copies: float
    launch_gaps: float
    host_waits: float
    synchronisation: float
    other: float
    gaps: int
    graph_gaps: int
    steps: int


def merged(intervals: Iterable[Interval]) -> list[Interval]:
    """The union of `intervals`, as disjoint intervals in order."""
    out: list[Interval] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _clipped(intervals: Iterable[Interval], window: Interval) -> list[Interval]:
    lo, hi = window
    return [(max(s, lo), min(e, hi)) for s, e in intervals if min(e, hi) > max(s, lo)]


def _length(intervals: Iterable[Interval]) -> float:
    return sum(e - s for s, e in intervals)


def _first(queued: tuple[float, float | None, bool]) -> float:
    return queued[0]


def _complement(union: Sequence[Interval], window: Interval) -> list[Interval]:
    """The parts of `window` outside `union` (disjoint, in order, inside the window)."""
    out, at = [], window[0]
    for start, end in union:
        if start > at:
            out.append((at, start))
        at = max(at, end)
    if window[1] > at:
        out.append((at, window[1]))
    return out


class _Covered:
    """How much of any interval a union of intervals covers (a prefix sum over it)."""

    def __init__(self, union: Sequence[Interval]) -> None:
        self.starts = [s for s, _ in union]
        self.ends = [e for _, e in union]
        self.before = [0.0, *accumulate(e - s for s, e in union)]

    def within(self, lo: float, hi: float) -> float:
        """The length of the union inside [lo, hi]."""
        if hi <= lo:
            return 0.0
        return self._upto(hi) - self._upto(lo)

    def _upto(self, t: float) -> float:
        i = bisect_right(self.starts, t)  # intervals starting at or before t
        if i == 0:
            return 0.0
        return self.before[i - 1] + min(t, self.ends[i - 1]) - self.starts[i - 1]

    def last_end_in(self, lo: float, hi: float) -> float | None:
        """The latest end of an interval of the union inside (lo, hi], if any."""
        i = bisect_right(self.ends, hi)
        return self.ends[i - 1] if i and self.ends[i - 1] > lo else None


def _queued(event: Device, call: Call | None) -> tuple[float, float | None, bool]:
    start = event.end - event.dur
    return (start, None, False) if call is None else (start, call.start, call.graph)


def timeline(
    device: Sequence[Device],
    host_copy: Sequence[bool],
    calls: Sequence[Call],
    window: Interval,
    steps: int,
) -> Timeline:
    """The window (microseconds) split as the module says; `host_copy[i]` tells whether
    `device[i]` is a copy between host and device memory."""
    timed = [(e, copy) for e, copy in zip(device, host_copy, strict=True) if e.start is not None]
    kernels = merged(_clipped(((e.end - e.dur, e.end) for e, c in timed if not c), window))
    busy = merged(_clipped(((e.end - e.dur, e.end) for e, _ in timed), window))
    launched = {c.correlation: c for c in calls if c.correlation is not None}
    syncs = _Covered(merged((c.start, c.start + c.dur) for c in calls if c.sync))
    # each device event's start, when the host began to queue it (None: not in the trace),
    # and whether it is a graph's
    starts = sorted((_queued(e, launched.get(e.correlation)) for e, _ in timed), key=_first)
    firsts = [s for s, _, _ in starts]
    launch = host = sync = other = 0.0
    stream_gaps = graph_gaps = 0  # before kernels launched on their own, and in graphs
    for lo, hi in _complement(busy, window):
        blocked = syncs.within(lo, hi)
        i = bisect_left(firsts, hi)  # the first device event to start once the stretch ends
        _, queued, graph = starts[i] if i < len(starts) else (hi, None, False)
        if queued is None:
            sync, other = sync + blocked, other + (hi - lo - blocked)
            continue
        at = min(max(queued, lo), hi)
        gap = (hi - at) - syncs.within(at, hi)
        waiting = (at - lo) - syncs.within(lo, at)
        if gap > 0:
            launch += gap
            if graph:
                graph_gaps += 1
            else:
                stream_gaps += 1
        returned = syncs.last_end_in(lo, at)
        if returned is not None:  # the sync emptied the queue: the refill is the sync's
            sync, waiting = sync + (at - returned) - syncs.within(returned, at), 0.0
            host += (returned - lo) - syncs.within(lo, returned)
        host += waiting
        sync += blocked
    span = window[1] - window[0]
    kernel_time = _length(kernels)
    return Timeline(
        window=span * US,
        kernels=kernel_time * US,
        copies=(_length(busy) - kernel_time) * US,
        launch_gaps=launch * US,
        host_waits=host * US,
        synchronisation=sync * US,
        other=other * US,
        gaps=stream_gaps,
        graph_gaps=graph_gaps,
        steps=steps,
    )
