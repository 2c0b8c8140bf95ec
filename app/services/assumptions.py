"""The `assumptions` of an answer: every choice, given or defaulted, that changed its numbers,
so that the form, the API and the CLI can never silently disagree."""

from __future__ import annotations

from app import formatting as fmt
from app.engine import (
    AttentionKernel,
    Backend,
    Chip,
    Kind,
    Phase,
    Roofline,
    Software,
    Unit,
    fitted,
)
from app.engine.copies import PAGEABLE_OVER_PINNED, PINNED_LINK_FRACTION, Direction
from app.engine.hardware import SPARSE_SPEEDUP
from app.engine.kernels import sparse_bytes
from app.engine.published import (
    ATTENTION_PACE,
    ESTABLISHED_RUNS,
    ESTABLISHED_SOURCES,
    KERNEL_KINDS,
    MIN_OWN_RUNS,
    PUBLISHED,
    published_kind,
)
from app.engine.realism import (
    EAGER_DISPATCH_S,
    GRAPH_LAUNCH_S,
    GRAPHED,
    KERNEL_BOUNDARY_S,
    STREAM_GAP_S,
    graph_pays,
)
from app.engine.stacks import GENERATION_PHASES, REFINES
from app.engine.tiling import TILE, output_tiles
from app.engine.units import dtype_bytes
from app.schemas.copy_bodies import CopyWorkload
from app.schemas.kernel_bodies import AttentionWorkload, ElementwiseWorkload
from app.schemas.ops_bodies import OpsWorkload
from app.schemas.requests import KernelWorkload, MatmulWorkload, TransformerWorkload
from app.services.profiles import MeasuredCeilings

ATTENTION_KERNELS = {
    AttentionKernel.FUSED: "one fused kernel on the chip's fastest matrix path "
    "(FlashAttention-3, cuDNN)",
    AttentionKernel.FLASH_2: "FlashAttention-2: one fused kernel on Ampere's warp-level MMA, "
    "which on Hopper and Blackwell issues part of the matrix peak",
    AttentionKernel.NAIVE: "naive: QK^T, the softmax and PV as three kernels, the scores in memory",
}


def transformer_assumptions(w: TransformerWorkload) -> list[str]:
    """What a transformer workload's numbers assumed, whatever is asked of it."""
    if w.phase is Phase.DECODE:
        shape = f"decode: batch {w.batch}, one new token each after {w.seq_len} cached tokens"
    elif w.phase is Phase.PREFILL:
        shape = f"prefill: batch {w.batch} prompts of {w.seq_len} tokens"
    elif w.phase is Phase.GENERATE:
        shape = f"generate: batch {w.batch}, {w.seq_len}-token prompts, {w.gen_len} new tokens each"
    else:
        shape = f"training: batch {w.batch} sequences of {w.seq_len} tokens per optimizer step"
    lines = [
        f"dtype: compute {w.dtype}, weights {w.weight_dtype or w.dtype}, "
        f"KV cache {w.kv_dtype or w.dtype}",
        shape,
        f"tensor parallel over {w.tp} chip{'' if w.tp == 1 else 's'}",
        f"{fmt.percent(w.reserve_fraction)} of each chip's memory held back for the runtime",
    ]
    if not w.flash_attention:
        lines.append(
            "attention without a fused (flash) kernel: "
            + (
                "its scores stored for the backward, which reads them instead of recomputing"
                if w.phase is Phase.TRAINING
                else "three kernels a layer, every score written and read in fp32 (16 bytes)"
            )
        )
    else:
        lines.append(
            f"attention in a fused (flash) kernel, its FLOPs at {ATTENTION_PACE:.2f}x their "
            "time at the sustained matrix rate: the pace published attention kernels reach "
            "next to GEMMs"
        )
    if w.phase is Phase.TRAINING and w.mfu is not None:
        lines.append(f"realistic time at the given MFU of {fmt.percent(w.mfu)}")
    return lines


