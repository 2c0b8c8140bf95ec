"""Request bodies of the planning calculations that add fields to a workload on a chip:
/memory-fit's dtype options and /max-context's latency bound (the GET forms are in
app/schemas/queries.py)."""

from __future__ import annotations

from pydantic import Field

from app.schemas.requests import CalculationRequest, Millis

OPTIONS = Field(
    False,
    description="Add each weight and KV-cache dtype the chip can use (the compute dtype, fp8 "
    "where the chip has it, int8, int4, the checkpoint's own): its memory, whether it fits, "
    "and its time; those that fit first, the smallest change first.",
)
MAX_TPOT = Field(
    None,
    description="The longest realistic decode step (time per output token), in ms, the context "
    "may take.",
)


class MemoryFitRequest(CalculationRequest):
    """A transformer workload, and whether to list its dtype options."""

    options: bool = OPTIONS


class MaxContextRequest(CalculationRequest):
    """A transformer decode step whose longest context is sought (give no seq_len), and
    optionally a bound on its time."""

    max_tpot_ms: Millis | None = MAX_TPOT
