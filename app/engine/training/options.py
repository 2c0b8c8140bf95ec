"""How a training step is run: optimizer, parallel layout, adapters (the inputs of this package).

Chips are laid out Megatron-style, innermost first: tensor (tp), context (cp), expert (ep),
data (dp), pipeline (pp); chips = tp x cp x ep x dp x pp. Context parallelism splits each
sequence cp ways; its chips hold the same weights and reduce their gradients with the data
parallel replicas. Dense layers see dp x ep x cp gradient replicas; routed experts are split
over ep and replicated over dp x cp.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from app.engine.units import BITS_PER_BYTE, GIGA

# Scale-out bandwidth per chip and direction when none is given: one 400 Gb/s InfiniBand NDR
# adapter per GPU, as in NVIDIA's DGX H100 (8 ConnectX-7 for 8 GPUs; DGX H100 user guide).
DEFAULT_NETWORK_BANDWIDTH = 400 * GIGA / BITS_PER_BYTE
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
    """Data, pipeline, expert and context parallel degrees (tensor parallel is the spec's `tp`).

    `micro_batch`: sequences per micro-batch (default: each replica's whole batch at once).
    `zero`: ZeRO stage 0-3 (FSDP's full shard is stage 3). Bandwidths in bytes/s per chip and
    direction; `overlap` hides the gradient reduction behind the backward pass.
    """

    dp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1  # context parallel: each sequence split cp ways (ring attention)
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