def _workload_lines(
    workload: TransformerWorkload | KernelWorkload | OpsWorkload, roof: Roofline
) -> list[str]:
    match workload:
        case TransformerWorkload():
            return transformer_assumptions(workload)
        case MatmulWorkload():
            tiles, tile_fill = output_tiles(workload.m, workload.n)
            dtype = f"dtype {workload.dtype}"
            if workload.dtype == "fp32":
                dtype += ", TF32 allowed" if workload.allow_tf32 else ", no TF32 (allow_tf32=false)"
            return [
                dtype,
                f"the output is {tiles} tiles of {TILE[0]}x{TILE[1]} ({tile_fill:.0%} output, "
                "the rest padding), in waves over the chip's compute units",
            ]
        case ElementwiseWorkload():
            lines = [f"dtype {workload.dtype}"]
            if roof.peak.dtype != workload.dtype:
                lines.append(f"pointwise math in {roof.peak.dtype}, as PyTorch computes it")
            ops = workload.ops if isinstance(workload.ops, int) else len(workload.ops)
            if workload.fused:
                lines.append(
                    "fused: the chain is one kernel (eager PyTorch runs each op as its own "
                    "kernel: give fused=false)"
                )
            else:
                lines.append(f"unfused: {ops} kernels, each reading and writing memory")
            return lines
        case OpsWorkload():
            groups = len(workload.groups)
            fused = f"{groups} fused group{'' if groups == 1 else 's'} as given"
            return [
                "each op's FLOPs from the kernel formula of its kind, at its own dtype's peak "
                "(compute_time_s sums them; peak is that of the op with the longest compute "
                "term); its bytes are its tensors' (inputs read, outputs written)",
                f"each op its own kernel, {fused if workload.groups else 'none fused'}; views "
                "launch none",
                "a fused group moves only its external tensors (matched by id, else by shape "
                "and dtype)",
            ]
        case AttentionWorkload():
            return [f"dtype {workload.dtype}", f"attention as {ATTENTION_KERNELS[workload.kernel]}"]
    return [f"dtype {workload.dtype}"]


# a published ratio under 1: the runs beat the best-case kernel the catalog's fractions
# describe, which is why the realistic time can fall below the sustained-kernel time
_BELOW_SUSTAINED = (
    ": under 1, published runs beat the catalog's best-kernel fractions, so the realistic "
    "time is below the sustained-kernel time"
)


def _runs(kind: Kind) -> str:
    """Published runs of `kind`, in words."""
    base = REFINES.get(kind)
    return f"{base} runs of fine-grained experts" if base else f"{kind} runs"


def _stack_lines(
    kind: Kind, stack: Software, backend: Backend | None, roof: Roofline
) -> tuple[str, ...]:
    """What the realistic time assumed of the stack and the chip: which published runs set its
    ratio (a generation's: those of each of its phases), the roofline's fractions, peak and
    kernels."""
    if kind in GENERATION_PHASES:
        prefill, steps = GENERATION_PHASES[kind]
        lines = [
            "a generation is its prefill then its decode steps, each priced by its own phase's "
            "published runs (the published generations count among the decode steps' runs)",
            *(f"prefill: {line}" for line in _published_lines(prefill, stack, backend)),
            *(f"decode steps: {line}" for line in _published_lines(steps, stack, backend)),
        ]
    else:
        lines = _published_lines(kind, stack, backend)
    return (*lines, *_chip_lines(stack, roof))


