"""The bodies of single-kernel workloads other than a matmul (app/schemas/matmul_body.py):
an elementwise chain, saxpy, a row-wise softmax or norm, an attention layer, and custom work
given as FLOPs and bytes."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from app.engine import AttentionKernel, Dtype, Unit
from app.schemas.request_base import Request

_BIG = 10**15  # element counts: far beyond any device, keeps products finite

_OpCount = Annotated[int, Field(ge=1, le=10**6)]
_OpNames = Annotated[
    list[Annotated[str, Field(max_length=32)]], Field(min_length=1, max_length=10**4)
]


class ElementwiseWorkload(Request):
    """A chain of pointwise ops over n elements, fused into one kernel or one kernel per op."""

    kind: Literal["elementwise"]
    n: int = Field(ge=1, le=_BIG, description="Elements.")
    ops: _OpCount | _OpNames = Field(
        1, description="Number of ops in the chain, or their names (e.g. ['cos', 'cos'])."
    )
    flops_per_element: float | None = Field(
        None, ge=0, le=10**6, description="FLOPs per element of the whole chain; default: ops."
    )
    fused: bool = True
    inputs: int = Field(1, ge=1, le=64, description="Input tensors read (1 for x.cos()).")
    dtype: Dtype = Dtype.FP32


class SaxpyWorkload(Request):
    """y = a x + y over n elements."""

    kind: Literal["saxpy"]
    n: int = Field(ge=1, le=_BIG)
    dtype: Dtype = Dtype.FP32


class RowwiseWorkload(Request):
    """A fused softmax, layernorm or rmsnorm over the last dimension of (rows x cols)."""

    kind: Literal["softmax", "layernorm", "rmsnorm"]
    rows: int = Field(ge=1, le=_BIG)
    cols: int = Field(ge=1, le=10**9)
    dtype: Dtype = Dtype.FP32


class AttentionWorkload(Request):
    """One attention layer: softmax(Q K^T) V."""

    kind: Literal["attention"]
    batch: int = Field(1, ge=1, le=10**9)
    heads: int = Field(ge=1, le=10**5)
    kv_heads: int | None = Field(None, ge=1, le=10**5, description="Default: heads (MHA).")
    q_len: int = Field(ge=1, le=10**8)
    kv_len: int | None = Field(None, ge=1, le=10**8, description="Default: q_len.")
    head_dim: int = Field(ge=1, le=10**5)
    causal: bool = False
    flash: bool = Field(True, description="Fused: scores never reach memory.")
    implementation: AttentionKernel | None = Field(
        None,
        description=(
            "fused (the default with flash=true): one kernel on the chip's fastest matrix "
            "path (FlashAttention-3, cuDNN); flash-attention-2: one kernel on Ampere's "
            "warp-level MMA, which reaches half the peak on Hopper and a quarter on B200; "
            "naive (the default with flash=false): scores in memory."
        ),
    )
    dtype: Dtype = Dtype.BF16

    @property
    def kernel(self) -> AttentionKernel:
        """The implementation: the one given, else what `flash` says."""
        if self.implementation is not None:
            return self.implementation
        return AttentionKernel.FUSED if self.flash else AttentionKernel.NAIVE

    @model_validator(mode="after")
    def _flash_agrees(self) -> Self:
        if not self.flash and self.implementation not in (None, AttentionKernel.NAIVE):
            raise ValueError(
                f"flash=false is the naive kernel, not {self.implementation}: "
                "give one of flash or implementation"
            )
        return self


class CustomWorkload(Request):
    """Work given directly as FLOPs and bytes moved."""

    kind: Literal["custom"]
    flops: float = Field(ge=0, le=1e30)
    bytes: float = Field(ge=1, le=1e30, description="At least one byte moved.")
    dtype: Dtype = Dtype.FP32
    unit: Unit = Field(Unit.VECTOR, description="matrix (tensor cores) or vector ALUs.")
