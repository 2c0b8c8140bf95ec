"""Training and fine-tuning: memory per chip, the time of one step, and its communication.

The formulas are derived in docs/formulas.md ("Training"); the sources are cited where each is
used. Chips are laid out Megatron-style, innermost first: tensor (tp), expert (ep), data (dp),
pipeline (pp); chips = tp x ep x dp x pp. Dense layers see dp x ep data-parallel replicas;
routed experts are split over ep and replicated over dp.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from app.engine.architecture import Architecture, param_counts
from app.engine.errors import InvalidInput
from app.engine.hardware import Chip
from app.engine.memory import LOGIT_BYTES, MemoryBreakdown
from app.engine.parallel import ring_allreduce_bytes, tensor_parallel_time
from app.engine.roofline import Roofline, Work, place
from app.engine.transformer import Precision, prefill, residual_bytes
from app.engine.units import Dtype, Unit, dtype_bytes

# Mixed-precision training keeps an fp32 master copy of 16-bit weights (Micikevicius et al. 2018).
MASTER_WEIGHT_BYTES = 4.0
# Korthikanti et al. 2022 ("Reducing activation recomputation in large transformer models",
# Table 2) count activations in 16-bit elements.
_KORTHIKANTI_BYTES = 2.0
# QLoRA's NF4 with double quantisation: 4 bits + 8-bit constants per 64 weights + fp32
# constants per 256 of those = 4 + 8/64 + 32/(64*256) = 4.127 bits (Dettmers et al. 2023, 3).
NF4_BYTES = 4.127 / 8
# Scale-out bandwidth per chip and direction when none is given: one 400 Gb/s InfiniBand NDR
# adapter per GPU, as in NVIDIA's DGX H100 (8 ConnectX-7 for 8 GPUs; DGX H100 user guide).
DEFAULT_NETWORK_BANDWIDTH = 400e9 / 8
# Chips sharing the scale-up link (NVLink/xGMI/ICI domain) when none is given: an 8-GPU node.
DEFAULT_CHIPS_PER_NODE = 8
MAX_CHIPS = 2**20


class Optimizer(StrEnum):
    """Optimizers by the state they keep per trainable parameter."""

    ADAMW = "adamw"
    ADAM = "adam"
    SGD_MOMENTUM = "sgd_momentum"
    ADAM_8BIT = "adam_8bit"
    ADAFACTOR = "adafactor"


# Optimizer state per trainable parameter, in bytes, besides any fp32 master weights:
# Adam/AdamW two fp32 moments (Kingma and Ba 2015); SGD one fp32 momentum buffer; 8-bit Adam two
# 8-bit moments (Dettmers et al. 2022, block-wise quantisation; its per-2048-block constants are
# under 0.01 byte); Adafactor without momentum keeps factored second moments, r + c values for
# an r x c matrix (Shazeer and Stern 2018): under 0.01 byte per parameter for d >= 768, so 0.
OPTIMIZER_STATE_BYTES: dict[Optimizer, float] = {
    Optimizer.ADAMW: 8.0,
    Optimizer.ADAM: 8.0,
    Optimizer.SGD_MOMENTUM: 4.0,
    Optimizer.ADAM_8BIT: 2.0,
    Optimizer.ADAFACTOR: 0.0,
}


class DataParallelAlgorithm(StrEnum):
    """How data-parallel replicas combine their gradients."""

    RING = "ring"
    PARAMETER_SERVER = "parameter_server"


class LoraTarget(StrEnum):
    """Linear layers LoRA adapts (Hugging Face PEFT's module names, without _proj)."""

    Q = "q"
    K = "k"
    V = "v"
    O = "o"  # noqa: E741 - PEFT's own name for the output projection
    GATE = "gate"
    UP = "up"
    DOWN = "down"


ALL_LINEAR = tuple(LoraTarget)


@dataclass(frozen=True, slots=True)
class Lora:
    """Low-rank adapters (Hu et al. 2021) on frozen weights; QLoRA stores those in NF4."""

    rank: int = 16
    targets: tuple[LoraTarget, ...] = ALL_LINEAR
    quantized_base: bool = False


@dataclass(frozen=True, slots=True)
class Parallelism:
    """Data, pipeline and expert parallel degrees (tensor parallel is the spec's `tp`).

    `micro_batch`: sequences per micro-batch (default: each replica's whole batch at once).
    `zero`: ZeRO stage 0-3 (FSDP's full shard is stage 3). Bandwidths in bytes/s per chip and
    direction; `overlap` hides the gradient reduction behind the backward pass.
    """

    dp: int = 1
    pp: int = 1
    ep: int = 1
    micro_batch: int | None = None
    zero: int = 0
    chips_per_node: int = DEFAULT_CHIPS_PER_NODE
    network_bandwidth: float = DEFAULT_NETWORK_BANDWIDTH
    overlap: bool = True
    dp_algorithm: DataParallelAlgorithm = DataParallelAlgorithm.RING


@dataclass(frozen=True, slots=True)
class Training:
    """How a training step is run: optimizer, layout, adapters, and optional given MFU/tokens."""

    optimizer: Optimizer = Optimizer.ADAMW
    parallel: Parallelism = field(default_factory=Parallelism)
    lora: Lora | None = None
    mfu: float | None = None  # model FLOPs utilisation to assume for the realistic time
    tokens: float | None = None  # tokens to train on, for the time to train


@dataclass(frozen=True, slots=True)
class Layout:
    """Chips of one training job and the batch each one sees."""

    tp: int
    dp: int
    pp: int
    ep: int
    micro_batch: float  # sequences per micro-batch (a float so that memory can be probed at 0)
    micro_batches: int  # per replica and step

    @property
    def chips(self) -> int:
        """tp x dp x pp x ep."""
        return self.tp * self.dp * self.pp * self.ep

    @property
    def replicas(self) -> int:
        """Data-parallel replicas of the dense layers: dp x ep."""
        return self.dp * self.ep

    @property
    def bubble_fraction(self) -> float:
        """Idle share of a 1F1B pipeline step: (p-1)/(m+p-1) (Narayanan et al. 2021, 2.2)."""
        return (self.pp - 1) / (self.micro_batches + self.pp - 1)

    @property
    def in_flight(self) -> int:
        """Micro-batches whose activations the first stage holds at once under 1F1B: min(p, m)."""
        return min(self.pp, self.micro_batches)


def layout(arch: Architecture, tp: int, batch: int, parallel: Parallelism) -> Layout:
    """Check the degrees against the model and the batch, and split the batch."""
    p = parallel
    for name, value in (("dp", p.dp), ("pp", p.pp), ("ep", p.ep)):
        if not 1 <= value <= MAX_CHIPS:
            raise InvalidInput(name, f"must be between 1 and {MAX_CHIPS}, got {value}")
    if arch.layers % p.pp:
        raise InvalidInput("pp", f"must divide the model's {arch.layers} layers, got {p.pp}")
    if p.ep > 1 and arch.moe is None:
        raise InvalidInput("ep", "expert parallelism needs a mixture-of-experts model; use ep=1")
    experts = arch.moe.experts if arch.moe else 1
    if experts % p.ep:
        raise InvalidInput("ep", f"must divide the model's {experts} routed experts, got {p.ep}")
    if not 0 <= p.zero <= 3:
        raise InvalidInput("zero", f"must be a ZeRO stage between 0 and 3, got {p.zero}")
    if p.chips_per_node < 1:
        raise InvalidInput("chips_per_node", "must be >= 1")
    if not p.network_bandwidth > 0:
        raise InvalidInput("network_bandwidth", "must be > 0 bytes/s")
    replicas = p.dp * p.ep
    if batch % replicas:
        raise InvalidInput(
            "batch", f"must be a multiple of dp x ep = {replicas} (one share per replica)"
        )
    per_replica = batch // replicas
    micro = p.micro_batch or per_replica
    if micro < 1 or per_replica % micro:
        raise InvalidInput(
            "micro_batch", f"must divide the {per_replica} sequences each replica gets, got {micro}"
        )
    return Layout(tp, p.dp, p.pp, p.ep, micro, per_replica // micro)


@dataclass(frozen=True, slots=True)
class Trainable:
    """Parameters per chip: those stored (the whole model's share) and those trained."""

    dense: float  # all parameters except routed experts, this chip's share
    expert: float  # routed expert parameters, this chip's share
    trained_dense: float
    trained_expert: float
    base_bytes: float  # bytes of the stored weights on this chip (frozen base for LoRA)

    @property
    def stored(self) -> float:
        """Parameters held on this chip."""
        return self.dense + self.expert

    @property
    def trained(self) -> float:
        """Parameters this chip trains."""
        return self.trained_dense + self.trained_expert


def _lora_params(arch: Architecture, lora: Lora) -> tuple[float, float]:
    """(dense, routed-expert) adapter parameters: r (in + out) per adapted matrix (Hu et al.)."""
    if lora.rank < 1:
        raise InvalidInput("lora_rank", f"must be >= 1, got {lora.rank}")
    att = arch.attention
    d = arch.hidden
    targets = set(lora.targets)
    attention_targets = targets & {LoraTarget.Q, LoraTarget.K, LoraTarget.V, LoraTarget.O}
    if att.mla is not None and attention_targets:
        raise InvalidInput(
            "lora_targets",
            "MLA attention (DeepSeek) has no q/k/v/o projections: adapt gate, up, down",
        )
    q, kv = att.heads * att.head_dim, att.kv_heads * att.head_dim
    shapes = {
        LoraTarget.Q: (d, q),
        LoraTarget.K: (d, kv),
        LoraTarget.V: (d, kv),
        LoraTarget.O: (q, d),
    }
    per_layer_attention = sum(i + o for t, (i, o) in shapes.items() if t in targets)

    def mlp(intermediate: int, gated: bool) -> int:
        widths = {LoraTarget.UP: d + intermediate, LoraTarget.DOWN: intermediate + d}
        if gated:
            widths[LoraTarget.GATE] = d + intermediate
        return sum(w for t, w in widths.items() if t in targets)

    dense = arch.layers * per_layer_attention + arch.dense_layers * mlp(
        arch.mlp.intermediate, arch.mlp.gated
    )
    expert = 0
    if arch.moe is not None:
        moe = arch.moe
        if moe.shared is not None:
            dense += moe.moe_layers * mlp(moe.shared.intermediate, moe.shared.gated)
        expert = moe.moe_layers * moe.experts * mlp(moe.expert.intermediate, moe.expert.gated)
    return lora.rank * dense, lora.rank * expert


def trainable(arch: Architecture, dtype: Dtype, lay: Layout, lora: Lora | None) -> Trainable:
    """This chip's share of the stored and the trained parameters.

    Everything is split tp x pp ways; routed experts also ep ways. LoRA trains only adapters
    and stores the base in `dtype`, or its block matrices in NF4 for QLoRA.
    """
    c = param_counts(arch)
    shard = lay.tp * lay.pp
    dense, expert = (c.total - c.routed_total) / shard, c.routed_total / (shard * lay.ep)
    s = dtype_bytes(dtype)
    if lora is None:
        return Trainable(dense, expert, dense, expert, (dense + expert) * s)
    adapter_dense, adapter_expert = _lora_params(arch, lora)
    base = (dense + expert) * s
    if lora.quantized_base:  # block matrices (routed experts among them) in NF4
        base -= (c.block_linear / shard + expert) * (s - NF4_BYTES)
    return Trainable(dense, expert, adapter_dense / shard, adapter_expert / (shard * lay.ep), base)


def optimizer_traffic_per_param(optimizer: Optimizer, dtype: Dtype) -> float:
    """Bytes per trained parameter an optimizer step moves besides the forward/backward reads.

    Gradients written then read (2 g), optimizer state read and written (2 o), and the weights
    updated: with an fp32 master copy (inside o) only the 16-bit copy is written (w); without
    one the weights themselves are read and written (2 w). 16-bit AdamW: 4 + 24 + 2 = 30 bytes.
    """
    grad, opt = state_bytes_per_param(optimizer, dtype)
    s = dtype_bytes(dtype)
    return 2 * grad + 2 * opt + (s if _has_master(dtype) else 2 * s)


def state_bytes_per_param(optimizer: Optimizer, dtype: Dtype) -> tuple[float, float]:
    """(gradient, optimizer incl. master weights) bytes per trained parameter.

    16-bit AdamW: 2 + (4 + 4 + 4) = 14, which with the 2-byte weight makes MODELLING.md's 16.
    """
    master = MASTER_WEIGHT_BYTES if _has_master(dtype) else 0.0
    return dtype_bytes(dtype), OPTIMIZER_STATE_BYTES[optimizer] + master


def _has_master(dtype: Dtype) -> bool:
    """Mixed precision keeps an fp32 master copy of weights trained in fewer bytes."""
    return dtype_bytes(dtype) < MASTER_WEIGHT_BYTES


def zero_divisors(stage: int, replicas: int) -> tuple[int, int, int]:
    """How many ways ZeRO stage `stage` splits (weights, gradients, optimizer state) over
    `replicas` data-parallel replicas: stage 1 the optimizer state, 2 also the gradients, 3 also
    the weights (Rajbhandari et al. 2020; FSDP's full shard is stage 3)."""
    return (
        replicas if stage >= 3 else 1,
        replicas if stage >= 2 else 1,
        replicas if stage >= 1 else 1,
    )


def activation_bytes_per_layer(
    arch: Architecture,
    *,
    micro_batch: float,
    seq_len: float,
    dtype: Dtype,
    tp: int,
    flash: bool,
    recompute: bool,
) -> float:
    """Activations one layer saves for the backward pass, per chip (Korthikanti et al., Table 2).

    S b d (10 + 24/t + 5 a S / (d t)) bytes with tensor parallelism t; flash attention stores no
    S x S scores, dropping the last term; full recomputation keeps only the layer's input,
    2 S b d. Scaled from 16-bit elements to `dtype`.
    """
    sbd = seq_len * micro_batch * arch.hidden
    if recompute:
        per_layer = 2.0 * sbd
    else:
        per_layer = sbd * (10 + 24 / tp)
        if not flash:
            per_layer += sbd * 5 * arch.attention.heads * seq_len / (arch.hidden * tp)
    return per_layer * dtype_bytes(dtype) / _KORTHIKANTI_BYTES


def _micro_batch_activations(
    arch: Architecture,
    lay: Layout,
    *,
    seq_len: float,
    dtype: Dtype,
    flash: bool,
    recompute: bool,
) -> tuple[float, float]:
    """(activations one micro-batch saves in a stage's L/p layers, its fp32 logits b S V 4 / t)."""
    per_layer = activation_bytes_per_layer(
        arch,
        micro_batch=lay.micro_batch,
        seq_len=seq_len,
        dtype=dtype,
        tp=lay.tp,
        flash=flash,
        recompute=recompute,
    )
    logits = lay.micro_batch * seq_len * arch.vocab * LOGIT_BYTES / lay.tp
    return arch.layers / lay.pp * per_layer, logits


def activation_bytes(
    arch: Architecture,
    lay: Layout,
    *,
    seq_len: float,
    dtype: Dtype,
    flash: bool,
    recompute: bool,
) -> float:
    """Saved activations per chip: the first pipeline stage holds min(p, m) micro-batches of its
    L/p layers (1F1B), plus the fp32 logits of the micro-batch in the loss."""
    layers, logits = _micro_batch_activations(
        arch, lay, seq_len=seq_len, dtype=dtype, flash=flash, recompute=recompute
    )
    return lay.in_flight * layers + logits


def training_memory(
    arch: Architecture,
    lay: Layout,
    *,
    seq_len: float,
    dtype: Dtype,
    training: Training,
    flash: bool,
    recompute: bool,
    reserve: float,
) -> MemoryBreakdown:
    """Weights, gradients, optimizer state (ZeRO-sharded) and saved activations per chip.

    Dense parameters are sharded over the dp x ep replicas, routed experts over dp. LoRA keeps
    its adapters in `dtype` beside the frozen base.
    """
    params = trainable(arch, dtype, lay, training.lora)
    grad, opt = state_bytes_per_param(training.optimizer, dtype)
    weights = gradients = optimizer = 0.0
    for stored, trained, replicas in (
        (params.dense, params.trained_dense, lay.replicas),
        (params.expert, params.trained_expert, lay.dp),
    ):
        w_div, g_div, o_div = zero_divisors(training.parallel.zero, replicas)
        share = stored / params.stored if params.stored else 0.0
        adapters = 0.0 if training.lora is None else trained * dtype_bytes(dtype)
        weights += (params.base_bytes * share + adapters) / w_div
        gradients += trained * grad / g_div
        optimizer += trained * opt / o_div
    return MemoryBreakdown(
        weights=weights,
        gradients=gradients,
        optimizer=optimizer,
        activations=activation_bytes(
            arch,
            lay,
            seq_len=seq_len,
            dtype=dtype,
            flash=flash,
            recompute=recompute,
        ),
        reserve=reserve,
    )


def max_trainable_params(
    usable_bytes: float, lay: Layout, training: Training, dtype: Dtype
) -> float:
    """The largest model, in parameters, whose weights and training state fit in `usable_bytes`
    per chip, before activations. State is split tp x pp ways, then ZeRO-sharded over the dp x ep
    replicas. 16-bit AdamW on one 80 GB chip: 80e9 / 16 = 5e9. LoRA stores only the frozen base
    (adapters are a fraction of a percent): 2 bytes per parameter, NF4's 0.516 with QLoRA."""
    w_div, g_div, o_div = zero_divisors(training.parallel.zero, lay.replicas)
    if training.lora is None:
        grad, opt = state_bytes_per_param(training.optimizer, dtype)
        per_param = dtype_bytes(dtype) / w_div + grad / g_div + opt / o_div
    else:
        per_param = (NF4_BYTES if training.lora.quantized_base else dtype_bytes(dtype)) / w_div
    return usable_bytes * lay.tp * lay.pp / per_param


@dataclass(frozen=True, slots=True)
class Communication:
    """Seconds per step each collective takes on this chip, and where it runs."""

    tensor_parallel: float
    pipeline: float
    expert: float
    data_parallel: float
    data_parallel_exposed: float
    data_parallel_bytes: float
    data_parallel_over_network: bool

    @property
    def exposed(self) -> float:
        """Communication on the critical path: TP, PP, EP, and what of DP the overlap leaves."""
        return self.tensor_parallel + self.pipeline + self.expert + self.data_parallel_exposed


def _link(chip: Chip, parallel: Parallelism, span: int) -> tuple[float, bool]:
    """Bandwidth (bytes/s, one direction) for a group spanning `span` consecutive chips, and
    whether it crosses the scale-out network (slower of the two when it does)."""
    if span <= 1:
        return float("inf"), False
    if span <= parallel.chips_per_node:
        return chip.link_bandwidth_per_direction(), False
    return min(parallel.network_bandwidth, chip.link_bandwidth_per_direction()), True


def _gradient_sync_bytes(size: float, replicas: int, parallel: Parallelism) -> float:
    """Bytes one chip sends to combine `size` bytes of gradients over `replicas` replicas."""
    if replicas == 1:
        return 0.0
    if parallel.dp_algorithm is DataParallelAlgorithm.PARAMETER_SERVER:
        return 2.0 * size * (replicas - 1)
    ring = ring_allreduce_bytes(size, replicas)
    return 1.5 * ring if parallel.zero >= 3 else ring


def communication(
    arch: Architecture,
    chip: Chip,
    lay: Layout,
    *,
    seq_len: float,
    dtype: Dtype,
    training: Training,
    passes: int,
    backward_time: float,
) -> Communication:
    """Per-step collective times of one chip (bandwidth terms only, like the roofline).

    TP: 2 all-reduces of b S d per layer per pass (Shoeybi et al. 2019). PP: each micro-batch's
    activations go forward and their gradients back, b S d / t per stage boundary (Narayanan et
    al. 2021, scatter/gather). EP: dispatch and combine all-to-alls per MoE layer and pass,
    each sending (e-1)/e of b S k d. DP: the trained gradients, ring all-reduce 2 (p-1)/p G, or
    ZeRO-3's reduce-scatter plus two all-gathers 3 (p-1)/p G (Rajbhandari et al. 2020); a
    parameter server receives and sends G from each of p-1 workers, 2 G (p-1) over its link.
    """
    p = training.parallel
    s = dtype_bytes(dtype)
    micro_tokens = lay.micro_batch * seq_len
    # tensor_parallel_time counts every layer; this chip's stage holds L/p of them
    tp_time = (
        tensor_parallel_time(
            arch,
            chip,
            tokens=lay.micro_batches * micro_tokens,
            dtype=dtype,
            tp=lay.tp,
            allreduces_per_layer=2 * passes,
        )
        / lay.pp
    )
    pp_bw, _ = _link(chip, p, lay.chips)
    pp_time = 0.0
    if lay.pp > 1:
        pp_time = lay.micro_batches * 2 * micro_tokens * arch.hidden * s / lay.tp / pp_bw
    ep_time = 0.0
    if lay.ep > 1 and arch.moe is not None:
        ep_bw, _ = _link(chip, p, lay.tp * lay.ep)
        k = arch.moe.experts_per_token
        moe_layers = arch.moe.moe_layers / lay.pp
        sent = micro_tokens * k * arch.hidden * s * (lay.ep - 1) / lay.ep / lay.tp
        ep_time = lay.micro_batches * moe_layers * 2 * passes * sent / ep_bw
    params = trainable(arch, dtype, lay, training.lora)
    grad = state_bytes_per_param(training.optimizer, dtype)[0]
    dp_bw, over_network = _link(chip, p, lay.tp * lay.ep * lay.dp)
    dp_bytes = sum(
        _gradient_sync_bytes(trained * grad, replicas, p)
        for trained, replicas in (
            (params.trained_dense, lay.replicas),
            (params.trained_expert, lay.dp),
        )
    )
    dp_time = dp_bytes / dp_bw if dp_bytes else 0.0
    exposed = max(0.0, dp_time - backward_time) if p.overlap else dp_time
    return Communication(tp_time, pp_time, ep_time, dp_time, exposed, dp_bytes, over_network)


@dataclass(frozen=True, slots=True)
class TrainingStep:
    """One optimizer step over all chips, seen from one chip, and the run it is part of."""

    roofline: Roofline  # per chip; realistic_time uses the given MFU when there is one
    layout: Layout
    communication: Communication
    model_flops: float  # whole step, all chips: 6 N T + attention (no recomputation)
    trained_params: float  # whole model
    tokens_per_step: float
    tokens: float | None  # to train on
    given_mfu: float | None = None  # the MFU the realistic time assumes, when one was given

    def mfu(self, time: float) -> float:
        """Model FLOPs utilisation of a step taking `time`: model FLOPs / (chips x peak x time)."""
        return self.model_flops / (self.layout.chips * self.roofline.peak.flops_per_s * time)

    def time_to_train(self, time: float) -> float | None:
        """Seconds to train on `tokens` at `time` per step: tokens / tokens per step x time."""
        return None if self.tokens is None else self.tokens / self.tokens_per_step * time


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
) -> TrainingStep:
    """The roofline of one training step per chip, with its pipeline bubble and communication.

    FLOPs: the forward F (the prefill count over all B S tokens), x3 for forward and backward
    (x4 with recomputation); LoRA's frozen weights need no weight gradients, x2 (x3), plus
    6 P_lora per token for the adapters; split evenly over the chips. Bytes per chip: its
    weights read per micro-batch in the forward and the backward pass (and the recomputed
    forward), the optimizer update of its (ZeRO-sharded) trained parameters, the saved
    activations written then read, and the residual stream of each pass. Time: the roofline of
    that work stretched by the pipeline bubble, m / (m + p - 1) busy, plus exposed communication.
    """
    lay = layout(arch, tp, batch, training.parallel)
    dtype = precision.compute
    forward = prefill(arch, batch, seq_len, precision, tp=1).flops
    params = trainable(arch, dtype, lay, training.lora)
    reads = 3 if recompute else 2
    passes = reads + (1 if training.lora is None else 0)
    tokens = batch * seq_len
    trained = float(param_counts(arch).total)
    if training.lora is not None:
        trained = sum(_lora_params(arch, training.lora))
    adapters = 0.0 if training.lora is None else 6.0 * trained * tokens
    model_flops = forward * (passes - (1 if recompute else 0)) + adapters
    flops = (forward * passes + adapters) / lay.chips

    _, _, o_div = zero_divisors(training.parallel.zero, lay.replicas)
    micro_tokens = lay.micro_batch * seq_len
    # one micro-batch's activations and logits, written in the forward, read in the backward
    saved = sum(
        _micro_batch_activations(
            arch, lay, seq_len=seq_len, dtype=dtype, flash=flash, recompute=recompute
        )
    )
    traffic = lay.micro_batches * (
        reads * params.base_bytes
        + 2 * saved
        + passes * residual_bytes(arch, micro_tokens, dtype) / lay.pp
    )
    traffic += params.trained / o_div * optimizer_traffic_per_param(training.optimizer, dtype)
    work = Work(flops, traffic, dtype, Unit.MATRIX)

    busy = place(work, chip).expected_time
    comm = communication(
        arch,
        chip,
        lay,
        seq_len=seq_len,
        dtype=dtype,
        training=training,
        passes=passes,
        backward_time=busy * (passes - 1) / passes,
    )
    roof = place(work, chip, comm.exposed, stretch=1 / (1 - lay.bubble_fraction))
    step = TrainingStep(roof, lay, comm, model_flops, trained, tokens, training.tokens)
    if training.mfu is not None:
        if not 0 < training.mfu <= 1:
            raise InvalidInput("mfu", f"must be > 0 and <= 1, got {training.mfu}")
        at_mfu = model_flops / (lay.chips * roof.peak.flops_per_s * training.mfu)
        step = replace(step, roofline=replace(roof, realistic_time=at_mfu), given_mfu=training.mfu)
    return step