def _published_lines(kind: Kind, stack: Software, backend: Backend | None) -> list[str]:
    """Which published runs of `kind` set the realistic ratio on `stack` on `backend`."""
    published, used, on = fitted(kind, stack, backend)
    borrowed = published_kind(kind, PUBLISHED)
    kind_lines = []
    if borrowed is not kind:
        kind_lines = [
            f"no published {borrowed} runs of fine-grained experts: every model's {borrowed} "
            "runs stand in, their range widened as another stack's"
        ]
    runs = _runs(borrowed)
    below = _BELOW_SUSTAINED * (published.ratio < 1)
    sources = "1 source" if published.sources == 1 else f"{published.sources} sources"
    took = f"{published.ratio:.2f}x the sustained-kernel time ({published.runs} runs, {sources})"
    widened = (
        f"the range is widened to {published.low:.2f}-{published.high:.2f}x the realistic "
        "time, how far runs of one stack fall from what other stacks' runs predict"
    )
    if published.runs == 0:
        lines = [f"no published {runs}: realistic = the sustained-kernel time"]
    elif on is not None:
        lines = [
            f"stack {stack} on {on} chips: its published {runs} on {on}'s backend "
            f"take {took}{below} (its runs on other backends are not counted: a stack's "
            "kernels are written per backend)"
        ]
    elif kind in KERNEL_KINDS:
        lines = [
            f"published {kind} kernels take {took} whoever launched them: the stack changes "
            f"only the fixed costs{below}"
        ]
    elif used is stack and published.established:
        lines = [f"stack {stack}: published {runs} take {took}{below}"]
    elif used is stack:
        lines = [
            f"stack {stack}: published {runs} take {took}{below}; too few to stand for "
            f"the stack (fewer than {ESTABLISHED_RUNS} runs or {ESTABLISHED_SOURCES} "
            f"sources): {widened}"
        ]
    else:
        lines = [
            f"fewer than {MIN_OWN_RUNS} published {runs} on {stack}: the median is "
            f"typical tuned software's, {took}{below}; {widened}"
        ]
    return kind_lines + lines


def _chip_lines(stack: Software, roof: Roofline) -> list[str]:
    """The roofline's sustained fractions and peak on the chip, and the kernels `stack`
    launches."""
    lines: list[str] = []
    peak = roof.peak
    compute = (
        f"{roof.sustained_compute:.0%} of the {peak.dtype} matrix peak"
        if peak.unit is Unit.MATRIX
        else f"the {peak.dtype} vector peak"
    )
    lines.append(
        f"sustained kernels reach {compute} and {roof.sustained_memory:.0%} of the bandwidth "
        "on this chip"
    )
    kernels = roof.kernels
    launched = f"{kernels} kernel{'s' * (kernels != 1)}"
    if kernels > 1:
        launched += (
            f", each after the first idling the memory {fmt.seconds(KERNEL_BOUNDARY_S)} at "
            "its boundary with the one before"
        )
    if stack in GRAPHED and graph_pays(kernels, 1):
        lines.append(f"{launched}, launched from a CUDA graph or compiled")
    elif stack in GRAPHED:
        lines.append(
            f"{launched}, launched from a stream ({fmt.seconds(STREAM_GAP_S)} each): a graph's "
            f"{fmt.seconds(GRAPH_LAUNCH_S)} launch pays only for a longer sequence"
        )
    else:
        lines.append(f"{launched}, each with {fmt.seconds(EAGER_DISPATCH_S)} of host dispatch")
    return lines


def accumulation_lines(chip: Chip, stack: Software, roof: Roofline) -> list[str]:
    """Which accumulate mode the ideal assumed, where the chip's matrix unit runs the roof's
    dtype faster with fp16 accumulation (GeForce cards): the fastest one the stack uses."""
    peak = roof.peak
    faster = chip.fp16_accumulate_peaks.get(peak.dtype)
    if peak.unit is not Unit.MATRIX or faster is None:
        return []
    fp32_acc = chip.matrix_peaks[peak.dtype]
    if chip.accumulates_in_fp16(stack, peak.dtype):
        return [
            f"{peak.dtype} products accumulate in fp16 on {stack} (cuBLAS CUBLAS_COMPUTE_16F): "
            f"the ideal is at {chip.id}'s fp16-accumulate tensor peak, "
            f"{fmt.rate(faster, 'FLOP/s')}, {faster / fp32_acc:.1f}x the fp32-accumulate "
            f"{fmt.rate(fp32_acc, 'FLOP/s')}"
        ]
    return [
        f"{peak.dtype} products accumulate in fp32 on {stack}: the fp32-accumulate tensor peak, "
        f"{fmt.rate(fp32_acc, 'FLOP/s')}; a stack that accumulates in fp16 (llama.cpp) runs "
        f"at {fmt.rate(faster, 'FLOP/s')}"
    ]


