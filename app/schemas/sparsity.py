"""2:4 structured sparsity of a workload's weights (docs/formulas.md#structured-sparsity): a
matmul's (k x n) operand, a transformer's linear layers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

# two values kept of every four along K: the pattern NVIDIA's sparse tensor cores run
Sparsity = Literal["2:4"]


def sparsity_field(weights: str) -> Any:
    """The `sparsity` field of a workload whose `weights` may be 2:4 structured-sparse
    (default null: dense)."""
    return Field(
        None,
        description=(
            f"2:4 structured sparsity of {weights}: the chip's sparse tensor rate for the "
            "dtype and compressed weight bytes; null: dense."
        ),
    )
