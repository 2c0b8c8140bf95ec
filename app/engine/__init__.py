"""The cost engine: pure, typed, standard library only (no web, database or I/O).

Inputs are frozen dataclasses; outputs are numbers in SI units (seconds, bytes, FLOPs).
The public API below is pinned by tests/engine/test_public_api.py.
"""

from app.engine.architecture import (
    MLA,
    MLP,
    Architecture,
    Attention,
    MoE,
    ParamCounts,
    param_counts,
)
from app.engine.batch import LimitedBy, OptimalBatch, SweepPoint, optimal_batch
from app.engine.errors import EngineError, InvalidArchitecture, InvalidInput, Unsupported
from app.engine.fit import MemoryFit, memory_fit
from app.engine.hardware import Chip, Peak, ridge_intensity
from app.engine.hf_config import architecture_from_config
from app.engine.kernels import (
    AttentionKernel,
    RowOp,
    attention,
    custom,
    elementwise,
    matmul,
    memcopy,
    pointwise_flops,
    row_op,
    saxpy,
)
from app.engine.memory import MemoryBreakdown
from app.engine.published import Fitted, fitted
from app.engine.realism import Realism, place_kernel, realize, step_kernels
from app.engine.roofline import Bound, Roofline, Work, place
from app.engine.stacks import Backend, Kind, Software
from app.engine.transformer import Phase, Precision, kv_bytes_per_token
from app.engine.units import Dtype, Unit, dtype_bytes
from app.engine.verdict import AgainstPublished, Floor, Judgement, Verdict, efficiency, judge
from app.engine.workload import TransformerEstimate, TransformerSpec, estimate

__all__ = [
    "MLA",
    "MLP",
    "AgainstPublished",
    "Architecture",
    "Attention",
    "AttentionKernel",
    "Backend",
    "Bound",
    "Chip",
    "Dtype",
    "EngineError",
    "Fitted",
    "Floor",
    "InvalidArchitecture",
    "InvalidInput",
    "Judgement",
    "Kind",
    "LimitedBy",
    "MemoryBreakdown",
    "MemoryFit",
    "MoE",
    "OptimalBatch",
    "ParamCounts",
    "Peak",
    "Phase",
    "Precision",
    "Realism",
    "Roofline",
    "RowOp",
    "Software",
    "SweepPoint",
    "TransformerEstimate",
    "TransformerSpec",
    "Unit",
    "Unsupported",
    "Verdict",
    "Work",
    "architecture_from_config",
    "attention",
    "custom",
    "dtype_bytes",
    "efficiency",
    "elementwise",
    "estimate",
    "fitted",
    "judge",
    "kv_bytes_per_token",
    "matmul",
    "memcopy",
    "memory_fit",
    "optimal_batch",
    "param_counts",
    "place",
    "place_kernel",
    "pointwise_flops",
    "realize",
    "ridge_intensity",
    "row_op",
    "saxpy",
    "step_kernels",
]
