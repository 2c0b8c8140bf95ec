"""What a function's aten operators add up to (docs/formulas.md#measuring-a-function).

Standard library and the engine only: the operators come recorded (torch_trace.py). Each is
the engine's operator (app/engine/ops.py) with its tensors, named by id across operators so
that the fusion analysis matches them. From the list: the FLOPs, the bytes moved if every
operator is its own kernel (the unfused bound) and if the whole were one kernel (the fused
floor: its external inputs and outputs), the kernel launches, the copies between devices and
the synchronisations, each with its operator's index and the user's source line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from app.engine import EngineError, Unit
from app.engine.kernels import POINTWISE_FLOPS
from app.engine.ops import (
    ATTENTION,
    COPIES,
    MATMULS,
    REDUCTIONS,
    ROW_OPS,
    VIEWS,
    Op,
    Tensor,
    base_name,
    is_view,
    op_work,
)
from app.engine.traffic import external_bytes
from app.measure.torch_dtypes import counted_as

MAX_TENSORS = 64  # per side of an operator, as the service takes them (app/schemas/ops_bodies.py)
KNOWN = frozenset({*VIEWS, *COPIES, *REDUCTIONS, *ROW_OPS, *ATTENTION, *MATMULS, *POINTWISE_FLOPS})
# what a compiler fuses into one kernel with its neighbours (Counts.compiled_groups)
FUSIBLE = frozenset({*COPIES, *REDUCTIONS, *ROW_OPS, *POINTWISE_FLOPS})
# operators that allocate and launch nothing: left out of the list
ALLOCATIONS = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize", "set"}
)
# operators that make the host wait for the device: a scalar read (.item(), float(t), `if t:`)
# and the operators whose output size depends on the data
SYNCS = frozenset(
    {"_local_scalar_dense", "nonzero", "masked_select", "_unique2", "unique_consecutive"}
    | {"unique_dim", "_unique", "nonzero_static"}
)


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """A tensor as recorded: PyTorch's dtype name, its device and its id across operators."""

    shape: tuple[int, ...]
    dtype: str
    device: str
    id: str
    nbytes: int


@dataclass(frozen=True, slots=True)
class RecordedOp:
    """One aten operator as the function ran it. `flops` is PyTorch's count for it
    (FlopCounterMode's formula, where it has one); `where` the user's source line; `causal`
    an attention operator's `is_causal` (PyTorch's count ignores it: a causal attention
    computes half its score pairs, docs/formulas.md#kernels)."""

    name: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    flops: float | None = None
    where: str | None = None
    causal: bool = False

    @property
    def short(self) -> str:
        """'aten::add_.Tensor' -> 'add'."""
        return base_name(self.name)


@dataclass(frozen=True, slots=True)
class Event:
    """A copy between devices or a synchronisation, at operator `index`."""

    index: int
    op: str
    what: str  # "sync", or the copy's direction "cpu -> cuda:0"
    bytes: float
    where: str | None


