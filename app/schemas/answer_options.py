"""Options of the /expected-time and /check answers, in the POST body and the GET query alike:
what they add to the answer beside its figures."""

from __future__ import annotations

from pydantic import Field

BREAKDOWN = Field(
    False,
    description="Add `breakdown` to /expected-time and /check answers of prefill, decode and "
    "training: the step by operation (FLOPs, bytes, time, share, regime).",
)
WHAT_IF = Field(
    False,
    description="Add `what_if` to /expected-time and /check answers: the same work with each "
    "change that applies to it (narrower weights, an fp8 KV cache, the optimal batch, tp x2, "
    "fusion, a compiled stack, another GEMM dtype, training options), each estimated anew, "
    "ranked by realistic speed-up per unit of the same work. Each change costs an estimate.",
)
