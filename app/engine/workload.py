"""Transformer workloads on a chip: the roofline, memory and rates of one request.

This composes the per-phase costs (transformer.py), communication (parallel.py) and memory
(memory.py) into the answer a user asks for; every formula lives in those modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from app.engine.architecture import Architecture
from app.engine.breakdown import Term
from app.engine.errors import InvalidInput
from app.engine.hardware import Chip
from app.engine.memory import MemoryBreakdown, inference_memory
from app.engine.parallel import tensor_parallel_time
from app.engine.realism import Realism, realize, step_kernels
from app.engine.roofline import Bound, Roofline
from app.engine.stacks import FINE_MOE, GENERATION_PHASES, Backend, Kind, Software
from app.engine.steps import combine, place_pass, place_steps
from app.engine.training import (
    Layout,
    Training,
    TrainingStep,
    layout,
    training_memory,
    training_step,
)
from app.engine.transformer import (
    Phase,
    Precision,
    decode_terms,
    prefill_terms,
)

MAX_BATCH = 2**40  # far beyond any memory; keeps every product finite
MAX_TOKENS = 2**40


@dataclass(frozen=True, slots=True)
class TransformerSpec:
    """A transformer workload: what runs, at which sizes and precisions, on how many chips.

    `seq_len` is the context length in decode, the prompt length in prefill and generate,
    and the sequence length in training. `reserve_fraction` of each chip's memory is held
    back for the runtime (CUDA context, allocator fragmentation): vLLM's default
    gpu_memory_utilization of 0.9 leaves 0.1.
    """

    phase: Phase = Phase.DECODE
    batch: int = 1
    seq_len: int = 2048
    gen_len: int = 256
    precision: Precision = field(default_factory=Precision)
    tp: int = 1
    reserve_fraction: float = 0.1
    flash_attention: bool = True
    recompute: bool = False
    training: Training = field(default_factory=Training)
    software: Software = Software.TYPICAL

    def with_batch(self, batch: int) -> TransformerSpec:
        """The same workload at another batch size (itself at its own: it is immutable)."""
        return self if batch == self.batch else replace(self, batch=batch)


@dataclass(frozen=True, slots=True)
class TransformerEstimate:
    """Expected time, memory and rates of a transformer workload, per chip."""

    roofline: Roofline
    memory: MemoryBreakdown
    capacity: float
    tokens: float  # tokens produced (decode, generate) or processed (prefill, training)
    time_to_first_token: float | None
    time_per_output_token: float | None
    training: TrainingStep | None = None
    # the step by operation (prefill, decode, training; none for generate): their FLOPs and
    # bytes add up to the roofline's (docs/formulas.md#breakdown)
    terms: tuple[Term, ...] = ()

    @property
    def fits(self) -> bool:
        """Whether the memory needed fits on each chip."""
        return self.memory.fits_in(self.capacity)

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second from the ideal roofline time."""
        return self.tokens / self.roofline.expected_time

    @property
    def realistic_tokens_per_s(self) -> float:
        """Tokens per second from the realistic (sustained-fraction) time."""
        return self.tokens / self.roofline.realistic_time


_ONE_PASS = (Phase.PREFILL, Phase.DECODE)  # the phases that are one forward pass


def check_batch(batch: int) -> None:
    """A batch `estimate` takes: 1 to MAX_BATCH sequences."""
    if not 1 <= batch <= MAX_BATCH:
        raise InvalidInput("batch", f"must be between 1 and {MAX_BATCH}, got {batch}")


def validate(arch: Architecture, spec: TransformerSpec) -> None:
    """Raise InvalidInput, naming the field, for a spec `estimate` cannot take: its batch
    first, then its lengths, reserve, phase and dtypes (the layout's degrees are `layout`'s)."""
    check_batch(spec.batch)
    for name, value in (("seq_len", spec.seq_len), ("gen_len", spec.gen_len)):
        if not 1 <= value <= MAX_TOKENS:
            raise InvalidInput(name, f"must be between 1 and {MAX_TOKENS}, got {value}")
    if not 0 <= spec.reserve_fraction < 1:
        raise InvalidInput("reserve_fraction", "must be >= 0 and < 1")
    if not arch.causal and spec.phase in (Phase.DECODE, Phase.GENERATE):
        raise InvalidInput(
            "phase", "an encoder (e.g. BERT) has no decode phase; use prefill or training"
        )
    if spec.phase is Phase.TRAINING and spec.precision.weights != spec.precision.compute:
        raise InvalidInput(
            "weight_dtype", "training keeps weights in the compute dtype; leave weight_dtype unset"
        )
    _validate_sparsity(spec)


def _validate_sparsity(spec: TransformerSpec) -> None:
    """2:4 sparse weights are an inference setting, stored in the compute dtype that the
    sparse tensor cores multiply (docs/formulas.md#structured-sparsity)."""
    if not spec.precision.sparse:
        return
    if spec.phase is Phase.TRAINING:
        raise InvalidInput(
            "sparsity",
            "2:4 sparsity is for inference (prefill, decode, generate): 2:4 weights come from "
            "pruning a trained model and retraining it with the mask, steps whose GEMMs are "
            "dense; leave sparsity unset",
        )
    if spec.precision.weights != spec.precision.compute:
        raise InvalidInput(
            "sparsity",
            f"2:4 sparse weights are stored in the compute dtype ({spec.precision.compute}) "
            f"that the sparse tensor cores multiply, not {spec.precision.weights}; set "
            "weight_dtype to the dtype, or leave sparsity unset",
        )


