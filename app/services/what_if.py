"""What if the work changed? The same work with each change that applies to it, each estimated
by the engine's own functions on the changed workload, never by a formula of its own
(docs/formulas.md#what-if).

Speed-up is per unit of the same work: the realistic time per token for a changed batch (a
throughput), per step for every other change. A change that makes work that fits in memory
no longer fit is left out; where the work does not fit as given, every change is kept, and
its `fits` says which make it fit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from app.engine import (
    Architecture,
    AttentionKernel,
    Bound,
    Chip,
    Dtype,
    EngineError,
    Phase,
    Precision,
    Roofline,
    Software,
    TransformerEstimate,
    TransformerSpec,
    dtype_bytes,
    estimate,
    optimal_batch,
    place_kernel,
)
from app.engine.fusion import OpsEstimate
from app.engine.realism import GRAPHED
from app.engine.training import Parallelism, TrainingStep
from app.schemas.kernel_bodies import AttentionWorkload, CustomWorkload, ElementwiseWorkload
from app.schemas.ops_bodies import OpsWorkload
from app.schemas.requests import KernelWorkload, MatmulWorkload
from app.services.inputs import kernel_evaluations, kernel_work
from app.services.op_sequences import estimate_of

# weight-only quantisation: the linear weights stored in these formats (by the key's value
# width), computed in the compute dtype; int4 as quantisers store it, in AWQ's and GPTQ's
# groups of 128 with their scales and zeros (a bare int4 leaves them out)
QUANTISED_WEIGHTS = {"int8": Dtype.INT8, "int4": Dtype.INT4_G128}
SERVING = frozenset({Phase.DECODE, Phase.PREFILL, Phase.GENERATE})
# the 4-byte floats (PyTorch's default fp32, and TF32, stored as fp32), and the 16-bit ones
# they narrow to: bf16 first (fp32's exponent range, so no loss scaling), else fp16
WIDE = frozenset({Dtype.FP32, Dtype.TF32})
HALVES = (Dtype.BF16, Dtype.FP16)


@dataclass(frozen=True, slots=True)
class Alternative:
    """The work with one change: its roofline, its work over the current work's
    (`work_scale`: tokens for a changed batch, else 1) and, for a transformer, whether it
    fits in memory."""

    key: str
    change: str
    roofline: Roofline
    work_scale: float = 1.0
    fits: bool | None = None

    def speedup(self, current: Roofline) -> float:
        """Realistic time per unit of work, the current's over this one's."""
        return current.realistic_time * self.work_scale / self.roofline.realistic_time


def ranked(current: Roofline, alternatives: Iterable[Alternative]) -> list[Alternative]:
    """Best realistic speed-up first (ties in the order the changes were tried)."""
    return sorted(alternatives, key=lambda a: -a.speedup(current))


def _compiled(stack: Software) -> bool:
    """Whether a compiled stack is a change here: the stack launches each op from Python."""
    return stack not in GRAPHED


_COMPILED = "compiled (torch.compile, CUDA graphs) instead of {stack}"


def _half(chip: Chip, *, matrix: bool) -> Dtype | None:
    """The 16-bit float that 4-byte work narrows to on `chip`: the first of HALVES the chip
    lists a peak for (a matrix peak for work on the matrix unit, any for pointwise work,
    whose narrow dtypes run at the vector fp32 rate); None where it lists neither."""
    listed = set(chip.matrix_peaks) if matrix else {*chip.matrix_peaks, *chip.vector_peaks}
    return next((dtype for dtype in HALVES if dtype in listed), None)


# --- transformers -----------------------------------------------------------------------------


def _transformer_specs(
    arch: Architecture, chip: Chip, spec: TransformerSpec, current: TransformerEstimate
) -> list[tuple[str, str, TransformerSpec]]:
    """(key, change, spec) of each change that applies, but the batch's."""
    p = spec.precision
    found: list[tuple[str, str, TransformerSpec]] = []
    # training keeps its weights in the compute dtype, as 2:4 sparse weights are kept
    if spec.phase is not Phase.TRAINING and not p.sparse:
        for width, stored in QUANTISED_WEIGHTS.items():
            if dtype_bytes(stored) < dtype_bytes(p.weights):
                found.append(
                    (
                        f"weights_{width}",
                        f"weights in {stored} (weight-only quantisation)",
                        replace(spec, precision=replace(p, weights=stored)),
                    )
                )
    fp8 = Dtype.FP8 in chip.matrix_peaks
    if (
        spec.phase in (Phase.DECODE, Phase.GENERATE)
        and fp8
        and dtype_bytes(p.kv) > dtype_bytes(Dtype.FP8)
    ):
        found.append(
            ("kv_fp8", "KV cache in fp8", replace(spec, precision=replace(p, kv=Dtype.FP8)))
        )
    found += _transformer_dtypes(chip, spec, current)
    if not spec.flash_attention:
        found.append(
            (
                "flash_attention_on",
                "a fused (flash) attention kernel: the scores never reach memory",
                replace(spec, flash_attention=True),
            )
        )
    if 2 * spec.tp <= arch.attention.heads:
        found.append(
            (
                "tp_x2",
                f"tensor parallel over {2 * spec.tp} chips instead of {spec.tp} (twice the chips)",
                replace(spec, tp=2 * spec.tp),
            )
        )
    if _compiled(spec.software):
        found.append(
            (
                "stack_compiled",
                _COMPILED.format(stack=spec.software),
                replace(spec, software=Software.COMPILED),
            )
        )
    if current.training is not None:
        found += _training_specs(spec, current.training)
    return found


