"""The bytes a sequence of operators run as one kernel moves: its external tensors
(docs/formulas.md#fusion)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence

from app.engine.ops import HostCosts, Op, Tensor, is_in_place, is_view
from app.engine.units import Dtype

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
