"""The body of a `copy` workload: bytes moved between host and device memory, or within
device memory (docs/formulas.md#copies)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from app.engine.copies import Direction
from app.schemas.request_base import Request


class CopyWorkload(Request):
    """A copy between host and device memory, or within device memory
    (docs/formulas.md#copies)."""

    kind: Literal["copy"]
    bytes: float = Field(ge=1, le=1e15, description="Bytes copied.")
    direction: Direction = Field(
        Direction.H2D,
        description="h2d (host to device), d2h (device to host) over the chip's host link, "
        "or d2d (within device memory: read and write).",
    )
    pinned: bool = Field(
        False,
        description="Host memory page-locked (tensor.pin_memory(), DataLoader(pin_memory=True)); "
        "PyTorch's CPU tensors are pageable by default. h2d and d2h only.",
    )
    overlap_s: float | None = Field(
        None,
        ge=0,
        le=1e7,
        description="Seconds of compute on another stream the copy runs beside: the "
        "explanation says how much of the copy the step still waits for. Needs pinned host "
        "memory for h2d and d2h.",
    )

    @model_validator(mode="after")
    def _overlap_needs_pinned(self) -> Self:
        if self.overlap_s is not None and self.direction is not Direction.D2D and not self.pinned:
            raise ValueError(
                "overlap_s: a copy from or to pageable host memory does not overlap compute "
                "(CUDA's asynchronous copies need pinned memory): give pinned=true"
            )
        return self
