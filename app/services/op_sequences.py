"""The `ops` workload: its operators as the engine's, and what its answer adds (each op alone,
the unfused and fused times, the launch floor, and where a measured time sits between them)."""

from __future__ import annotations

from app import formatting as fmt
from app.engine import Chip, Software
from app.engine.fusion import OpsEstimate, estimate_ops
from app.engine.ops import Op, Tensor
from app.schemas.answers import OpOut
from app.schemas.ops_bodies import OpsWorkload, TensorIn


def _tensors(given: list[TensorIn]) -> tuple[Tensor, ...]:
    return tuple(Tensor(tuple(t.shape), t.dtype, t.id, t.device) for t in given)


def estimate_of(workload: OpsWorkload, chip: Chip, stack: Software) -> OpsEstimate:
    """The workload's operators on `chip`, run on `stack`, as grouped."""
    ops = [
        Op(
            o.name,
            _tensors(o.inputs),
            _tensors(o.outputs),
            o.flops,
            o.bytes,
            o.unit,
            o.causal,
            o.non_blocking,
        )
        for o in workload.ops
    ]
    return estimate_ops(ops, chip, stack, workload.groups)


def ops_fields(result: OpsEstimate) -> dict[str, object]:
    """The fields an `ops` answer adds."""
    return {
        "ops": [
            OpOut(
                name=cost.op.name,
                flops=cost.work.flops,
                bytes=cost.work.bytes,
                expected_time_s=cost.expected_time,
                bound=cost.bound,
            )
            for cost in result.ops
        ],
        "unfused_time_s": result.unfused_time,
        "fused_time_s": result.fused_time,
        "launch_overhead_s": result.launch_overhead,
    }


def ops_lines(result: OpsEstimate) -> list[str]:
    """The explanation's sentences on the kernels, before the roofline's."""
    views = len(result.ops) - result.unfused_kernels
    return [
        f"{len(result.ops)} ops: {result.unfused_kernels} kernels each on its own"
        + (f" ({views} views launch none)" if views else "")
        + f", {result.kernels} as grouped; each op's FLOPs at its own peak.",
        f"Each op its own kernel: {fmt.seconds(result.unfused_time)} with its launch; the whole "
        f"as one kernel moving {fmt.bytes_(result.fused_bytes)}: "
        f"{fmt.seconds(result.fused_time)}; launching the {result.kernels} kernels alone takes "
        f"{fmt.seconds(result.launch_overhead)}.",
    ]