def _forward_comm(arch: Architecture, chip: Chip, tokens: float, spec: TransformerSpec) -> float:
    return tensor_parallel_time(
        arch, chip, tokens=tokens, dtype=spec.precision.compute, tp=spec.tp, allreduces_per_layer=2
    )


def _forward(
    arch: Architecture, chip: Chip, spec: TransformerSpec
) -> tuple[Roofline, tuple[Term, ...], int]:
    """A forward pass, a prefill (B S tokens) or a decode step (B tokens), from its terms: its
    roofline with the tensor-parallel all-reduces, the terms with them, and its tokens."""
    if spec.phase is Phase.PREFILL:
        tokens = spec.batch * spec.seq_len
        terms = prefill_terms(
            arch, spec.batch, spec.seq_len, spec.precision, spec.tp, flash=spec.flash_attention
        )
    else:
        tokens = spec.batch
        terms = decode_terms(
            arch, spec.batch, spec.seq_len, spec.precision, spec.tp, flash=spec.flash_attention
        )
    comm = _forward_comm(arch, chip, tokens, spec)
    roof = place_pass(terms, spec.precision, chip, comm)
    if comm:
        terms = [
            *terms,
            Term("tp_allreduce", 2 * arch.layers, seconds=comm, regime=Bound.COMMUNICATION),
        ]
    return roof, tuple(terms), tokens


def _decode_steps(arch: Architecture, chip: Chip, spec: TransformerSpec) -> Roofline:
    """Decode steps at contexts P .. P+G-1, summed in closed form (generate in
    docs/formulas.md#transformer-workloads)."""
    window = arch.attention.sliding_window

    def step(context: int) -> list[Term]:
        return decode_terms(
            arch, spec.batch, context, spec.precision, spec.tp, flash=spec.flash_attention
        )

    return place_steps(
        step,
        spec.precision,
        spec.seq_len,
        spec.seq_len + spec.gen_len - 1,
        chip,
        communication_per_step=_forward_comm(arch, chip, spec.batch, spec),
        breakpoints=(window,) if window else (),
    )


def _training(
    arch: Architecture, chip: Chip, spec: TransformerSpec, breakdown: bool
) -> TrainingStep:
    return training_step(
        arch,
        chip,
        batch=spec.batch,
        seq_len=spec.seq_len,
        precision=spec.precision,
        tp=spec.tp,
        training=spec.training,
        flash=spec.flash_attention,
        recompute=spec.recompute,
        software=spec.software,
        breakdown=breakdown,
    )


def memory_needed(
    arch: Architecture, chip: Chip, spec: TransformerSpec, batch: float
) -> MemoryBreakdown:
    """Memory per chip of `spec` at `batch` (a float, so that it can be probed at 0); a chip
    without the 2:4 sparse rate of the compute dtype refuses sparse weights (on `sparsity`)."""
    if spec.precision.sparse:
        chip.sparse_peak(spec.precision.compute)
    if spec.phase is Phase.TRAINING:
        lay = layout(arch, spec.tp, spec.batch, spec.training.parallel)
        return training_memory_needed(arch, chip, spec, batch, lay)
    if spec.phase is Phase.DECODE:  # the cache, and the token the step adds
        held, step_tokens = spec.seq_len + 1, 1
    elif spec.phase is Phase.PREFILL:
        held, step_tokens = spec.seq_len, spec.seq_len
    else:  # the prompt and every new token
        held, step_tokens = spec.seq_len + spec.gen_len, spec.seq_len
    return inference_memory(
        arch,
        batch=batch,
        context=held,
        step_tokens=step_tokens,
        precision=spec.precision,
        tp=spec.tp,
        reserve=spec.reserve_fraction * chip.memory_bytes,
    )


def training_memory_needed(
    arch: Architecture,
    chip: Chip,
    spec: TransformerSpec,
    batch: float,
    lay: Layout,
) -> MemoryBreakdown:
    """Training memory per chip of `spec` at `batch`, laid out as `lay` (`memory_needed`'s
    layout, or that at another tp or pp): at its micro-batches per replica, each micro-batch
    grows with the batch."""
    micro = batch / (lay.batch_shares * lay.micro_batches)
    if micro != lay.micro_batch:  # not the layout's own batch
        lay = replace(lay, micro_batch=micro)
    return training_memory(
        arch,
        lay,
        seq_len=spec.seq_len,
        dtype=spec.precision.compute,
        training=spec.training,
        flash=spec.flash_attention,
        recompute=spec.recompute,
        reserve=spec.reserve_fraction * chip.memory_bytes,
    )


