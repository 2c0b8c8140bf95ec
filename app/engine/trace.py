"""A torch.profiler trace judged op by op (docs/formulas.md#traces).

The trace is the Chrome-trace JSON that `export_chrome_trace` writes: `traceEvents`, whose
`cpu_op` events are the operators PyTorch dispatched (`ts` and `dur` in microseconds, shapes
in `args` with record_shapes=True), and on a GPU, `kernel` (and `gpu_memcpy`, `gpu_memset`)
events, each tied to the operator that launched it by `args["External id"]`.

Operators nest (aten::linear calls aten::t and aten::addmm); each unit of work counts once:
the outermost operator the engine models counts whole, with everything it calls. An operator
it does not model counts whole as not modelled, unless an operator inside it is modelled:
then those count as units and only its time outside them is not modelled.

The measured time of a unit is its kernels' device time when the trace has kernel events,
else the operator's duration on the CPU (where PyTorch's CPU kernels run inside the op). Its
copies between host and device memory are priced apart, as copies (trace_copies.py), and
with kernel events the step is split in time (trace_timeline.py, trace_breakdown.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from app.engine.errors import EngineError
from app.engine.fusion import in_sequence
from app.engine.hardware import Chip
from app.engine.ops import Op, op_work, special_evaluations
from app.engine.precise_functions import precise_rates, with_evaluations
from app.engine.realism import Realism, realize
from app.engine.roofline import Roofline, Work, place
from app.engine.stacks import Software
from app.engine.trace_breakdown import Breakdown, breakdown
from app.engine.trace_copies import HostCopies, host_copies, host_copy_of
from app.engine.trace_events import US, Device, Event, Key, Raw, TraceEvents
from app.engine.trace_ops import op_of
from app.engine.trace_timeline import timeline
from app.engine.verdict import Judgement, judge

MAX_DISTINCT = 2_000  # distinct (operator, shapes, arguments) analysed; the rest not modelled
UNKNOWN = "not an operator the engine models"
OVER = f"over the {MAX_DISTINCT} distinct operators analysed"


@dataclass(slots=True)
class Modelled:
    """The calls of one operator with one set of shapes: `roofline` one call's on `chip`,
    realized on the stack (`placed` before)."""

    op: Op
    work: Work
    placed: Roofline
    roofline: Roofline
    chip: Chip
    count: int = 0
    measured: float = 0.0

    @property
    def expected_time(self) -> float:
        """All its calls' ideal time."""
        return self.count * self.roofline.expected_time

    @property
    def realistic_time(self) -> float:
        """All its calls' realistic time, each call launched on its own."""
        return self.count * self.roofline.realistic_time

    @property
    def time_lost(self) -> float:
        """Measured minus ideal."""
        return self.measured - self.expected_time

    def judgement(self) -> Judgement:
        """Its mean call judged against one call's roofline, and the chip's cache (a call
        whose bytes fit in it, timed back to back, may be cache-resident)."""
        return judge(self.roofline, self.measured / self.count, chip=self.chip)


@dataclass(slots=True)
class NotModelled:
    """Time in operators of one name the engine does not model, and why."""

    name: str
    reason: str
    count: int = 0
    measured: float = 0.0


@dataclass(frozen=True, slots=True)
class Kernels:
    """The device's view, when the trace has kernel events: their count and time, the part
    no operator in the trace launched, and the operators' own time on the CPU."""

    count: int
    time: float
    unattributed_time: float
    op_cpu_time: float


@dataclass(frozen=True, slots=True)
class TraceAnalysis:
    """The trace's units grouped by operator and shapes, and the whole."""

    modelled: tuple[Modelled, ...]  # by time lost, most first
    not_modelled: tuple[NotModelled, ...]  # by time, most first
    kernels: Kernels | None
    events: int
    whole: Roofline | None  # the modelled calls one after another, realized
    judgement: Judgement | None  # their measured time against `whole`
    skipped: int  # cpu_op events without usable times
    copies: HostCopies | None = None  # copies between host and device memory, apart
    breakdown: Breakdown | None = None  # the step in time, with kernel events
    measured: float = field(init=False)
    modelled_time: float = field(init=False)

    def __post_init__(self) -> None:
        modelled = sum(m.measured for m in self.modelled)
        not_modelled = sum(n.measured for n in self.not_modelled)
        copies = 0.0 if self.copies is None else self.copies.measured
        object.__setattr__(self, "modelled_time", modelled)
        object.__setattr__(self, "measured", modelled + not_modelled + copies)

    @property
    def not_modelled_time(self) -> float:
        """Measured time in operators the engine does not model."""
        return sum(n.measured for n in self.not_modelled)

    @property
    def not_modelled_share(self) -> float:
        """Its share of the measured time (0 when nothing was measured)."""
        return self.not_modelled_time / self.measured if self.measured > 0 else 0.0


