"""Advice lines of the verdicts (app/engine/verdict.py): for work that does not fit, what to
check when a run is an order of magnitude off, how to launch less often, what a run as close to
its roof as tuned software gets can change, and what communication- and input-bound work can
do."""

from app.engine import prose
from app.engine.hardware import Chip
from app.engine.roofline import Bound, Roofline
from app.engine.transformer import Precision
from app.engine.units import Dtype, Unit, dtype_bytes


def unfit_advice(ratio: float) -> tuple[str, ...]:
    """The advice on a run of work that does not fit, measured `ratio` times its roofline."""
    return (
        "Does not fit: the workload as described needs more memory per chip than the chip "
        "has, so it cannot have run as given. Check the chips (tp), batch, lengths and dtypes "
        "that really ran, or make it fit: more chips, ZeRO, recomputation, a smaller batch or "
        "narrower dtypes (/memory-fit gives the largest batch and the fewest chips).",
        f"The time figures are for a configuration that cannot run: measured "
        f"{prose.times(ratio)} its roofline time, to be judged once the workload fits.",
    )


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
    Bound.INPUT: (
        "Input-bound: the input pipeline (storage reads, decoding on the host, the copy to "
        "the device) takes longer per step than the chip's own work, so the chip waits for "
        "its data.",
    ),
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


def host_advice(cpu_share: float) -> str:
    """The first line of advice on a host-bound run."""
    return (
        f"Host-bound: the host was busy for {cpu_share:.0%} of the run (its process CPU time "
        "over the wall time), so the device waited on launches, dispatch and Python. Capture "
        "the step in a CUDA graph or compile it, batch the work into fewer and larger ops, "
        "and move Python (loops, .item(), data preparation) out of the timed loop."
    )


def faster_dtypes(roof: Roofline, chip: Chip | None) -> str:
    """The chip's narrower matrix dtypes whose peak beats the one the work runs at, in words
    ('fp8 (2.0x the bf16 peak)'); empty where there are none or the chip is not known."""
    if chip is None or roof.peak.unit is not Unit.MATRIX:
        return ""
    own = roof.peak.flops_per_s
    faster = sorted((peak, dtype) for dtype, peak in chip.matrix_peaks.items() if peak > own)
    return " or ".join(
        f"{dtype} ({prose.times(peak / own)} the {roof.peak.dtype} peak)" for peak, dtype in faster
    )


# the bits per value (block scales included) from which a format counts as 16-bit or 8-bit
SIXTEEN_BIT, EIGHT_BIT = 12, 6


def narrower_dtypes(roof: Roofline, chip: Chip | None, precision: Precision | None) -> str:
    """The narrower dtypes a memory-bound run could move to, in words ('fp32 to bf16, bf16
    weights to int8 or int4'): its compute from fp32, its weights to int8 (or int4) where they
    are wider, its KV cache to fp8 where the chip computes in fp8 and the cache is wider; for
    work of unknown `precision` (a kernel), the usual ones. Empty where all are narrow."""
    fp8 = chip is None or Dtype.FP8 in chip.matrix_peaks
    moves = []
    if precision is None or roof.peak.dtype is Dtype.FP32:
        moves.append("fp32 to bf16")
    # the usual 16-bit weights and cache where the precision is unknown (a kernel's)
    precision = precision or Precision(Dtype.BF16)
    # a format's bits per value with its block scales (q8_0's 8.5, int4-g128's 4.16): 16-bit
    # from 12 up, 8-bit from 6 up, 4-bit below
    weight_bits = 8 * dtype_bytes(precision.weights)
    if weight_bits >= SIXTEEN_BIT:
        moves.append(f"{precision.weights} weights to int8 or int4 (quantisation)")
    elif weight_bits >= EIGHT_BIT:
        moves.append(f"{precision.weights} weights to int4 (quantisation)")
    if fp8 and 8 * dtype_bytes(precision.kv) >= SIXTEEN_BIT:
        moves.append("an fp8 KV cache")
    return ", ".join(moves)


def less_work(
    roof: Roofline, chip: Chip | None, precision: Precision | None = None
) -> tuple[str, ...]:
    """How a run as close to its roof as tuned software gets can go faster: by doing less
    work, or moving fewer bytes (in the narrower dtypes its `precision` allows)."""
    if roof.bound is Bound.MEMORY:
        narrower = narrower_dtypes(roof, chip, precision)
        return (
            *([f"Use narrower dtypes: {narrower}."] if narrower else []),
            "Fuse adjacent ops so intermediates stay on chip.",
        )
    faster = faster_dtypes(roof, chip)
    return (
        "Lower latency needs less work: a smaller batch (trading throughput), pruning, "
        "distillation" + (f", or {faster} where accuracy allows." if faster else "."),
    )