def _transformer_dtypes(
    chip: Chip, spec: TransformerSpec, current: TransformerEstimate
) -> list[tuple[str, str, TransformerSpec]]:
    """A 4-byte compute dtype narrowed to 16 bits (with the weights and KV cache stored in
    it; narrower ones kept), and fp32 matmuls on TF32 where the work is compute-bound (TF32
    moves the same bytes, so it speeds up compute alone): each where the chip has its peak."""
    p = spec.precision
    found: list[tuple[str, str, TransformerSpec]] = []
    half = _half(chip, matrix=True)
    if p.compute in WIDE and half is not None:
        stored = (("weights", p.weights), ("KV cache", p.kv))
        parts = ["the compute", *(f"the {name}" for name, dtype in stored if dtype in WIDE)]
        said = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
        narrowed = Precision(
            compute=half,
            weights=half if p.weights in WIDE else p.weights,
            kv=half if p.kv in WIDE else p.kv,
            sparse=p.sparse,
        )
        found.append(
            (
                f"dtype_{half}",
                f"in {half} instead of {p.compute} ({said})",
                replace(spec, precision=narrowed),
            )
        )
    if (
        p.compute is Dtype.FP32
        and Dtype.TF32 in chip.matrix_peaks
        and current.roofline.roof is Bound.COMPUTE
    ):
        tf32 = replace(p, compute=Dtype.TF32)
        change = "TF32 on the matrix unit for the fp32 matmuls"
        found.append(("matmul_tf32", change, replace(spec, precision=tf32)))
    return found