PHASE_KIND = {
    Phase.DECODE: Kind.DECODE,
    Phase.PREFILL: Kind.PREFILL,
    Phase.GENERATE: Kind.GENERATE,
    Phase.TRAINING: Kind.TRAINING,
}


def work_kind(arch: Architecture, phase: Phase) -> Kind:
    """The kind of work whose published runs price `phase` of `arch`: the phase's, its
    fine-grained-experts refinement for a model whose experts are
    (`Architecture.fine_grained_experts`)."""
    kind = PHASE_KIND[phase]
    return FINE_MOE.get(kind, kind) if arch.fine_grained_experts else kind


def _realism(
    kind: Kind,
    arch: Architecture,
    spec: TransformerSpec,
    backend: Backend | None,
    forwards: int = 1,
) -> Realism:
    """How `forwards` forward passes run on the spec's software on `backend`: their kernels,
    and, under tensor parallelism, the two all-reduces of every layer (Shoeybi et al. 2019)."""
    tp_collectives = 2 * arch.layers if spec.tp > 1 else 0
    return Realism(
        kind,
        spec.software,
        kernels=step_kernels(arch, spec.software, flash=spec.flash_attention) * forwards,
        steps=forwards,
        collectives=tp_collectives * forwards,
        across_nodes=spec.tp > spec.training.parallel.chips_per_node,
        backend=backend,
    )


def pass_realism(arch: Architecture, spec: TransformerSpec, backend: Backend | None) -> Realism:
    """How one forward pass of `spec`, a prefill or a decode step, runs on its software on
    `backend`."""
    return _realism(work_kind(arch, spec.phase), arch, spec, backend)


def generation(
    arch: Architecture, chip: Chip, spec: TransformerSpec
) -> tuple[Roofline, Roofline, Realism]:
    """A generate request of `spec` on `chip` (as its software runs it: `Chip.run_by`): its
    prefill and its decode steps, placed, and how it runs: the launches of all its forward
    passes, each phase priced by its own kind's published runs (GENERATION_PHASES)."""
    first = _forward(arch, chip, replace(spec, phase=Phase.PREFILL))[0]
    steps = _decode_steps(arch, chip, spec)
    kind = work_kind(arch, spec.phase)
    busy = [phase.realistic_time - phase.communication_time for phase in (first, steps)]
    realism = replace(
        _realism(kind, arch, spec, chip.backend, forwards=1 + spec.gen_len),
        phases=tuple(zip(GENERATION_PHASES[kind], busy, strict=True)),
    )
    return first, steps, realism


def ideal_pass(arch: Architecture, chip: Chip, spec: TransformerSpec) -> TransformerEstimate:
    """`estimate` of a prefill or a decode step without what real software adds: the ideal and
    sustained roofline, memory and tokens, the realistic time left at the sustained one and
    no time to first or per output token; for a search that applies the published ratio and
    fixed costs itself (`Practice`)."""
    if spec.phase not in _ONE_PASS:
        raise ValueError("an ideal pass is a prefill or a decode step")
    validate(arch, spec)
    chip = chip.run_by(spec.software)
    roof, terms, tokens = _forward(arch, chip, spec)
    return TransformerEstimate(
        roofline=roof,
        memory=memory_needed(arch, chip, spec, spec.batch),
        capacity=chip.memory_bytes,
        tokens=tokens,
        time_to_first_token=None,
        time_per_output_token=None,
        terms=terms,
    )


def estimate(
    arch: Architecture, chip: Chip, spec: TransformerSpec, *, breakdown: bool = True
) -> TransformerEstimate:
    """Roofline time, memory and token rates of `spec` running `arch` on `chip`; a training
    step without `breakdown` has no terms (which a scaling curve of many steps never reads);
    at the fastest accumulate mode the spec's software uses on the chip (`Chip.run_by`)."""
    validate(arch, spec)
    chip = chip.run_by(spec.software)
    ttft = tpot = step = None
    terms: tuple[Term, ...] = ()
    if spec.phase in _ONE_PASS:
        roof, terms, tokens = _forward(arch, chip, spec)
        if spec.phase is Phase.PREFILL:
            ttft = roof.expected_time
        else:
            tpot = roof.expected_time
        roof = realize(roof, pass_realism(arch, spec, chip.backend))
    elif spec.phase is Phase.GENERATE:
        first, steps, realism = generation(arch, chip, spec)
        tokens = spec.batch * spec.gen_len
        ttft = first.expected_time
        tpot = steps.expected_time / spec.gen_len
        roof = realize(combine(first, steps), realism)
    else:
        step = _training(arch, chip, spec, breakdown)
        roof = step.roofline
        tokens = spec.batch * spec.seq_len
        terms = step.terms
    # a training step's memory on the layout it was laid out on (memory_needed's own)
    memory = (
        memory_needed(arch, chip, spec, spec.batch)
        if step is None
        else training_memory_needed(arch, chip, spec, spec.batch, step.layout)
    )
    return TransformerEstimate(
        roofline=roof,
        memory=memory,
        capacity=chip.memory_bytes,
        tokens=tokens,
        time_to_first_token=ttft,
        time_per_output_token=tpot,
        training=step,
        terms=terms,
    )
