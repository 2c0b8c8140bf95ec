"""The fixed lines of advice the verdicts give (app/engine/verdict.py): on structural gaps, on
launches, and on communication-bound work."""

from __future__ import annotations

from app.engine.roofline import Bound

STRUCTURAL = (
    "Are the kernels compiled and fused (torch.compile, CUDA graphs), or launched one small "
    "op at a time from Python?",
    "Is the data on the device, or copied between host and device every step?",
    "Are there non-vectorised (Python-loop) ops, or intermediates materialised that need not be?",
    "If the work is tiny, fixed overheads (framework dispatch, kernel launches) dominate: "
    "measure at two sizes; time that barely grows with the work means overhead-bound.",
)
FEWER_LAUNCHES = (
    "Capture the step in a CUDA graph or compile it (torch.compile, a serving engine), so "
    "the host launches once instead of once per op.",
    "Give each launch more work: a larger batch, fused kernels, fewer synchronisations "
    "(.item(), .cpu(), prints) in the loop.",
)
REGIME_ADVICE = {
    Bound.COMMUNICATION: (
        "Communication-bound: moving data over a link (collectives between chips, copies "
        "between host and device) takes longer than the chip's own work.",
        "Overlap them with compute (asynchronous tensor/sequence parallelism, bucketed "
        "gradient reduction), send fewer and larger messages, or lower the degree that "
        "communicates (a smaller tp, more data parallelism).",
        "Keep tensor parallelism inside one scale-up domain (NVLink, xGMI, ICI): across the "
        "network each collective is several times slower.",
    ),
}
