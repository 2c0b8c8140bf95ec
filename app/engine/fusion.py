"""A sequence of operators run as kernels: each its own, in fused groups, or the whole as one
(docs/formulas.md#fusion).

A kernel that runs several operators does each one's FLOPs at that operator's own peak and
moves only its external tensors: what it reads that none of its operators wrote, and what
it writes that none of its later operators reads. Its ideal time is
max(sum of the compute terms, external bytes / bandwidth); a sequence of kernels takes the
sum of theirs. Launch costs are the engine's fixed costs per kernel (realism.py).
On a CPU probed where it runs, `HostCosts` adds its transcendental functions' measured
rates and its fresh outputs' first touch (docs/formulas.md#the-local-chip).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine import prose
from app.engine.errors import InvalidInput, Unsupported
from app.engine.hardware import Chip
from app.engine.ops import (
    HostCosts,
    Op,
    Tensor,
    is_in_place,
    is_view,
    op_work,
    special_evaluations,
)
from app.engine.realism import Realism, fixed_costs, realize
from app.engine.roofline import Bound, Roofline, Work, place, roofline_time
from app.engine.stacks import Kind, Software
from app.engine.units import Dtype, ms_from_seconds

MAX_OPS = 4096


class AgainstFusion(StrEnum):
    """Where a measured time sits against the fused floor and the unfused time."""

    FASTER = "faster_than_fused"
    BETWEEN = "between_fused_and_unfused"
    SLOWER = "slower_than_unfused"


@dataclass(frozen=True, slots=True)
class OpCost:
    """One operator as its own kernel (`roofline` None for a view, which launches none)."""

    op: Op
    work: Work
    roofline: Roofline | None

    @property
    def expected_time(self) -> float:
        """Its ideal roofline time alone (0 for a view)."""
        return 0.0 if self.roofline is None else self.roofline.expected_time

    @property
    def bound(self) -> Bound | None:
        """Its roof alone: compute or memory (None for a view)."""
        return None if self.roofline is None else self.roofline.roof


@dataclass(frozen=True, slots=True)
class OpsEstimate:
    """A sequence of operators on a chip: as grouped (`roofline`, realized on the stack), each
    as its own kernel with launch costs (`unfused_time`), and the whole as one kernel with one
    launch (`fused_time`). `launch_overhead` is the fixed cost of launching the grouped
    kernels with nothing to do: no run of them is faster."""

    ops: tuple[OpCost, ...]
    roofline: Roofline
    kind: Kind  # whose published runs calibrate the realistic time
    kernels: int
    unfused_kernels: int
    unfused_time: float
    fused_time: float
    fused_bytes: float
    launch_overhead: float

    def against_fusion(self, measured: float) -> AgainstFusion:
        """Where `measured` seconds sit between the fused floor and the unfused time."""
        if measured < self.fused_time:
            return AgainstFusion.FASTER
        if measured > self.unfused_time:
            return AgainstFusion.SLOWER
        return AgainstFusion.BETWEEN

    def fusion_advice(self, measured: float) -> str:
        """One sentence placing `measured` seconds against fusion."""
        fused, unfused = _ms(self.fused_time), _ms(self.unfused_time)
        place_ = self.against_fusion(measured)
        if place_ is AgainstFusion.FASTER:
            return (
                f"Faster than the ops fused into one kernel ({fused}): the measurement, or the "
                "ops and shapes given, are not what ran."
            )
        if place_ is AgainstFusion.BETWEEN and measured < self.roofline.expected_time:
            return (
                f"Faster than the ops as grouped allow ({_ms(self.roofline.expected_time)}), "
                f"but not than the whole fused ({fused}): more of them ran fused than given "
                "(a compiler, CUDA graphs)."
            )
        if place_ is AgainstFusion.BETWEEN:
            return (
                f"Between the fused floor ({fused}) and each op as its own kernel ({unfused}): "
                f"fusing the ops into one kernel would reach {fused}."
            )
        return (
            f"Slower than each op as its own kernel with its launch ({unfused}): look beyond the "
            f"kernels (synchronisation, host work, copies); fused, the ops would take {fused}."
        )


def _ms(seconds: float) -> str:
    return f"{prose.number(ms_from_seconds(seconds), 4)} ms"


def kernel_groups(count: int, groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """The kernels as lists of operator indices: each group, and each operator in no group
    alone, ordered by their first operator; each group's operators in their order."""
    seen: set[int] = set()
    for g, group in enumerate(groups):
        if not group:
            raise InvalidInput(f"groups.{g}", "a group needs at least one op index")
        for index in group:
            if not 0 <= index < count:
                raise InvalidInput(f"groups.{g}", f"op index {index} is not in 0 to {count - 1}")
            if index in seen:
                raise InvalidInput(f"groups.{g}", f"op {index} is in more than one group")
            seen.add(index)
    kernels = [sorted(group) for group in groups]
    kernels += [[index] for index in range(count) if index not in seen]
    return sorted(kernels)


