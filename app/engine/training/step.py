"""The time of one training step: its roofline per chip, the pipeline bubble and the exposed
communication (docs/formulas.md, "Training")."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.architecture import Architecture, param_counts
from app.engine.breakdown import Term, overlapped_busy
from app.engine.errors import InvalidInput
from app.engine.hardware import Chip
from app.engine.published import Fitted, fitted
from app.engine.realism import realistic_communication
from app.engine.roofline import (
    WIDE,
    Bound,
    Roofline,
    on_the_roofs,
    place,
    roofline_time,
)
from app.engine.stacks import Kind, Software
from app.engine.training.collectives import Communication, communication
from app.engine.training.footprint import (
    Trainable,
    lora_params,
    micro_batch_activations,
    optimizer_traffic_per_param,
    trainable,
    zero_divisors,
)
from app.engine.training.layout import Layout, layout
from app.engine.training.options import Lora, Training
from app.engine.transformer import Precision, prefill_terms, residual_bytes, work_of
from app.engine.units import Dtype, dtype_bytes


@dataclass(frozen=True, slots=True)
class TrainingStep:
    """One optimizer step over all chips, seen from one chip, and the run it is part of."""

    roofline: Roofline  # per chip; realistic_time uses the given MFU when there is one
    layout: Layout
    communication: Communication
    params: Trainable  # this chip's share of the stored and trained parameters
    model_flops: float  # whole step, all chips: 6 N T + attention (no recomputation)
    trained_params: float  # whole model
    tokens_per_step: float
    tokens: float | None  # to train on
    # one micro-batch's activations: (those its stage's layers save, its logits), bytes
    activations: tuple[float, float]
    given_mfu: float | None = None  # the MFU the realistic time assumes, when one was given
    terms: tuple[Term, ...] = ()  # the step by operation: its FLOPs and bytes add up to these

    def mfu(self, time: float) -> float:
        """Model FLOPs utilisation of a step taking `time`: model FLOPs / (chips x peak x time)."""
        return self.model_flops / (self.layout.chips * self.roofline.peak.flops_per_s * time)

    def time_to_train(self, time: float) -> float | None:
        """Seconds to train on `tokens` at `time` per step: tokens / tokens per step x time."""
        return None if self.tokens is None else self.tokens / self.tokens_per_step * time


@dataclass(frozen=True, slots=True)
class StepPlan:
    """A training step of one batch before it is laid out on chips: what it is at any layout
    (a scaling curve plans its batch once, then lays the plan out at each chip count)."""

    arch: Architecture
    chip: Chip
    seq_len: int
    precision: Precision
    training: Training
    flash: bool
    recompute: bool
    reads: int  # weight reads per micro-batch: forward, backward (and a recomputed forward)
    passes: int  # the forward's FLOPs over the step: reads, plus the weight gradients
    named: tuple[tuple[str, int | float], ...]  # the (name, count) of the forward's terms
    flops_x_passes: tuple[float, ...]  # their FLOPs x passes, whole batch
    trained: float  # parameters trained, whole model
    adapters: float  # LoRA's adapter FLOPs, whole batch (6 P_lora per token)
    model_flops: float  # 6 N T + attention (no recomputation)
    tokens: int  # per step: the batch's sequences x their length
    published: Fitted  # the ratio published training runs on the stack reach


def step_plan(
    arch: Architecture,
    chip: Chip,
    *,
    batch: int,
    seq_len: int,
    precision: Precision,
    training: Training,
    flash: bool,
    recompute: bool,
    software: Software,
) -> StepPlan:
    """The plan of a training step of `batch` sequences (FLOPs as `step_on` counts them)."""
    reads = 3 if recompute else 2
    passes = reads + (1 if training.lora is None else 0)
    named, flops_x_passes, forward, trained = _forward_pass(
        arch,
        batch,
        seq_len,
        precision,
        training.lora,
        passes=passes,
        attention=attention_passes(reads, flash=flash),
        flash=flash,
    )
    tokens = batch * seq_len
    adapters = 0.0 if training.lora is None else 6.0 * trained * tokens
    return StepPlan(
        arch=arch,
        chip=chip,
        seq_len=seq_len,
        precision=precision,
        training=training,
        flash=flash,
        recompute=recompute,
        reads=reads,
        passes=passes,
        named=named,
        flops_x_passes=flops_x_passes,
        trained=trained,
        adapters=adapters,
        model_flops=forward * (passes - (1 if recompute else 0)) + adapters,
        tokens=tokens,
        published=fitted(Kind.TRAINING, software, chip.backend)[0],
    )


def training_step(
    arch: Architecture,
    chip: Chip,
    *,
    batch: int,
    seq_len: int,
    precision: Precision,
    tp: int,
    training: Training,
    flash: bool,
    recompute: bool,
    software: Software = Software.TYPICAL,
    breakdown: bool = True,
) -> TrainingStep:
    """The roofline of one training step per chip, with its pipeline bubble and communication:
    `step_on` the layout of `batch` over `tp` and `training`'s parallel degrees."""
    lay = layout(arch, tp, batch, training.parallel)
    plan = step_plan(
        arch,
        chip,
        batch=batch,
        seq_len=seq_len,
        precision=precision,
        training=training,
        flash=flash,
        recompute=recompute,
        software=software,
    )
    return step_on(plan, lay, breakdown)