def _parents(events: Sequence[Event]) -> list[int | None]:
    """Each event's enclosing event on its thread (events sorted by thread, start, longest
    first): the innermost one still open when it starts."""
    parents: list[int | None] = []
    open_: list[int] = []
    for i, e in enumerate(events):
        if open_ and events[open_[-1]].thread != e.thread:
            open_.clear()
        while open_ and e.start >= events[open_[-1]].start + events[open_[-1]].dur:
            open_.pop()
        parents.append(open_[-1] if open_ else None)
        open_.append(i)
    return parents


class _Model:
    """What the engine makes of each distinct key on a chip and stack, computed once."""

    def __init__(self, chip: Chip, software: Software, raw: Mapping[Key, Raw]) -> None:
        self.chip, self.software, self.raw = chip, software, raw
        self.known: dict[Key, Modelled | NotModelled] = {}
        self.rates = precise_rates(chip)  # its transcendental functions' evaluations a second

    def of(self, key: Key) -> Modelled | NotModelled:
        found = self.known.get(key)
        if found is None:
            found = self.known[key] = self._model(key)
        return found

    def _model(self, key: Key) -> Modelled | NotModelled:
        name = key[0]
        if len(self.known) >= MAX_DISTINCT:
            return NotModelled(name, OVER)
        op = op_of(name, *self.raw[key])
        if isinstance(op, str):
            return NotModelled(name, op)
        try:
            work = op_work(op)
            placed = with_evaluations(place(work, self.chip), special_evaluations(op), self.rates)
        except EngineError as error:
            message = str(getattr(error, "message", error))
            return NotModelled(name, UNKNOWN if "unknown operator" in message else message)
        realized = realize(placed, Realism(work.kind, self.software, kernels=1))
        return Modelled(op, work, placed, realized, self.chip)


def analyse(trace: TraceEvents, chip: Chip, software: Software = Software.EAGER) -> TraceAnalysis:
    """The trace's operators against `chip`'s roofline (docs/formulas.md#traces); NotATrace
    when no cpu_op event has shapes."""
    trace.require_ops()
    ops = sorted(trace.ops, key=lambda e: (e.thread, e.start, -e.dur))
    parents = _parents(ops)
    model = _Model(chip, software, trace.raw)
    results = [model.of(e.key) for e in ops]
    inside = [isinstance(r, Modelled) for r in results]  # a modelled op in its subtree
    children = [0.0] * len(ops)  # the time of each event's children
    for i in reversed(range(len(ops))):
        parent = parents[i]
        if parent is not None:
            inside[parent] = inside[parent] or inside[i]
            children[parent] += ops[i].dur
    owners = _owners(ops, parents, results, inside, children)
    kernels = _kernels(trace.device, ops, owners)
    cpu: dict[int, float] = defaultdict(float)
    for owner, time in owners.values():
        cpu[id(owner)] += time * US
    groups = {id(owner): owner for owner, _ in owners.values()}
    for group in groups.values():
        group.measured = cpu[id(group)] if kernels is None else kernels[1].get(id(group), 0.0)
    view = copies = None
    if kernels is not None:
        units = sum(cpu[id(g)] for g in groups.values() if isinstance(g, Modelled))
        view = replace(kernels[0], op_cpu_time=units)
        copies = host_copies(kernels[2], chip)
    result = _summary(
        groups.values(),
        view,
        events=trace.count,
        skipped=trace.skipped,
        software=software,
        chip=chip,
    )
    if view is None:
        return result
    return replace(result, copies=copies, breakdown=_breakdown(trace, result, view, copies))


def _rest(total: float, part: float) -> float:
    """`total` - `part`, two sums of the same kernels' durations where nothing is left: added
    in another order they differ by rounding, not by any kernel's time."""
    rest = total - part
    return rest if rest > total * 1e-9 else 0.0


def _breakdown(
    trace: TraceEvents, result: TraceAnalysis, kernels: Kernels, copies: HostCopies | None
) -> Breakdown | None:
    """The step split in time, its parts against their limits; None without timed events."""
    window = (
        (min(s for s, _ in trace.steps), max(e for _, e in trace.steps))
        if trace.steps
        else trace.span
    )
    if window is None:
        return None
    is_copy = [host_copy_of(e) is not None for e in trace.device]
    line = timeline(trace.device, is_copy, trace.calls, window, len(trace.steps))
    mapped = result.modelled_time
    copied = 0.0 if copies is None else copies.measured
    priced = None if copies is None or copies.unpriced else copies.expected_time
    return breakdown(
        line,
        lost=sum(max(0.0, m.time_lost) for m in result.modelled),
        mapped=mapped,
        unmapped=_rest(kernels.time, copied + mapped),
        copies=0.0 if copies is None else priced,
    )


