"""Training and fine-tuning: memory per chip, the time of one step, and its communication.

The formulas are derived in docs/formulas.md ("Training"); the sources are cited where each is
used. The modules, in the order a step is built: `options` (what the user asks for), `layout`
(chips and batch split), `footprint` (memory per chip), `collectives` (communication), `step`
(the step's roofline and the run's time).
"""

from app.engine.training.collectives import Communication, communication
from app.engine.training.footprint import (
    MASTER_WEIGHT_BYTES,
    NF4_BYTES,
    Trainable,
    activation_bytes,
    activation_bytes_per_layer,
    lora_params,
    max_trainable_params,
    optimizer_traffic_per_param,
    state_bytes_per_param,
    trainable,
    training_memory,
    zero_divisors,
)
from app.engine.training.layout import Layout, layout
from app.engine.training.options import (
    ALL_LINEAR,
    DEFAULT_CHIPS_PER_NODE,
    DEFAULT_NETWORK_BANDWIDTH,
    MAX_CHIPS,
    OPTIMIZER_STATE_BYTES,
    DataParallelAlgorithm,
    Lora,
    LoraTarget,
    Optimizer,
    Parallelism,
    Training,
)
from app.engine.training.step import (
    TrainingStep,
    attention_at_wide,
    attention_passes,
    training_step,
)

__all__ = [
    "ALL_LINEAR",
    "DEFAULT_CHIPS_PER_NODE",
    "DEFAULT_NETWORK_BANDWIDTH",
    "MASTER_WEIGHT_BYTES",
    "MAX_CHIPS",
    "NF4_BYTES",
    "OPTIMIZER_STATE_BYTES",
    "Communication",
    "DataParallelAlgorithm",
    "Layout",
    "Lora",
    "LoraTarget",
    "Optimizer",
    "Parallelism",
    "Trainable",
    "Training",
    "TrainingStep",
    "activation_bytes",
    "activation_bytes_per_layer",
    "attention_at_wide",
    "attention_passes",
    "communication",
    "layout",
    "lora_params",
    "max_trainable_params",
    "optimizer_traffic_per_param",
    "state_bytes_per_param",
    "trainable",
    "training_memory",
    "training_step",
    "zero_divisors",
]