_Key = tuple[tuple[int, ...], Dtype]  # an anonymous tensor's shape and dtype


def _shape(tensor: Tensor) -> _Key:
    return tensor.shape, tensor.dtype


class _Traffic:
    """The bytes one kernel moves, op by op. Each tensor has a name: its id, or for one
    without, a name of its own (the earlier output it is taken for, else a new one)."""

    def __init__(self) -> None:
        self.read = 0.0  # bytes read from memory, and opaque operators' bytes
        self.size: dict[str, float] = {}  # written tensors: bytes of the last write
        self.anonymous: dict[_Key, list[str]] = {}  # outputs without an id, not yet read
        self.on_chip: set[str] = set()  # read or written already
        self.loaded: set[str] = set()  # read from memory: they live outside the kernel
        self.unread: set[str] = set()  # written, not read since
        self.fresh: set[str] = set()  # written into new storage (not read here before)
        self._names = 0

    def _new(self) -> str:
        self._names += 1
        return f"#{self._names}"

    def available(self, inputs: Sequence[Tensor]) -> bool:
        """Whether all of `inputs` are on chip."""
        wanted = Counter(_shape(x) for x in inputs if x.id is None)
        return all(x.id in self.on_chip for x in inputs if x.id is not None) and all(
            len(self.anonymous.get(key, ())) >= n for key, n in wanted.items()
        )

    def take(self, tensor: Tensor) -> str:
        """Read `tensor`: on chip if it is there, else from memory. Its name."""
        name = tensor.id
        if name is None and (waiting := self.anonymous.get(_shape(tensor))):
            name = waiting.pop()  # the latest such output
        elif name is None:
            name = self._new()
        if name in self.on_chip:
            self.unread.discard(name)
        else:
            self.read += tensor.bytes
            self.on_chip.add(name)
            self.loaded.add(name)
        return name

    def give(self, tensor: Tensor, storage: str | None = None) -> None:
        """Write `tensor` (into `storage`, the tensor an in-place operator mutates)."""
        name = tensor.id or storage or self._new()
        if name not in self.on_chip:
            self.fresh.add(name)
        if tensor.id is None:
            self.anonymous.setdefault(_shape(tensor), []).append(name)
        self.size[name] = tensor.bytes
        self.on_chip.add(name)
        self.unread.add(name)

    def written(self, outside: Collection[str]) -> float:
        """Bytes written out: each tensor written here that no later op here reads, or that
        lives outside the kernel (read from memory here, or used by ops outside it)."""
        return sum(self.size[name] for name in self._kept(outside))

    def written_fresh(self, outside: Collection[str], at_least: float) -> float:
        """Bytes written out into new storage, by tensors of at least `at_least` bytes."""
        return sum(
            size
            for name in self._kept(outside) & self.fresh
            if (size := self.size[name]) >= at_least
        )

    def _kept(self, outside: Collection[str]) -> set[str]:
        return (self.unread | self.loaded | set(outside)) & self.size.keys()


