"""Copy operators (aten::copy_, aten::_to_copy) that move a tensor between host and device
memory: the tensors' devices give the direction, and the copy is priced on the host link
(copies.py), never as a kernel (docs/formulas.md#copies)."""

from __future__ import annotations

from app.engine.copies import Direction
from app.engine.errors import InvalidInput
from app.engine.ops import Op, Tensor, base_name
from app.engine.roofline import Work
from app.engine.stacks import Kind
from app.engine.units import Unit


def _on_host(tensor: Tensor) -> bool:
    return (tensor.device or "").split(":", 1)[0].lower() == "cpu"


def _ends(op: Op) -> tuple[Tensor, Tensor] | None:
    """(source, destination) of a copy operator: copy_(dst, src), or _to_copy(src) -> dst."""
    short = base_name(op.name)
    if short == "copy" and len(op.inputs) >= 2:
        return op.inputs[1], op.inputs[0]
    if short == "_to_copy" and op.inputs and op.outputs:
        return op.inputs[0], op.outputs[0]
    return None


def host_copy(op: Op, field: str = "ops") -> Direction | None:
    """The direction of a copy between host and device memory, both tensors' devices given:
    h2d from "cpu" to another device, d2h back. None for any other operator, one given its
    FLOPs or bytes, or a copy whose devices are not both given or are the same. A copy
    between two devices, neither the host, is refused (not modelled)."""
    ends = None if op.flops is not None or op.bytes is not None else _ends(op)
    if ends is None or ends[0].device is None or ends[1].device is None:
        return None
    src, dst = ends
    if _on_host(src) != _on_host(dst):
        return Direction.H2D if _on_host(src) else Direction.D2H
    if not _on_host(src) and src.device != dst.device:
        raise InvalidInput(
            field,
            f"{op.name} copies from {src.device} to {dst.device}: copies between two devices "
            "are not modelled; give its flops and bytes",
        )
    return None


def copy_work(op: Op) -> Work:
    """A host copy's work: no FLOPs, its source's bytes across the link."""
    ends = _ends(op)
    if ends is None:
        raise InvalidInput("ops", f"{op.name} is not a copy")
    return Work(0.0, ends[0].bytes, ends[0].dtype, Unit.VECTOR, Kind.COPY)
