"""The body of a `matmul` workload: (m x k) @ (k x n), dense or with 2:4 structured-sparse
weights (docs/formulas.md#structured-sparsity)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app.engine import Dtype
from app.schemas.request_base import Request
from app.schemas.sparsity import Sparsity, sparsity_field


class MatmulWorkload(Request):
    """(m x k) @ (k x n)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, protected_namespaces=())

    kind: Literal["matmul"]
    m: int = Field(ge=1, le=10**9)
    n: int = Field(ge=1, le=10**9)
    k: int = Field(ge=1, le=10**9)
    dtype: Dtype = Field(Dtype.FP32, description="Operand dtype; fp32 is PyTorch's default.")
    allow_tf32: bool = Field(False, description="Let fp32 matmuls use the TF32 matrix peak.")
    sparsity: Sparsity | None = sparsity_field("the (k x n) operand (the weights)")