def external_bytes(ops: Sequence[Op], outside: Collection[str] = frozenset()) -> float:
    """Bytes of `ops` run in order as one kernel (docs/formulas.md#fusion): each input none of
    them wrote, read once; each tensor written that no later one of them reads, that was read
    from memory (mutated in place: its storage holds the new value), or whose id is in
    `outside` (used by ops outside the kernel). A tensor without an id is taken for the latest
    unconsumed earlier output (without an id) of the same shape and dtype; an in-place
    operator's first output, without an id, is its first input. An operator given its bytes
    is opaque: they count in full, and its tensors take no part. A view of tensors on chip is
    on chip too; of tensors in memory, it is read by its users."""
    traffic = _traffic(ops)
    return traffic.read + traffic.written(outside)


def fresh_bytes(
    ops: Sequence[Op], host: HostCosts, outside: Collection[str] = frozenset()
) -> float:
    """Bytes `ops` as one kernel write out (external_bytes) into new storage (not mutated in
    place), by tensors of at least `host.fresh_from_bytes`: what pays its first touch."""
    return _traffic(ops).written_fresh(outside, host.fresh_from_bytes)


def _traffic(ops: Sequence[Op]) -> _Traffic:
    """The tensors `ops` read and write, run in order as one kernel (external_bytes)."""
    traffic = _Traffic()
    for op in ops:
        if op.bytes is not None:
            traffic.read += op.bytes
        elif not is_view(op):
            names = [traffic.take(x) for x in op.inputs]
            storage = names[0] if names and is_in_place(op.name) else None
            for i, tensor in enumerate(op.outputs):
                traffic.give(tensor, storage if i == 0 else None)
        elif traffic.available(op.inputs):
            for tensor in op.inputs:
                traffic.take(tensor)
            for tensor in op.outputs:
                traffic.give(tensor)
    return traffic


def _uses(ops: Iterable[Op]) -> Counter[str]:
    """How many of `ops` use each id."""
    return Counter(
        id_ for op in ops for id_ in {t.id for t in (*op.inputs, *op.outputs) if t.id is not None}
    )


def _cost(index: int, op: Op, chip: Chip, host: HostCosts | None) -> OpCost:
    where = f"ops.{index}"
    work = op_work(op, where)
    if is_view(op):
        return OpCost(op, work, None)
    try:
        placed = place(work, chip)
    except Unsupported as error:
        raise Unsupported(where, f"{op.name}: {error.message}") from error
    if host is None:
        return OpCost(op, work, placed)
    # each transcendental evaluation: one of the FLOPs at the peak, now at its measured rate
    special = sum(
        count / rate - count / placed.peak.flops_per_s
        for name, count in special_evaluations(op).items()
        if (rate := host.special_per_s.get(name))
    )
    spent = replace(placed, compute_time=placed.compute_time + special)
    return OpCost(op, work, _kernel([spent], work.bytes, chip, _first_touch([op], host)))


def _first_touch(ops: Sequence[Op], host: HostCosts | None, outside: Collection[str] = ()) -> float:
    """Seconds the fresh outputs of `ops` as one kernel spend in their first touch."""
    return 0.0 if host is None else fresh_bytes(ops, host, outside) * host.first_touch_s_per_byte


def _lead(parts: Sequence[Roofline]) -> Roofline:
    """The part with the longest compute term: its peak is the one shown for the whole."""
    return max(parts, key=lambda r: r.compute_time)


def _sustained_compute(parts: Sequence[Roofline]) -> float:
    """The compute fraction the parts reach together: their compute terms over their
    sustained compute terms (each at its own fraction)."""
    compute = sum(r.compute_time for r in parts)
    sustained = sum(r.compute_time / r.sustained_compute for r in parts)
    return compute / sustained if sustained else _lead(parts).sustained_compute


