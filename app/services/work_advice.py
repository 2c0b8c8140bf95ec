"""Advice specific to the kind of work, in words and formatted numbers for /check's answer,
from numbers the engine already has (docs/formulas.md#verdict): a GEMM's tiles and dtype, an
elementwise chain's fused time, a decode step's bytes by what they hold, a training step's
collectives, bubble and recomputation; and the best change of what-if, when it was estimated."""

from __future__ import annotations

from dataclasses import dataclass, replace

from app import formatting as fmt
from app.engine import (
    Bound,
    Chip,
    Dtype,
    Roofline,
    TransformerEstimate,
    TransformerSpec,
    Work,
    dtype_bytes,
)
from app.engine.input_pipeline import ADVICE, PREFETCH, Limit
from app.engine.tiling import TILE, fill
from app.engine.training import TrainingStep
from app.engine.transformer import SCORES_TERM

# faster matrix dtypes worth naming for a GEMM in each dtype, fastest last
_FASTER = {
    Dtype.FP32: (Dtype.TF32, Dtype.BF16),
    Dtype.TF32: (Dtype.BF16,),
    Dtype.BF16: (Dtype.FP8,),
    Dtype.FP16: (Dtype.FP8,),
}
# below this share of its tiles being output, a GEMM's shape is worth changing
TILE_FILL_WORTH_NAMING = 0.9


def _percent(share: float) -> str:
    return f"{fmt.number(100 * share)}%"


def _sequences(batch: int) -> str:
    return "one sequence" if batch == 1 else f"{batch:,} sequences"


def _fraction(narrow: Dtype, wide: Dtype) -> str:
    """'1/2', '1/4': the bytes of `narrow` over those of `wide` (a power-of-two ratio)."""
    return f"1/{fmt.number(dtype_bytes(wide) / dtype_bytes(narrow))}"


def _times(factor: float) -> str:
    return f"{fmt.number(factor)}x"


@dataclass(frozen=True, slots=True)
class Gemm:
    """A single matmul on a chip: its output tiles and the matrix peaks beside its own."""

    work: Work
    chip: Chip

    def lines(self, roof: Roofline) -> list[str]:
        """Its shape's tile and wave quantisation, and faster dtypes the chip has."""
        lines = []
        tiles, units = self.work.tiles, self.chip.compute_units
        if tiles and self.work.tile_fill < TILE_FILL_WORTH_NAMING:
            lines.append(
                f"Tile quantisation: the output is cut into {tiles:,} tiles of {TILE[0]} x "
                f"{TILE[1]}, only {_percent(self.work.tile_fill)} of them output, the rest "
                f"padding: m and n in multiples of {TILE[0]} waste none."
            )
        if tiles and units and tiles < units:
            lines.append(
                f"Wave quantisation: {tiles:,} tiles keep {tiles:,} of the {units:,} compute "
                f"units busy ({_percent(fill(tiles, 1.0, units))}): a larger output (batch "
                "several products into one) or a split-K kernel fills the chip."
            )
        own = roof.peak.flops_per_s
        for dtype in _FASTER.get(self.work.dtype, ()):
            peak = self.chip.matrix_peaks.get(dtype)
            if peak is not None and peak > own:
                how = " (torch.backends.cuda.matmul.allow_tf32)" if dtype is Dtype.TF32 else ""
                lines.append(
                    f"In {dtype}{how} the matrix peak is {fmt.rate(peak, 'FLOP/s')}, "
                    f"{_times(peak / own)} the {fmt.rate(own, 'FLOP/s')} this {roof.peak.dtype} "
                    "matmul runs at, where accuracy allows."
                )
        return lines


@dataclass(frozen=True, slots=True)
class Chain:
    """An elementwise chain of `ops` ops and its ideal time fused into one kernel."""

    ops: int
    fused: bool
    fused_time: float
    dtype: Dtype

    def lines(self, roof: Roofline) -> list[str]:
        """Fusion when each op is its own kernel and fusing saves time, less arithmetic per
        element when the chain is bound by it, else a narrower dtype."""
        if not self.fused and self.ops > 1 and self.fused_time < roof.expected_time:
            return [
                f"Each of the {self.ops} ops is its own kernel, writing its result for the next "
                f"to read back: fused into one (torch.compile, a hand-written kernel) the chain "
                f"takes {fmt.seconds(self.fused_time)} ideally instead of "
                f"{fmt.seconds(roof.expected_time)}."
            ]
        if roof.roof is Bound.COMPUTE:
            return [
                "The chain is bound by its arithmetic, not its bytes: fusing saves bytes, not "
                "arithmetic. On a GPU, PyTorch evaluates exp, cos, tanh and erf with precise "
                "routines, each the work of many multiply-adds; fewer of them per element, or "
                "the fast intrinsics (__expf, __cosf), cut the time."
            ]
        if roof.roof is Bound.MEMORY and self.dtype is Dtype.FP32:
            return [
                f"The chain is memory-bound on its {self.dtype} tensors: in bf16 it moves half "
                "the bytes."
            ]
        return []