@dataclass(frozen=True, slots=True)
class Counts:
    """The recorded operators as the engine's, and what they add up to."""

    ops: tuple[Op, ...]
    recorded: tuple[RecordedOp, ...]
    opaque: tuple[int, ...]  # indices sent with their FLOPs and bytes (unknown to the engine)
    flops: float  # PyTorch's count: its FlopCounterMode formulas summed over the operators
    engine_flops: float  # the engine's: matmuls and every pointwise, norm and reduction op
    unfused_bytes: float
    fused_bytes: float
    launches: int
    views: int
    copies: tuple[Event, ...]
    syncs: tuple[Event, ...]

    @property
    def on_cpu(self) -> bool:
        """Whether every recorded tensor is on the CPU: no device, so no kernel launches; the
        fixed cost of each op is the framework's dispatch of it."""
        found = {t.device for op in self.recorded for t in (*op.inputs, *op.outputs)}
        return found == {"cpu"}

    def workload(self, *, compiled: bool = False) -> dict[str, Any]:
        """The `ops` workload of POST /check (docs/api.md#operators); `compiled`: with the
        kernels a compiler fuses them into as its `groups` (`compiled_groups`)."""
        body: dict[str, Any] = {"kind": "ops", "ops": [op_json(op) for op in self.ops]}
        if compiled and (groups := self.compiled_groups()):
            body["groups"] = groups
        return body

    def compiled_groups(self) -> list[list[int]]:
        """The kernels a compiler (torch.compile's Inductor) fuses the operators into: each run
        of pointwise, row and reduction operators and copies within a device that reads what
        the run before it wrote, through views, which launch nothing. Matrix products and
        attention (library kernels), operators the engine does not model, copies between
        devices and synchronisations stay alone and end a run. Only runs of two or more."""
        moving = {e.index for e in (*self.copies, *self.syncs)}
        groups: list[list[int]] = []
        run: list[int] = []
        written: set[str] = set()  # the ids the run wrote, and views of them
        for index, op in enumerate(self.ops):
            reads = {t.id for t in op.inputs if t.id is not None}
            writes = {t.id for t in op.outputs if t.id is not None}
            if is_view(op):
                if reads & written:
                    written |= writes
                continue
            if index in moving or index in self.opaque or base_name(op.name) not in FUSIBLE:
                groups.append(run)
                run, written = [], set()
                continue
            if run and not reads & written:
                groups.append(run)
                run, written = [], set()
            run.append(index)
            written |= writes
        groups.append(run)
        return [group for group in groups if len(group) > 1]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (without the operators, which `workload` gives)."""
        fields = {k: v for k, v in asdict(self).items() if k not in ("ops", "recorded")}
        fields["where"] = [op.where for op in self.recorded]
        return fields


def _tensor_json(tensor: Tensor) -> dict[str, Any]:
    return {
        "shape": list(tensor.shape),
        "dtype": str(tensor.dtype),
        "id": tensor.id,
        "device": tensor.device,
    }


def op_json(op: Op) -> dict[str, Any]:
    """One operator of the `ops` workload."""
    body: dict[str, Any] = {
        "name": op.name,
        "inputs": [_tensor_json(t) for t in op.inputs],
        "outputs": [_tensor_json(t) for t in op.outputs],
    }
    for field in ("flops", "bytes", "unit"):
        if (value := getattr(op, field)) is not None:
            body[field] = str(value) if field == "unit" else value
    if op.causal:
        body["causal"] = True
    return body


def _engine_tensors(tensors: Sequence[TensorInfo]) -> tuple[Tensor, ...]:
    out = []
    for info in tensors:
        if info.nbytes:  # an empty tensor moves nothing
            dtype, shape = counted_as(info.dtype, info.shape)
            out.append(Tensor(shape, dtype, info.id, info.device))
    return tuple(out)


def _valid(op: Op) -> bool:
    if len(op.inputs) > MAX_TENSORS or len(op.outputs) > MAX_TENSORS:
        return False
    try:
        op_work(op)
    except EngineError:
        return False
    return True


def _opaque(recorded: RecordedOp, inputs: tuple[Tensor, ...], outputs: tuple[Tensor, ...]) -> Op:
    """The operator with its FLOPs (PyTorch's, else 0) and bytes (its tensors') given, under a
    name the engine does not take for one of its own."""
    name = recorded.name
    if recorded.short in KNOWN:
        head, dot, overload = name.partition(".")
        name = f"{head}[opaque]{dot}{overload}"

    def fits(tensor: Tensor) -> bool:
        return _valid(Op("aten::clone", (tensor,), (tensor,)))

    return Op(
        name,
        tuple(t for t in inputs if fits(t))[:MAX_TENSORS],
        tuple(t for t in outputs if fits(t))[:MAX_TENSORS],
        flops=float(recorded.flops or 0.0),
        bytes=float(sum(t.nbytes for t in (*recorded.inputs, *recorded.outputs))),
        unit=Unit.MATRIX if recorded.flops else Unit.VECTOR,
    )


def engine_op(recorded: RecordedOp) -> tuple[Op, bool]:
    """The engine's operator for a recorded one, and whether it is opaque (given its FLOPs and
    bytes because the engine has no formula for it or its tensors)."""
    inputs, outputs = _engine_tensors(recorded.inputs), _engine_tensors(recorded.outputs)
    op = Op(recorded.name, inputs, outputs, causal=recorded.causal)
    if recorded.short in KNOWN and _valid(op):
        return op, False
    return _opaque(recorded, inputs, outputs), True


def _copy_event(index: int, op: RecordedOp) -> Event | None:
    """A copy between devices: copy_(dst, src), or _to_copy(src) -> dst."""
    if op.short not in COPIES or len({t.device for t in (*op.inputs, *op.outputs)}) < 2:
        return None
    if op.short == "copy" and len(op.inputs) >= 2:
        dst, src = op.inputs[0], op.inputs[1]
    elif op.inputs and op.outputs:
        src, dst = op.inputs[0], op.outputs[0]
    else:
        return None
    return Event(index, op.name, f"{src.device} -> {dst.device}", float(src.nbytes), op.where)


def count(recorded: Sequence[RecordedOp], total_flops: float) -> Counts:
    """What the recorded operators add up to (module docstring); `total_flops` is PyTorch's
    FlopCounterMode count of the same run."""
    ops: list[Op] = []
    opaque, copies, syncs = [], [], []
    for index, rec in enumerate(recorded):
        op, is_opaque = engine_op(rec)
        ops.append(op)
        if is_opaque:
            opaque.append(index)
        if (copy := _copy_event(index, rec)) is not None:
            copies.append(copy)
            if copy.what.endswith("cpu"):  # a blocking copy to the host waits for the device
                syncs.append(Event(index, rec.name, "sync", copy.bytes, rec.where))
        elif rec.short in SYNCS:
            nbytes = float(sum(t.nbytes for t in rec.inputs[:1]))
            syncs.append(Event(index, rec.name, "sync", nbytes, rec.where))
    works = [op_work(op) for op in ops]
    views = sum(1 for op in ops if is_view(op))
    special = {e.index for e in (*copies, *syncs)}
    return Counts(
        ops=tuple(ops),
        recorded=tuple(recorded),
        opaque=tuple(opaque),
        flops=float(total_flops),
        engine_flops=sum(w.flops for w in works),
        unfused_bytes=sum(w.bytes for w in works),
        fused_bytes=external_bytes(ops) if ops else 0.0,
        launches=sum(1 for i, op in enumerate(ops) if not is_view(op) and i not in special),
        views=views,
        copies=tuple(copies),
        syncs=tuple(syncs),
    )