def _training_specs(
    spec: TransformerSpec, step: TrainingStep
) -> list[tuple[str, str, TransformerSpec]]:
    """The training options: recomputation, micro-batches, overlap, ZeRO."""
    lay = step.layout
    training, parallel = spec.training, spec.training.parallel
    found = [
        (
            "recompute_off" if spec.recompute else "recompute_on",
            "activation recomputation " + ("off" if spec.recompute else "on"),
            replace(spec, recompute=not spec.recompute),
        )
    ]

    def with_parallel(changed: Parallelism) -> TransformerSpec:
        return replace(spec, training=replace(training, parallel=changed))

    micro = int(lay.micro_batch)
    if lay.pp > 1 and micro % 2 == 0:
        found.append(
            (
                "micro_batches_x2",
                f"{2 * lay.micro_batches} micro-batches of {micro // 2} instead of "
                f"{lay.micro_batches} of {micro} (a smaller pipeline bubble)",
                with_parallel(replace(parallel, micro_batch=micro // 2)),
            )
        )
    if lay.replicas > 1 and not parallel.overlap:
        found.append(
            (
                "overlap_on",
                "the gradient reduction overlapped with the backward pass",
                with_parallel(replace(parallel, overlap=True)),
            )
        )
    if lay.replicas > 1 and parallel.zero == 0:
        found.append(
            (
                "zero_1",
                f"ZeRO stage 1 (the optimizer state sharded over {lay.replicas} replicas)",
                with_parallel(replace(parallel, zero=1)),
            )
        )
    return found


def _estimated(
    arch: Architecture, chip: Chip, spec: TransformerSpec, current: TransformerEstimate
) -> TransformerEstimate | None:
    """The changed spec's estimate, or None where the engine cannot run it (a chip without
    a link for tp, an invalid layout) or where it no longer fits."""
    try:
        result = estimate(arch, chip, spec)
    except EngineError:
        return None
    return None if current.fits and not result.fits else result


def _batch(
    arch: Architecture, chip: Chip, spec: TransformerSpec, current: TransformerEstimate
) -> Alternative | None:
    """Serving at the optimal batch, per token (throughput)."""
    if spec.phase not in SERVING:
        return None
    try:
        best = optimal_batch(arch, chip, spec)
    except EngineError:
        return None
    if best.optimal_batch is None or best.optimal_batch == spec.batch:
        return None
    result = _estimated(arch, chip, spec.with_batch(best.optimal_batch), current)
    if result is None:
        return None
    return Alternative(
        "optimal_batch",
        f"batch {best.optimal_batch} instead of {spec.batch} (the optimal batch, set by "
        f"{best.limited_by}; per token)",
        result.roofline,
        result.tokens / current.tokens,
        result.fits,
    )


def transformer_alternatives(
    arch: Architecture, chip: Chip, spec: TransformerSpec, current: TransformerEstimate
) -> list[Alternative]:
    """The transformer workload with each change that applies, ranked."""
    found = []
    for key, change, changed in _transformer_specs(arch, chip, spec, current):
        result = _estimated(arch, chip, changed, current)
        if result is not None:
            found.append(Alternative(key, change, result.roofline, fits=result.fits))
    batch = _batch(arch, chip, spec, current)
    return ranked(current.roofline, [*found, *([] if batch is None else [batch])])


# --- kernels and operator lists ----------------------------------------------------------------


def _in_half(workload: KernelWorkload, chip: Chip) -> list[tuple[str, str, KernelWorkload]]:
    """A kernel's 4-byte tensors in 16 bits (`_half`): half the bytes, and for a matmul or
    attention the 16-bit matrix peak."""
    if isinstance(workload, CustomWorkload) or workload.dtype not in WIDE:
        return []  # a custom kernel's bytes are given, not derived from its dtype
    matrix = isinstance(workload, MatmulWorkload | AttentionWorkload)
    half = _half(chip, matrix=matrix)
    if half is None:
        return []
    update: dict[str, object] = {"dtype": half}
    if isinstance(workload, MatmulWorkload):
        update["allow_tf32"] = False
    change = (
        f"operands in {half} instead of {workload.dtype}"
        if matrix
        else f"tensors in {half} instead of {workload.dtype} (half the bytes)"
    )
    return [(f"dtype_{half}", change, workload.model_copy(update=update))]


def _gemm_dtypes(workload: MatmulWorkload, chip: Chip) -> list[tuple[str, str, KernelWorkload]]:
    """Faster dtypes for a matmul, where the chip has their matrix peak: TF32 for fp32, fp8
    for 16-bit (and 16 bits for fp32: `_in_half`)."""
    dtype, peaks = workload.dtype, chip.matrix_peaks
    found: list[tuple[str, str, KernelWorkload]] = []
    if dtype is Dtype.FP32 and not workload.allow_tf32 and Dtype.TF32 in peaks:
        change = "TF32 on the matrix unit for the fp32 matmul (allow_tf32)"
        found.append(("matmul_tf32", change, workload.model_copy(update={"allow_tf32": True})))
    if dtype in (Dtype.BF16, Dtype.FP16) and Dtype.FP8 in peaks:
        update = {"dtype": Dtype.FP8}
        found.append(
            ("dtype_fp8", f"operands in fp8 instead of {dtype}", workload.model_copy(update=update))
        )
    return found


def _kernel_workloads(
    workload: KernelWorkload, chip: Chip
) -> list[tuple[str, str, KernelWorkload]]:
    """(key, change, workload) of each change of a kernel's own fields that applies."""
    found = _in_half(workload, chip)
    if isinstance(workload, MatmulWorkload):
        found += _gemm_dtypes(workload, chip)
    if isinstance(workload, ElementwiseWorkload) and not workload.fused:
        found.append(
            (
                "fused",
                "the chain fused into one kernel",
                workload.model_copy(update={"fused": True}),
            )
        )
    if isinstance(workload, AttentionWorkload) and workload.kernel is not AttentionKernel.FUSED:
        update = {"implementation": AttentionKernel.FUSED, "flash": True}
        change = (
            f"one fused attention kernel (FlashAttention-3, cuDNN) instead of {workload.kernel}"
        )
        found.append(("attention_fused", change, workload.model_copy(update=update)))
    return found


def kernel_alternatives(
    workload: KernelWorkload, chip: Chip, stack: Software, current: Roofline
) -> list[Alternative]:
    """A kernel with each change that applies, ranked."""

    def placed(changed: KernelWorkload, software: Software) -> Roofline:
        return place_kernel(kernel_work(changed)[0], chip, software, kernel_evaluations(changed))

    found = [
        Alternative(key, change, placed(changed, stack))
        for key, change, changed in _kernel_workloads(workload, chip)
    ]
    if _compiled(stack):
        change = _COMPILED.format(stack=stack)
        found.append(Alternative("stack_compiled", change, placed(workload, Software.COMPILED)))
    return ranked(current, found)


def ops_alternatives(
    workload: OpsWorkload, chip: Chip, stack: Software, current: OpsEstimate
) -> list[Alternative]:
    """An operator list with each change that applies (all fused into one kernel, a compiled
    stack), ranked."""
    found: list[Alternative] = []
    if current.kernels > 1:
        one = workload.model_copy(update={"groups": [list(range(len(workload.ops)))]})
        change = f"the {current.kernels} kernels fused into one"
        found.append(Alternative("fused", change, estimate_of(one, chip, stack).roofline))
    if _compiled(stack):
        change = _COMPILED.format(stack=stack)
        compiled = estimate_of(workload, chip, Software.COMPILED).roofline
        found.append(Alternative("stack_compiled", change, compiled))
    return ranked(current.roofline, found)