def step_on(plan: StepPlan, lay: Layout, breakdown: bool) -> TrainingStep:
    """One training step of `plan` laid out as `lay` (`layout`'s, whose degrees stand for
    the plan's `training.parallel`'s).

    FLOPs: the forward F (the prefill count over all B S tokens), x3 for forward and backward
    (x4 with recomputation); LoRA's frozen weights need no weight gradients, x2 (x3), plus
    6 P_lora per token for the adapters; attention's share x `attention_passes` (3.5 with a
    flash kernel, which recomputes its scores); split evenly over the chips. Bytes per chip: its
    weights read per micro-batch in the forward and the backward pass (and the recomputed
    forward), the optimizer update of its (ZeRO-sharded) trained parameters, the saved
    activations written then read, and the residual stream of each pass. Time: the roofline of
    that work stretched by the pipeline bubble, m / (m + p - 1) busy, plus exposed communication.
    Without `breakdown` the step has no terms (a scaling curve reads only its times).
    """
    arch, chip, training, seq_len = plan.arch, plan.chip, plan.training, plan.seq_len
    dtype = plan.precision.compute
    recompute, reads, passes = plan.recompute, plan.reads, plan.passes
    params = trainable(arch, dtype, lay, training.lora)
    # the fullest pipeline stage's share, over the chips of one stage (all chips when p | L)
    share = lay.chips // lay.pp * lay.pipeline_split
    # the FLOPs of the step's terms (those of `named`, then the adapters) and its (name,
    # count, bytes): the work is their sum, and the breakdown, when asked for, these as Terms
    named = plan.named
    computed = [flops / share for flops in plan.flops_x_passes]
    if plan.adapters:
        computed.append(plan.adapters / share)
        named = (*named, ("lora_adapters", arch.layers))
    _, _, o_div = zero_divisors(training.parallel.zero, lay.replicas)
    micro_tokens = lay.micro_batch * seq_len / lay.cp  # this chip's share of the sequences
    # one micro-batch's activations and logits, written in the forward, read in the backward
    activations = micro_batch_activations(
        arch, lay, seq_len=seq_len, dtype=dtype, flash=plan.flash, recompute=recompute
    )
    micro = lay.micro_batches
    weight_reads = micro * reads * params.base_bytes
    saved = micro * 2 * sum(activations)
    residual = micro * passes * residual_bytes(arch, micro_tokens, dtype) / lay.pipeline_split
    update = params.trained / o_div * optimizer_traffic_per_param(training.optimizer, dtype)
    moved = (
        ("weight_reads", micro * reads, weight_reads),
        ("saved_activations", micro, saved),
        ("residual_stream", arch.layers, residual),
        ("optimizer_update", 1, update),
    )
    # in a step narrower than 16 bits, attention's products stay at 16 bits (`wide`)
    kernels = (
        *(
            Term(
                name,
                count,
                flops,
                wide=name == "attention" and attention_at_wide(dtype),
                flash=plan.flash and name == "attention",
            )
            for (name, count), flops in zip(named, computed, strict=True)
        ),
        *(Term(name, count, bytes=moved_bytes) for name, count, moved_bytes in moved),
    )
    work = work_of(kernels, plan.precision)

    _, compute_time, memory_time = on_the_roofs(work, chip)
    busy = roofline_time(compute_time, memory_time)  # the compute and memory terms, overlapped
    comm = communication(
        arch,
        chip,
        lay,
        params,
        seq_len=seq_len,
        dtype=dtype,
        training=training,
        recompute=recompute,
        backward_time=busy * (passes - 1) / passes,
    )
    stretch = 1 / (1 - lay.bubble_fraction)
    roof = place(work, chip, comm.exposed, stretch)
    # its kernels' sustained time, attention's at the pace its kernels reach, stretched
    roof = roof.with_busy(stretch * overlapped_busy(kernels, roof, chip))
    terms: tuple[Term, ...] = ()
    if breakdown:
        idle = roof.expected_time - comm.exposed - busy if lay.bubble_fraction else 0.0
        terms = (*kernels, *_beside_the_roofs(comm, roof, idle))
    if training.mfu is None:
        realized = _published(roof, plan)
    else:
        if not 0 < training.mfu <= 1:
            raise InvalidInput("mfu", f"must be > 0 and <= 1, got {training.mfu}")
        at_mfu = _time_at_mfu(plan.model_flops, lay.chips, roof, training.mfu)
        realized = roof.realized(at_mfu, at_mfu, at_mfu)
    return TrainingStep(
        roofline=realized,
        layout=lay,
        communication=comm,
        params=params,
        model_flops=plan.model_flops,
        trained_params=plan.trained,
        tokens_per_step=plan.tokens,
        tokens=training.tokens,
        activations=activations,
        given_mfu=training.mfu,
        terms=terms,
    )