def _kernel(
    parts: Sequence[Roofline], traffic: float, chip: Chip, first_touch: float = 0.0
) -> Roofline:
    """Operators run as one kernel moving `traffic` bytes: the compute terms add (each at its
    own peak and sustained fraction), the memory term is the kernel's own (+ `first_touch`)."""
    compute = sum(r.compute_time for r in parts)
    memory = traffic / chip.memory_bandwidth + first_touch
    sustained = _sustained_compute(parts)
    realistic = roofline_time(compute / sustained, memory / chip.sustained_memory)
    return Roofline(
        flops=sum(r.flops for r in parts),
        bytes=traffic,
        peak=_lead(parts).peak,
        memory_bandwidth=chip.memory_bandwidth,
        compute_time=compute,
        memory_time=memory,
        communication_time=0.0,
        expected_time=roofline_time(compute, memory),
        realistic_time=realistic,
        sustained_compute=sustained,
        sustained_memory=chip.sustained_memory,
        sustained_time=realistic,
        realistic_low=realistic,
        realistic_high=realistic,
    )


def in_sequence(kernels: Sequence[Roofline]) -> Roofline:
    """Kernels run one after another: every term adds."""
    realistic = sum(r.realistic_time for r in kernels)
    return Roofline(
        flops=sum(r.flops for r in kernels),
        bytes=sum(r.bytes for r in kernels),
        peak=_lead(kernels).peak,
        memory_bandwidth=kernels[0].memory_bandwidth,
        compute_time=sum(r.compute_time for r in kernels),
        memory_time=sum(r.memory_time for r in kernels),
        communication_time=0.0,
        expected_time=sum(r.expected_time for r in kernels),
        realistic_time=realistic,
        sustained_compute=_sustained_compute(kernels),
        sustained_memory=kernels[0].sustained_memory,
        sustained_time=realistic,
        realistic_low=realistic,
        realistic_high=realistic,
    )


def launched(busy: float, kernels: int, software: Software) -> float:
    """`busy` seconds of device work in `kernels` kernels, with their launch costs (one
    framework step: realism.py's fixed costs)."""
    return busy + fixed_costs(software, kernels=kernels, steps=1).on_top_of(busy)


def estimate_ops(
    ops: Sequence[Op],
    chip: Chip,
    software: Software = Software.TYPICAL,
    groups: Sequence[Sequence[int]] = (),
    host: HostCosts | None = None,
) -> OpsEstimate:
    """The operators on `chip`: as grouped, unfused and fused (docs/formulas.md#fusion), with
    a CPU's `host` costs where measured (docs/formulas.md#the-local-chip)."""
    if not 1 <= len(ops) <= MAX_OPS:
        raise InvalidInput("ops", f"give 1 to {MAX_OPS} ops, got {len(ops)}")
    costs = tuple(_cost(i, op, chip, host) for i, op in enumerate(ops))
    kernels = []
    uses = _uses(ops)
    for indices in kernel_groups(len(ops), groups):
        parts = [r for i in indices if (r := costs[i].roofline) is not None]
        if len(parts) == 1:  # an op alone: its own tensors
            kernels.append(parts[0])
        elif parts:
            group = [ops[i] for i in indices]
            outside = {id_ for id_, n in _uses(group).items() if uses[id_] > n}
            traffic = external_bytes(group, outside)
            kernels.append(_kernel(parts, traffic, chip, _first_touch(group, host, outside)))
    if not kernels:
        raise InvalidInput("ops", "the ops are all views: they launch no kernel to time")
    alone = [c for c in costs if c.roofline is not None]
    fused_bytes = external_bytes(ops)
    whole = _kernel(
        [r for c in alone if (r := c.roofline) is not None],
        fused_bytes,
        chip,
        _first_touch(ops, host),
    )
    kind = max(alone, key=lambda c: c.roofline.realistic_time if c.roofline else 0.0).work.kind
    roof = realize(in_sequence(kernels), Realism(kind, software, kernels=len(kernels)))
    return OpsEstimate(
        ops=costs,
        roofline=roof,
        kind=kind,
        kernels=len(kernels),
        unfused_kernels=len(alone),
        unfused_time=launched(sum(c.expected_time for c in alone), len(alone), software),
        fused_time=launched(whole.expected_time, 1, software),
        fused_bytes=fused_bytes,
        launch_overhead=launched(0.0, len(kernels), software),
    )