def _owners(
    ops: Sequence[Event],
    parents: Sequence[int | None],
    results: Sequence[Modelled | NotModelled],
    inside: Sequence[bool],
    children: Sequence[float],
) -> dict[int, tuple[Modelled | NotModelled, float]]:
    """Each event's owner (the group its time counts in) and the CPU time it adds there: a
    unit's descendants belong to it and add nothing; an operator not modelled with a modelled
    one inside counts its own time outside its children, which are owners of their own."""
    owners: dict[int, tuple[Modelled | NotModelled, float]] = {}
    whole: list[bool] = []  # whether the event's owner takes its descendants too
    outside: dict[tuple[str, str], NotModelled] = {}
    for i, e in enumerate(ops):
        parent = parents[i]
        if parent is not None and whole[parent]:
            owners[i] = (owners[parent][0], 0.0)
            whole.append(True)
            continue
        result = results[i]
        if isinstance(result, NotModelled) and inside[i]:
            key = (result.name, result.reason)
            result = outside.setdefault(key, NotModelled(result.name, result.reason))
            owners[i] = (result, max(0.0, e.dur - children[i]))
            whole.append(False)
        else:
            owners[i] = (result, e.dur)
            whole.append(True)
        result.count += 1
    return owners


def _kernels(
    device: Iterable[Device],
    ops: Sequence[Event],
    owners: Mapping[int, tuple[Modelled | NotModelled, float]],
) -> tuple[Kernels, dict[int, float], list[tuple[Device, str | None]]] | None:
    """The device events' count and time, their time by the owner (by id) of the operator
    that launched each (its External id), and the copies between host and device memory
    apart, each with its owner's name; None when the trace has no device events."""
    by_id = {e.external_id: owners[i][0] for i, e in enumerate(ops) if e.external_id is not None}
    count, total, unattributed = 0, 0.0, 0.0
    times: dict[int, float] = defaultdict(float)
    copies: list[tuple[Device, str | None]] = []
    for event in device:
        count += 1
        total += event.dur * US
        launcher = by_id.get(event.external_id)
        if host_copy_of(event) is not None:
            copies.append((event, None if launcher is None else _name(launcher)))
        elif launcher is None:
            unattributed += event.dur * US
        else:
            times[id(launcher)] += event.dur * US
    if not count:
        return None
    return Kernels(count, total, unattributed, 0.0), times, copies


def _name(group: Modelled | NotModelled) -> str:
    return group.op.name if isinstance(group, Modelled) else group.name


def _times(roof: Roofline, count: int) -> Roofline:
    """`count` calls of `roof` one after another."""
    return replace(
        roof,
        flops=roof.flops * count,
        bytes=roof.bytes * count,
        compute_time=roof.compute_time * count,
        memory_time=roof.memory_time * count,
        expected_time=roof.expected_time * count,
        realistic_time=roof.realistic_time * count,
    )


def _summary(
    groups: Iterable[Modelled | NotModelled],
    kernels: Kernels | None,
    *,
    events: int,
    skipped: int,
    software: Software,
    chip: Chip,
) -> TraceAnalysis:
    """The groups that took time, sorted, and the modelled ones judged as a whole on `chip`
    (whose cache may explain a whole faster than its roofline: their bytes, each call's
    counted again, bound the working set from above)."""
    modelled: list[Modelled] = []
    merged: dict[tuple[str, str], NotModelled] = {}
    for g in groups:
        if g.measured <= 0:  # on a GPU: no kernel of its own
            continue
        if isinstance(g, Modelled):
            modelled.append(g)
            continue
        into = merged.setdefault((g.name, g.reason), NotModelled(g.name, g.reason))
        into.count += g.count
        into.measured += g.measured
    modelled.sort(key=lambda m: m.time_lost, reverse=True)
    whole = judgement = None
    if modelled:
        lead = max(modelled, key=lambda m: m.realistic_time)
        calls = sum(m.count for m in modelled)
        parts = in_sequence([_times(m.placed, m.count) for m in modelled])
        whole = realize(parts, Realism(lead.work.kind, software, kernels=calls))
        judgement = judge(whole, sum(m.measured for m in modelled), chip=chip)
    not_modelled = sorted(merged.values(), key=lambda n: n.measured, reverse=True)
    return TraceAnalysis(
        tuple(modelled), tuple(not_modelled), kernels, events, whole, judgement, skipped
    )