def attention_at_wide(dtype: Dtype) -> bool:
    """Whether a training step in `dtype` keeps attention's score and value products at 16
    bits (`WIDE`): in one narrower than that, as fp8 training libraries (Transformer Engine,
    torchao.float8) run only the linear layers' GEMMs in fp8 and leave attention to a bf16
    kernel (docs/formulas.md#fp8-training)."""
    return dtype_bytes(dtype) < dtype_bytes(WIDE)


def _time_at_mfu(model_flops: float, chips: int, roof: Roofline, mfu: float) -> float:
    """The step time at which `chips` doing `model_flops` reach `mfu` of `roof`'s peak:
    model FLOPs / (chips x peak x MFU)."""
    return model_flops / (chips * roof.peak.flops_per_s * mfu)


# A flash attention's backward in forwards: the recomputed scores and the four gradient
# products (`attention_passes`)
FLASH_BACKWARD = 2.5


def attention_passes(reads: int, *, flash: bool) -> float:
    """Attention's FLOPs over a training step, in forward passes, for `reads` passes over the
    weights (forward, backward, and a recomputed forward where there is one): each forward
    once, then the backward. Attention has no weights, so its backward is the same with or
    without weight gradients: dV = P^T dO, dP = dO V^T, dQ = dS K and dK = dS^T Q, four
    products where the forward has two (Q K^T and P V). A flash kernel stored no scores, so
    its backward first recomputes Q K^T: five products, 2.5 forwards (Dao 2023, FlashAttention-2,
    https://arxiv.org/abs/2307.08691, Algorithm 2; its benchmark counts a backward as 2.5
    forwards)."""
    backward = FLASH_BACKWARD if flash else 2.0
    return reads - 1 + backward


def _forward_pass(
    arch: Architecture,
    batch: int,
    seq_len: int,
    precision: Precision,
    lora: Lora | None,
    *,
    passes: int,
    attention: float,
    flash: bool,
) -> tuple[tuple[tuple[str, int | float], ...], tuple[float, ...], float, float]:
    """The forward pass over the step's B S tokens, the same at any layout: the (name, count)
    of its terms with FLOPs, their FLOPs over the step (x `passes`, attention's x `attention`:
    `attention_passes`), its FLOPs, and the parameters trained, whole model."""
    forward = prefill_terms(arch, batch, seq_len, precision, tp=1, flash=flash)
    forward_terms = [t for t in forward if t.flops]
    flops = [t.flops for t in forward_terms]
    trained = float(param_counts(arch).total)
    if lora is not None:
        trained = sum(lora_params(arch, lora))
    return (
        tuple([(t.name, t.count) for t in forward_terms]),
        tuple([t.flops * (attention if t.name == "attention" else passes) for t in forward_terms]),
        sum(flops),
        trained,
    )


def _beside_the_roofs(comm: Communication, roof: Roofline, idle: float) -> list[Term]:
    """The step's time beside its FLOPs and bytes: each collective on the critical path, and
    the pipeline's idle slots (at the step's own roof)."""
    collectives = (
        ("tp_allreduce", comm.tensor_parallel),
        ("pp_send_recv", comm.pipeline),
        ("ep_all_to_all", comm.expert),
        ("cp_ring", comm.context_parallel),
        ("dp_gradient_sync", comm.data_parallel_exposed),
    )
    terms = [
        Term(name, 1, seconds=seconds, regime=Bound.COMMUNICATION)
        for name, seconds in collectives
        if seconds
    ]
    if idle:
        terms.append(Term("pipeline_bubble", 1, seconds=idle, regime=roof.roof))
    return terms


def _published(roof: Roofline, plan: StepPlan) -> Roofline:
    """The step's roofline `roof` with the realistic time published training runs reach: their
    ratio to the step's work at the chip's sustained rates (every FLOP it runs, recomputation
    included, as the published runs' ratios are measured: app/validation), stretched by the
    pipeline's bubble, plus this layout's exposed communication at the bandwidth collectives
    reach; never faster than the step's own sustained time (bubble and communication
    included)."""
    published = plan.published
    basis = roof.realistic_time - roof.communication_time  # sustained, bubble included
    communication = realistic_communication(roof)

    realistic = max(basis * published.ratio + communication, roof.realistic_time)
    return roof.realized(realistic, *published.around(realistic, roof.realistic_time))