def score_bytes(result: TransformerEstimate) -> float:
    """The bytes a forward pass's scores move without a fused attention kernel (its
    `attention_scores` term; none with one)."""
    return sum(t.bytes for t in result.terms if t.name == SCORES_TERM)


@dataclass(frozen=True, slots=True)
class Scores:
    """A forward pass without a fused attention kernel: the bytes its scores move."""

    score_bytes: float

    def lines(self, roof: Roofline) -> list[str]:
        """What the scores' round trips through memory cost, and what keeps them on chip."""
        if not self.score_bytes:
            return []
        return [
            "Without a fused attention kernel every score goes through memory in fp32: "
            f"{fmt.bytes_(self.score_bytes)}, {_percent(self.score_bytes / roof.bytes)} of the "
            "bytes moved. A flash kernel (FlashAttention, PyTorch's scaled_dot_product_attention, "
            "llama.cpp's -fa) keeps them on chip: see what_if's flash_attention_on."
        ]


@dataclass(frozen=True, slots=True)
class Decode:
    """A decode step: its batch, its weights', KV cache's and scores' bytes and dtypes."""

    batch: int
    weight_bytes: float
    kv_bytes: float
    weight_dtype: Dtype
    kv_dtype: Dtype
    fp8: bool  # the chip has an fp8 matrix peak
    max_batch: int  # the largest batch that fits the chip's memory at this layout
    scores: Scores = Scores(0.0)

    @classmethod
    def of(
        cls, result: TransformerEstimate, spec: TransformerSpec, chip: Chip, max_batch: int
    ) -> Decode:
        """A decode step's facts from its estimate: the attention term moves the KV cache, the
        scores' term (without a flash kernel) the scores, every other term the weights
        (decode_terms); `max_batch`, the largest that fits."""
        kv = sum(t.bytes for t in result.terms if t.name == "attention")
        scores = score_bytes(result)
        return cls(
            spec.batch,
            result.roofline.bytes - kv - scores,
            kv,
            spec.precision.weights,
            spec.precision.kv,
            Dtype.FP8 in chip.matrix_peaks,
            max_batch,
            Scores(scores),
        )

    def lines(self, roof: Roofline) -> list[str]:
        """The batch against the ridge, weight quantisation, the KV cache's dtype, the
        scores."""
        lines = self.scores.lines(roof)
        if roof.roof is Bound.MEMORY:
            larger = (
                f"a larger batch, up to the {self.max_batch:,} that fit (see /optimal-batch), "
                "raises the tokens per second almost for free until the ridge."
                if self.max_batch > self.batch
                else f"batch {self.batch:,} is already the largest that fits: freeing memory "
                "(narrower weights or KV cache, more chips) lets a larger batch raise the "
                "tokens per second."
            )
            lines.append(
                f"At batch {self.batch:,} each step reads all the weights for "
                f"{_sequences(self.batch)}: {fmt.number(roof.arithmetic_intensity)} FLOP/B "
                f"against the chip's ridge of {fmt.number(roof.ridge_intensity)}: {larger}"
            )
        total = self.weight_bytes + self.kv_bytes + self.scores.score_bytes
        if total and dtype_bytes(self.weight_dtype) > dtype_bytes(Dtype.INT8):
            lines.append(
                f"The weights are {_percent(self.weight_bytes / total)} of the bytes a step "
                f"moves, in {self.weight_dtype}: weight-only quantisation (AWQ, GPTQ) to int8 "
                f"cuts them to {_fraction(Dtype.INT8, self.weight_dtype)}, to int4 to "
                f"{_fraction(Dtype.INT4, self.weight_dtype)}."
            )
        if total and self.fp8 and dtype_bytes(self.kv_dtype) > dtype_bytes(Dtype.FP8):
            lines.append(
                f"The KV cache is {_percent(self.kv_bytes / total)} of them, in "
                f"{self.kv_dtype}: an fp8 KV cache cuts it to "
                f"{_fraction(Dtype.FP8, self.kv_dtype)}."
            )
        return lines