def sparsity_lines(
    workload: TransformerWorkload | KernelWorkload | OpsWorkload | CopyWorkload,
    chip: Chip,
    roof: Roofline,
) -> list[str]:
    """What 2:4 sparse weights assumed: compressed bytes, the sparse rate and what published
    sparse GEMMs reach of it (docs/formulas.md#structured-sparsity)."""
    if not isinstance(workload, TransformerWorkload | MatmulWorkload) or not workload.sparsity:
        return []
    dtype = roof.peak.dtype
    sparse, dense = chip.sparse_peak(dtype).flops_per_s, chip.peak(dtype, Unit.MATRIX).flops_per_s
    size = dtype_bytes(dtype)
    stored = (
        f"stored compressed: half the values, each with a 2-bit index, "
        f"{sparse_bytes(size):g} bytes per {dtype} weight instead of {size:g}"
    )
    reach = (
        f"sparse GEMMs reach {SPARSE_SPEEDUP / 2:.3f} of the dense kernels' share of their "
        f"peak (published cuSPARSELt runs: {SPARSE_SPEEDUP}x the dense GEMM)"
    )
    if isinstance(workload, MatmulWorkload):
        return [
            f"2:4 sparse weights (the k x n operand) {stored}, the product at the {dtype} "
            f"sparse rate, {fmt.rate(sparse, 'FLOP/s')}; {reach}"
        ]
    return [
        f"2:4 sparse linear layers: the blocks' weights {stored}; their products at the "
        f"{dtype} sparse rate, {fmt.rate(sparse, 'FLOP/s')}, attention's and lm_head's at the "
        f"dense {fmt.rate(dense, 'FLOP/s')}: the step's peak, "
        f"{fmt.rate(roof.peak.flops_per_s, 'FLOP/s')}, is their blend; {reach}"
    ]


def assumptions(
    workload: TransformerWorkload | KernelWorkload | OpsWorkload | CopyWorkload,
    kind: Kind,
    stack: Software,
    backend: Backend | None,
    roof: Roofline,
) -> list[str]:
    """What the numbers of `workload` on `stack` on a chip of `backend` assumed."""
    if isinstance(workload, CopyWorkload):
        return _copy_lines(workload, kind, stack, backend, roof)
    lines = [*_workload_lines(workload, roof), *_stack_lines(kind, stack, backend, roof)]
    if isinstance(workload, OpsWorkload):
        lines.append(
            f"the realistic time of all the ops from published {kind} runs: the kind of the op "
            "with the longest sustained-kernel time"
        )
    return lines


def _copy_lines(
    workload: CopyWorkload, kind: Kind, stack: Software, backend: Backend | None, roof: Roofline
) -> list[str]:
    """A device copy is a copy kernel (read and write); a host copy crosses the host link at
    the share of it that copies from pinned or pageable memory reach (app/engine/copies.py)."""
    if workload.direction is Direction.D2D:
        return [
            "a copy kernel: each byte read and written once",
            *_stack_lines(kind, stack, backend, roof),
        ]
    return [
        "the copy crosses one direction of the host link, half its bidirectional total; its "
        "device side (a write for h2d, a read for d2h) runs meanwhile",
        f"pinned copies reach {fmt.percent(PINNED_LINK_FRACTION)} of the link (CUDA C++ Best "
        f"Practices Guide), pageable ones {fmt.percent(PAGEABLE_OVER_PINNED)} of that "
        "(staged through a pinned buffer by the driver)",
        "host memory pinned" if workload.pinned else "host memory pageable (PyTorch's default)",
        "no published runs of host copies: realistic = the link at that share, no launch cost",
    ]


def ceilings_assumptions(measured: MeasuredCeilings | None) -> list[str]:
    """Whose sustained fractions the realistic time starts from."""
    if measured is None:
        return ["ceilings: the catalog's sustained fractions (datasheet)"]
    p = measured.profile
    return [
        f"ceilings measured by roofcheck probe #{p.id} on {p.date} ({p.device}, {p.backend}): "
        f"{p.matmul_fraction_of_datasheet[measured.dtype]:.0%} of the {measured.dtype} "
        f"matrix peak, {p.copy_fraction_of_datasheet:.0%} of the bandwidth"
    ]
