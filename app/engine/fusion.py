"""A sequence of operators run as kernels: each its own, in fused groups, or the whole as one
(docs/formulas.md#fusion).

A kernel that runs several operators does each one's FLOPs at that operator's own peak and
moves only its external tensors: what it reads that none of its operators wrote, and what
it writes that none of its later operators reads. Its ideal time is
max(sum of the compute terms, external bytes / bandwidth); a sequence of kernels takes the
sum of theirs. Launch costs are the engine's fixed costs per kernel (realism.py).
On a CPU probed where it runs, `HostCosts` adds its transcendental functions' measured
rates and its fresh outputs' first touch (docs/formulas.md#the-local-chip); on an NVIDIA chip
those functions cost what CUDA's precise routines do (precise_functions.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine import prose
from app.engine.copies import Direction, place_copy, share_line, then_copies
from app.engine.errors import InvalidInput, Unsupported
from app.engine.hardware import Chip
from app.engine.op_copies import copy_work, host_copy
from app.engine.ops import (
    HostCosts,
    Op,
    is_view,
    op_work,
    special_evaluations,
)
from app.engine.precise_functions import evaluations_time, precise_rates, with_evaluations
from app.engine.realism import Realism, fixed_costs, realize
from app.engine.roofline import Bound, Roofline, Work, place, roofline_time
from app.engine.stacks import Kind, Software
from app.engine.traffic import external_bytes, fresh_bytes
from app.engine.units import ms_from_seconds

MAX_OPS = 4096


class AgainstFusion(StrEnum):
    """Where a measured time sits against the fused floor and the unfused time."""

    FASTER = "faster_than_fused"
    BETWEEN = "between_fused_and_unfused"
    SLOWER = "slower_than_unfused"


@dataclass(frozen=True, slots=True)
class OpCost:
    """One operator as its own kernel (`roofline` None for a view, which launches none), or
    a copy between host and device memory (`copy` its direction)."""

    op: Op
    work: Work
    roofline: Roofline | None
    copy: Direction | None = None

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
    copy_time: float = 0.0  # the host copies' ideal time, in every one of the times above

    def against_fusion(self, measured: float) -> AgainstFusion:
        """Where `measured` seconds sit between the fused floor and the unfused time."""
        if measured < self.fused_time:
            return AgainstFusion.FASTER
        if measured > self.unfused_time:
            return AgainstFusion.SLOWER
        return AgainstFusion.BETWEEN

    def fusion_advice(self, measured: float) -> str:
        """One sentence placing `measured` seconds against fusion; then, with host copies,
        the share of it they take at best."""
        copies = [str(i) for i, cost in enumerate(self.ops) if cost.copy]
        return self._against(measured) + (
            " " + share_line(self.copy_time, measured, "ops " + ", ".join(copies)) if copies else ""
        )

    def _against(self, measured: float) -> str:
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
        fusing = (
            f"; fused, the ops would take {fused}" if self.fused_time < self.unfused_time else ""
        )
        if measured <= self.roofline.realistic_high:
            # real kernels run slower than their roofline: within what published runs of these
            # ops take, nothing beyond the kernels is needed to explain the time
            return (
                f"Slower than each op as its own kernel at its roofline ({unfused}), as real "
                f"kernels are: published runs of such work take up to "
                f"{_ms(self.roofline.realistic_high)}{fusing}."
            )
        return (
            f"Slower than each op as its own kernel with its launch ({unfused}) and than "
            f"published runs of such work ({_ms(self.roofline.realistic_high)}): look beyond the "
            f"kernels (synchronisation, host work, copies){fusing}."
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


def _uses(ops: Iterable[Op]) -> Counter[str]:
    """How many of `ops` use each id."""
    return Counter(
        id_ for op in ops for id_ in {t.id for t in (*op.inputs, *op.outputs) if t.id is not None}
    )


def _cost(index: int, op: Op, chip: Chip, host: HostCosts | None) -> OpCost:
    where = f"ops.{index}"
    # without a host link (unified memory) a copy to the host is one within memory
    copy = None if chip.host_bandwidth is None else host_copy(op, where)
    work = op_work(op, where) if copy is None else copy_work(op)
    if is_view(op):
        return OpCost(op, work, None)
    try:  # a host copy's memory is pageable unless it is non_blocking (docs/formulas.md#copies)
        placed = (
            place(work, chip)
            if copy is None
            else place_copy(work.bytes, copy, chip, pinned=op.non_blocking)
        )
    except Unsupported as error:
        raise Unsupported(where, f"{op.name}: {error.message}") from error
    if copy is not None:
        return OpCost(op, work, placed, copy)
    evaluations = special_evaluations(op)
    if host is None:
        return OpCost(op, work, with_evaluations(placed, evaluations, precise_rates(chip)))
    extra = evaluations_time(evaluations, host.special_per_s, placed.peak.flops_per_s)
    spent = replace(placed, compute_time=placed.compute_time + extra)
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
    chip = chip.run_by(software)  # the fastest accumulate mode the stack uses on it
    costs = tuple(_cost(i, op, chip, host) for i, op in enumerate(ops))
    copies = [r for c in costs if c.copy and (r := c.roofline)]
    kernels = []
    uses = _uses(ops)
    for indices in kernel_groups(len(ops), groups):
        if moving := [i for i in indices if costs[i].copy]:
            if len(indices) > 1:
                raise InvalidInput(
                    "groups",
                    f"op {moving[0]} copies between host and device: a copy fuses with nothing",
                )
            continue
        parts = [r for i in indices if (r := costs[i].roofline) is not None]
        if len(parts) == 1:  # an op alone: its own tensors
            kernels.append(parts[0])
        elif parts:
            group = [ops[i] for i in indices]
            outside = {id_ for id_, n in _uses(group).items() if uses[id_] > n}
            traffic = external_bytes(group, outside)
            kernels.append(_kernel(parts, traffic, chip, _first_touch(group, host, outside)))
    if not kernels and not copies:
        raise InvalidInput("ops", "the ops are all views: they launch no kernel to time")
    alone = [c for c in costs if c.roofline is not None and not c.copy]
    compute = [op for op, c in zip(ops, costs, strict=True) if not c.copy]
    fused_bytes = external_bytes(compute)
    link = sum(r.expected_time for r in copies)
    if not alone:  # copies only
        roof, kind, fused = then_copies(None, copies), Kind.COPY, link
    else:
        parts = [r for c in alone if (r := c.roofline) is not None]
        whole = _kernel(parts, fused_bytes, chip, _first_touch(compute, host))
        kind = max(alone, key=lambda c: c.roofline.realistic_time if c.roofline else 0.0).work.kind
        realism = Realism(kind, software, kernels=len(kernels))
        roof = then_copies(realize(in_sequence(kernels), realism), copies)
        fused = launched(whole.expected_time, 1, software) + link
    return OpsEstimate(
        ops=costs,
        roofline=roof,
        kind=kind,
        kernels=len(kernels) + len(copies),
        unfused_kernels=len(alone) + len(copies),
        unfused_time=launched(sum(c.expected_time for c in alone), len(alone), software) + link,
        fused_time=fused,
        fused_bytes=fused_bytes,
        launch_overhead=launched(0.0, len(kernels), software),
        copy_time=link,
    )