@dataclass(frozen=True, slots=True)
class Training:
    """A training step: its layout, collectives and recomputation."""

    step: TrainingStep
    overlap: bool
    recompute: bool

    def lines(self, roof: Roofline) -> list[str]:
        """Data-parallel overlap, micro-batches against the bubble, recomputation."""
        comm, lay = self.step.communication, self.step.layout
        lines = []
        if comm.data_parallel:
            what = (
                "overlap it with the backward pass (overlap=true, bucketed DDP or FSDP)"
                if not self.overlap
                else "it outlasts the backward pass: a faster network or fewer bytes (bf16 "
                "gradients, ZeRO's reduce-scatter) would hide it"
                if comm.data_parallel_exposed
                else "it hides behind the backward pass"
            )
            lines.append(
                f"The gradient reduction takes {fmt.seconds(comm.data_parallel)} a step, "
                f"{fmt.seconds(comm.data_parallel_exposed)} of it exposed: {what}."
            )
        if lay.pp > 1:
            doubled = replace(lay, micro_batches=2 * lay.micro_batches)
            lines.append(
                f"At {lay.micro_batches:,} micro-batches over {lay.pp} pipeline stages the "
                f"pipeline idles {_percent(lay.bubble_fraction)} of the step: "
                f"{2 * lay.micro_batches:,} micro-batches would cut it to "
                f"{_percent(doubled.bubble_fraction)}."
            )
        if self.recompute:
            lines.append(
                "Full activation recomputation runs the forward pass twice, a third more "
                "FLOPs: turn it off, or recompute selectively, where memory allows."
            )
        return lines


@dataclass(frozen=True, slots=True)
class HostCopy:
    """A copy between host and device memory: from pinned memory or not, and how long the
    pinned copy would take."""

    pinned: bool
    pinned_time: float

    def lines(self, roof: Roofline) -> list[str]:
        """Pinned memory, overlap with compute, fewer bytes."""
        lines = []
        if not self.pinned:
            lines.append(
                "The host memory is pageable: the driver stages it through a pinned buffer. "
                "Pinned (tensor.pin_memory(), DataLoader(pin_memory=True)), the copy takes "
                f"{fmt.seconds(self.pinned_time)} instead of {fmt.seconds(roof.realistic_time)}."
            )
        lines.append(
            "Hide it: from pinned memory, .to(device, non_blocking=True) lets the next step's "
            "compute run while it copies; or move fewer bytes: keep the data on the device "
            "between steps, copy it in a narrower dtype."
        )
        return lines


@dataclass(frozen=True, slots=True)
class Fed:
    """Work fed by an input pipeline: where the pipeline is the slower, what fits the stage
    that limits it and prefetching, then the work's own advice (`own`)."""

    limit: Limit
    own: WorkFacts | None = None

    def lines(self, roof: Roofline) -> list[str]:
        """The limiting stage's advice where the work is input-bound, then the work's own."""
        own = [] if self.own is None else self.own.lines(roof)
        return [ADVICE[self.limit], PREFETCH, *own] if roof.bound is Bound.INPUT else own


WorkFacts = Gemm | Chain | Decode | Scores | Training | HostCopy | Fed


@dataclass(frozen=True, slots=True)
class BestChange:
    """The what-if change with the best realistic speed-up, and the realistic times per unit
    of the same work before and after it."""

    change: str
    speedup: float
    before: float
    after: float
    per_token: bool = False

    def line(self) -> str:
        """'weights in int8: 1.8x faster (realistic 4.2 ms -> 2.3 ms)'."""
        same = " for the same tokens" if self.per_token else ""
        return (
            f"{self.change}: {_times(self.speedup)} faster (realistic "
            f"{fmt.seconds(self.before)} -> {fmt.seconds(self.after)}{same})."
        )


def work_lines(roof: Roofline, work: WorkFacts | None, best: BestChange | None) -> list[str]:
    """The best change (when it is faster) and the advice specific to the work."""
    lines = [best.line()] if best is not None and best.speedup > 1 else []
    return lines + ([] if work is None else work.lines(roof))
