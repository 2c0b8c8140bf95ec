"""A GPU trace's step in parts, each against the least time it could take, and the part to
attack first (docs/formulas.md#the-steps-time).

The parts are the timeline's (trace_timeline.py). Each has a limit, the time it would take
were it at its floor:

- kernels: the kernels of modelled operators at their rooflines (the time they lost over
  them taken away), the unmapped ones (no operator the engine models launched them) as
  measured, since nothing says what they should take;
- copies: the host copies at the host link's full rate (trace_copies.py), at most their
  exposed time;
- launch gaps: one asynchronous launch's latency per stretch (STREAM_GAP_S, realism.py), or
  one graph node's (GRAPH_NODE_GAP_S) before a kernel of a replayed CUDA graph;
- host waits, synchronisation and other: none, since a host that queues work ahead of the
  device, and does not wait for it inside a step, leaves the device no idle time.

The part to attack first is the one furthest over its limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine import prose
from app.engine.realism import GRAPH_NODE_GAP_S, STREAM_GAP_S
from app.engine.trace_timeline import Timeline

ADVICE = {
    "kernels": "Make the kernels themselves faster: the operators table lists them by the time "
    "each lost over its roofline, most first.",
    "copies": "Copy less between host and device: keep tensors on the device, or copy from "
    "pinned memory (pin_memory(), then .to(device, non_blocking=True)) beside compute.",
    "launch_gaps": "Launch fewer kernels: fuse operators, or capture the step in a CUDA graph "
    '(torch.compile(mode="reduce-overhead")), where a kernel waits about '
    f"{prose.seconds(GRAPH_NODE_GAP_S)} for the one before instead of "
    f"{prose.seconds(STREAM_GAP_S)}.",
    "host_waits": "The host falls behind the device: move host work out of the step (data "
    "loading into DataLoader workers, Python between operators), give each kernel more work "
    "(a larger batch), or capture the step in a CUDA graph so that one launch queues it all.",
    "synchronisation": "Take the synchronisations out of the step: .item(), .cpu(), .tolist(), "
    "printing a tensor or torch.cuda.synchronize() make the host wait for the device, which "
    "then idles until the host queues work again.",
    "other": "The device idles with nothing queued that the trace shows: host work with no "
    "kernel after it (the end of a step), or work on streams or devices not recorded.",
}
NAMES = {
    "kernels": "kernel time",
    "copies": "host copies",
    "launch_gaps": "launch gaps",
    "host_waits": "host waits",
    "synchronisation": "synchronisation",
    "other": "other idle time",
}


def _seconds(value: float) -> str:
    return prose.seconds(value) if value > 0 else "0 s"


@dataclass(frozen=True, slots=True)
class Part:
    """One part of the window: its seconds, its limit's seconds and what the limit is."""

    name: str
    time: float
    limit: float
    limit_words: str

    @property
    def over(self) -> float:
        """How far it is over its limit (0 at or under it)."""
        return max(0.0, self.time - self.limit)

    @property
    def advice(self) -> str:
        return ADVICE[self.name]


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The window's parts, in the timeline's order, and the one to attack first."""

    timeline: Timeline
    parts: tuple[Part, ...]
    mapped: float  # seconds of kernels launched by modelled operators
    unmapped: float  # seconds of kernels launched by no operator the engine models

    @property
    def first(self) -> Part | None:
        """The part furthest over its limit; None when every part is within it."""
        worst = max(self.parts, key=lambda p: p.over)
        return worst if worst.over > 0 else None

    def attack_first(self) -> str:
        """What to attack first, and why, in one sentence and its advice."""
        first = self.first
        if first is None:
            return "Every part of the step is within its limit."
        s = _seconds
        return (
            f"Attack the {NAMES[first.name]} first: {s(first.time)} against a limit of "
            f"{s(first.limit)} ({first.limit_words}), {s(first.over)} over. {first.advice}"
        )

    def elsewhere(self) -> str | None:
        """Where the step loses most outside its kernels, said before the kernels' verdict
        (which judges them alone); None when the kernels are the part to attack, or none is."""
        first = self.first
        kernels = next((p for p in self.parts if p.name == "kernels"), None)
        window = self.timeline.window
        if first is None or first.name == "kernels" or kernels is None or window <= 0:
            return None
        s = _seconds
        return (
            f"The verdict judges the kernels alone: they take {s(kernels.time)} of the "
            f"{s(window)} {'the steps span' if self.timeline.steps else 'the trace spans'} "
            f"({kernels.time / window:.0%}). {self.attack_first()}"
        )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _launches(line: Timeline) -> str:
    """The launch gaps' limit in words: a launch's latency each, a graph node's in a graph."""
    words = []
    if line.gaps or not line.graph_gaps:
        words.append(f"{_count(line.gaps, 'launch', 'launches')}, {_seconds(STREAM_GAP_S)} each")
    if line.graph_gaps:
        nodes = _count(line.graph_gaps, "graph node", "graph nodes")
        words.append(f"{nodes}, {_seconds(GRAPH_NODE_GAP_S)} each")
    return "; ".join(words)


def breakdown(
    line: Timeline, *, lost: float, mapped: float, unmapped: float, copies: float | None
) -> Breakdown:
    """The parts of `line` against their limits: `lost`, the seconds the modelled operators'
    kernels took over their rooflines (`mapped` seconds of kernels, `unmapped` more of
    kernels the engine does not model); `copies`, the host copies' ideal seconds (None when
    not priced)."""
    s = _seconds
    kernels = max(0.0, line.kernels - lost)
    exposed = line.copies if copies is None else min(line.copies, copies)
    parts = (
        Part(
            "kernels",
            line.kernels,
            kernels,
            f"the mapped kernels ({s(mapped)}) at their rooflines, the unmapped ones "
            f"({s(unmapped)}) as measured",
        ),
        Part(
            "copies",
            line.copies,
            exposed,
            "the host copies at the host link's full rate"
            if copies is not None
            else "not priced: taken as measured",
        ),
        Part(
            "launch_gaps",
            line.launch_gaps,
            line.gaps * STREAM_GAP_S + line.graph_gaps * GRAPH_NODE_GAP_S,
            _launches(line),
        ),
        Part("host_waits", line.host_waits, 0.0, "none: a host ahead of the device"),
        Part("synchronisation", line.synchronisation, 0.0, "none inside a step"),
        Part("other", line.other, 0.0, "none: a device with work queued"),
    )
    return Breakdown(line, parts, mapped, unmapped)
