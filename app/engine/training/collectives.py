"""The collectives of a training step: tensor, pipeline, expert and data parallel traffic and
the time each takes on one chip (docs/formulas.md, "Training")."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.architecture import Architecture
from app.engine.hardware import Chip
from app.engine.parallel import activation_dtype, ring_allreduce_bytes, tensor_parallel_time
from app.engine.training.footprint import Trainable, state_bytes_per_param
from app.engine.training.layout import Layout
from app.engine.training.options import DataParallelAlgorithm, Parallelism, Training
from app.engine.units import Dtype, dtype_bytes


@dataclass(frozen=True, slots=True)
class Communication:
    """Seconds per step each collective takes on this chip, and where it runs."""

    tensor_parallel: float
    pipeline: float
    expert: float
    context_parallel: float
    data_parallel: float
    data_parallel_exposed: float
    data_parallel_bytes: float
    data_parallel_over_network: bool

    @property
    def exposed(self) -> float:
        """Communication on the critical path: TP, PP, EP, CP, and what of DP the overlap
        leaves."""
        return (
            self.tensor_parallel
            + self.pipeline
            + self.expert
            + self.context_parallel
            + self.data_parallel_exposed
        )


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
    params: Trainable,
    *,
    seq_len: float,
    dtype: Dtype,
    training: Training,
    recompute: bool,
    backward_time: float,
) -> Communication:
    """Per-step collective times of one chip holding `params` (bandwidth terms only, like the
    roofline).

    TP: 2 all-reduces of b S d per layer in the forward (after attention and after the MLP),
    2 in the backward for the input gradients (the weight gradients need none), and 2 more in
    the recomputed forward: 4 per layer, 6 with full recomputation (Shoeybi et al. 2019, 3;
    Korthikanti et al. 2022, 4), LoRA alike. PP: each micro-batch's activations go forward and
    their gradients back, b S d / t per stage boundary (Narayanan et al. 2021, scatter/gather).
    EP: a dispatch and a combine all-to-all per MoE layer in the forward, the same two in the
    backward and again in a recomputed forward, each sending (e-1)/e of b S k d. CP: ring
    attention passes each chip's K and V around the cp chips, (cp-1)/cp of b S (K + V widths)
    per layer in the forward and again in a recomputed forward; the backward passes K and V
    and their gradients, twice that (Liu et al. 2023; Megatron/Transformer Engine). DP: the
    trained gradients, ring all-reduce 2 (p-1)/p G, or ZeRO-3's reduce-scatter plus two
    all-gathers 3 (p-1)/p G (Rajbhandari et al. 2020); a parameter server receives and sends
    G from each of p-1 workers, 2 G (p-1) over its link.
    """
    p = training.parallel
    s = dtype_bytes(activation_dtype(dtype))  # activations cross chips in 16 bits at least
    micro_tokens = lay.micro_batch * seq_len / lay.cp  # this chip's share of the sequences
    # activation collectives run in the forward, the backward and any recomputed forward
    activation_passes = 3 if recompute else 2
    # tensor_parallel_time counts every layer; the fullest stage holds ceil(L/p) of them
    tp_time = (
        tensor_parallel_time(
            arch,
            chip,
            tokens=lay.micro_batches * micro_tokens,
            dtype=dtype,
            tp=lay.tp,
            allreduces_per_layer=2 * activation_passes,
        )
        / lay.pipeline_split
    )
    pp_time = 0.0
    if lay.pp > 1:
        pp_bw, _ = _link(chip, p, lay.chips)
        pp_time = lay.micro_batches * 2 * micro_tokens * arch.hidden * s / lay.tp / pp_bw
    ep_time = 0.0
    if lay.ep > 1 and arch.moe is not None:
        ep_bw, _ = _link(chip, p, lay.tp * lay.cp * lay.ep)
        k = arch.moe.experts_per_token
        moe_layers = arch.moe.moe_layers / lay.pipeline_split
        sent = micro_tokens * k * arch.hidden * s * (lay.ep - 1) / lay.ep / lay.tp
        ep_time = lay.micro_batches * moe_layers * 2 * activation_passes * sent / ep_bw
    cp_time = 0.0
    if lay.cp > 1:
        cp_bw, _ = _link(chip, p, lay.tp * lay.cp)
        att = arch.attention
        # K and V of this chip's heads (replicated when tp exceeds the KV heads)
        kv_width = att.kv_heads * (att.qk_dim + att.v_dim) / min(lay.tp, att.kv_heads)
        ring = (lay.cp - 1) * micro_tokens * kv_width * s  # (cp-1)/cp of b S, per layer
        # each forward (1, or 2 with recomputation) passes K, V; the backward K, V and dK, dV
        forwards = activation_passes - 1
        ring_passes = forwards + 2
        cp_time = lay.micro_batches * arch.layers / lay.pipeline_split * ring_passes * ring / cp_bw
    grad = state_bytes_per_param(training.optimizer, dtype)[0]
    dp_bw, over_network = _link(chip, p, lay.tp * lay.cp * lay.ep * lay.dp)
    dp_bytes = _gradient_sync_bytes(params.trained_dense * grad, lay.replicas, p)
    if params.trained_expert:  # routed experts' gradients (none to send in a dense model)
        dp_bytes += _gradient_sync_bytes(params.trained_expert * grad, lay.expert_replicas, p)
    dp_time = dp_bytes / dp_bw if dp_bytes else 0.0
    exposed = dp_time
    if p.overlap:  # what of it the backward pass does not hide: max(0, dp - backward)
        exposed = dp_time - backward_time if dp_time > backward_time else 0.0
    return Communication(
        tensor_parallel=tp_time,
        pipeline=pp_time,
        expert=ep_time,
        context_parallel=cp_time,
        data_parallel=dp_time,
        data_parallel_exposed=exposed,
        data_parallel_bytes=dp_bytes,
        data_parallel_over_network=over_network,
    )
