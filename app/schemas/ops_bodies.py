"""The `ops` workload's body: a sequence of operators as a profiler lists them, with an
optional fused grouping (docs/api.md, "POST bodies"; docs/formulas.md#fusion). Every list is
bounded, so that no request does unbounded work."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.engine import Dtype, Unit
from app.engine.fusion import MAX_OPS
from app.engine.ops import MAX_DIM, MAX_DIMS

MAX_TENSORS = 64  # inputs, and outputs, of one operator
_TEXT = Field(min_length=1, max_length=200)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TensorIn(_Body):
    """A tensor an operator reads or writes."""

    shape: list[Annotated[int, Field(ge=1, le=MAX_DIM)]] = Field(
        max_length=MAX_DIMS, description="Sizes, e.g. [4096, 4096]; [] for a scalar."
    )
    dtype: Dtype = Field(Dtype.FP32, description="fp32 (PyTorch's default), bf16, ...")
    id: Annotated[str, _TEXT] | None = Field(
        None,
        description="Names the tensor across ops, so that a fused group knows which tensors "
        "stay on chip; without one, an input is taken for an unconsumed earlier output of the "
        "same shape and dtype.",
    )
    device: Annotated[str, Field(min_length=1, max_length=40)] | None = Field(
        None,
        description="Where it lives: cpu, cuda, cuda:0, ... A copy_/_to_copy between cpu and "
        "another device is priced on the chip's host link.",
    )


class OpIn(_Body):
    """One operator, e.g. {"name": "aten::mm", "inputs": [...], "outputs": [...]}."""

    name: Annotated[str, _TEXT] = Field(description="e.g. aten::mm, aten::add.Tensor, cos.")
    inputs: list[TensorIn] = Field(default_factory=list, max_length=MAX_TENSORS)
    outputs: list[TensorIn] = Field(default_factory=list, max_length=MAX_TENSORS)
    flops: float | None = Field(
        None,
        ge=0,
        le=1e30,
        description="FLOPs, for an op the engine does not know (or to override).",
    )
    bytes: float | None = Field(
        None, gt=0, le=1e30, description="Bytes moved, for an op the engine does not know."
    )
    unit: Unit | None = Field(
        None, description="The peak given FLOPs run at (default: the op's own, else vector)."
    )
    causal: bool = Field(False, description="Attention ops: causal masking.")
    non_blocking: bool = Field(
        False, description="Host copies: non_blocking=True, taken for pinned host memory."
    )


class OpsWorkload(_Body):
    """A sequence of operators, each its own kernel unless grouped: each group runs as one
    fused kernel that moves only its external tensors."""

    kind: Literal["ops"]
    ops: list[OpIn] = Field(min_length=1, max_length=MAX_OPS)
    groups: list[
        Annotated[
            list[Annotated[int, Field(ge=0, lt=MAX_OPS)]],
            Field(min_length=1, max_length=MAX_OPS),
        ]
    ] = Field(
        default_factory=list,
        max_length=MAX_OPS,
        description="Lists of op indices (0-based), each run as one fused kernel; an op in no "
        "group is a kernel of its own.",
    )

    @model_validator(mode="after")
    def _bounded_groups(self) -> Self:
        if sum(len(group) for group in self.groups) > len(self.ops):
            raise ValueError("groups: each op index at most once, so at most as many as the ops")
        return self
