"""Where a training step runs: the chips of each parallel degree and the batch each one sees."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.architecture import Architecture
from app.engine.errors import InvalidInput
from app.engine.training.options import MAX_CHIPS, Parallelism


@dataclass(frozen=True, slots=True)
class Layout:
    """Chips of one training job and the batch each one sees."""

    tp: int
    dp: int
    pp: int
    ep: int
    micro_batch: float  # sequences per micro-batch (a float so that memory can be probed at 0)
    micro_batches: int  # per replica and step
    layers: int  # the model's, split over the pp stages
    cp: int = 1  # context parallel: each sequence split cp ways

    @property
    def stage_layers(self) -> int:
        """The fullest stage's layers, ceil(L/p): stages hold ceil(L/p) or floor(L/p) layers
        when p does not divide L (Llama 3 405B: 126 layers over 16 stages, 8 or 7)."""
        return -(-self.layers // self.pp)

    @property
    def pipeline_split(self) -> float:
        """L / ceil(L/p): the fullest stage holds 1/this of the layers (p when p | L); its
        share of the parameters, FLOPs and traffic sets the memory per chip and the time."""
        return self.layers / self.stage_layers

    @property
    def chips(self) -> int:
        """Chips of the job: tp x cp x ep x dp x pp."""
        return self.tp * self.cp * self.ep * self.dp * self.pp

    @property
    def replicas(self) -> int:
        """Chips holding the same dense weights shard, that reduce their gradients together:
        dp x ep x cp (context-parallel chips see other tokens of the sequences)."""
        return self.dp * self.ep * self.cp

    @property
    def batch_shares(self) -> int:
        """Ways the batch is split into sequences: dp x ep (cp splits each sequence)."""
        return self.dp * self.ep

    @property
    def expert_replicas(self) -> int:
        """Chips holding the same routed experts: dp x cp."""
        return self.dp * self.cp

    @property
    def bubble_fraction(self) -> float:
        """The idle share of a 1F1B pipeline step, (p-1)/(m+p-1) (Narayanan et al. 2021, 2.2)."""
        return (self.pp - 1) / (self.micro_batches + self.pp - 1)

    @property
    def in_flight(self) -> int:
        """Micro-batches whose activations the first stage holds at once under 1F1B, min(p, m)."""
        return min(self.pp, self.micro_batches)


def layout(arch: Architecture, tp: int, batch: int, parallel: Parallelism) -> Layout:
    """Check the degrees against the model and the batch, and split the batch."""
    check_degrees(arch, parallel)
    return regroup(arch, tp, batch, parallel, parallel.dp)


def check_degrees(arch: Architecture, parallel: Parallelism) -> None:
    """Check the degrees other than dp (and the options beside them) against the model."""
    p = parallel
    for name, value in (("pp", p.pp), ("ep", p.ep), ("cp", p.cp)):
        if not 1 <= value <= MAX_CHIPS:
            raise InvalidInput(name, f"must be between 1 and {MAX_CHIPS}, got {value}")
    if p.pp > arch.layers:
        raise InvalidInput("pp", f"must be at most the model's {arch.layers} layers, got {p.pp}")
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


def regroup(arch: Architecture, tp: int, batch: int, parallel: Parallelism, dp: int) -> Layout:
    """The layout of `batch` sequences over `dp` data-parallel replicas and `parallel`'s other
    degrees (`check_degrees`'): dp and the batch's split checked (a scaling curve checks the
    other degrees once, then regroups at each count)."""
    if not 1 <= dp <= MAX_CHIPS:
        raise InvalidInput("dp", f"must be between 1 and {MAX_CHIPS}, got {dp}")
    replicas = dp * parallel.ep
    if batch % replicas:
        raise InvalidInput(
            "batch", f"must be a multiple of dp x ep = {replicas} (one share per replica)"
        )
    per_replica = batch // replicas
    micro = parallel.micro_batch or per_replica
    if micro < 1 or per_replica % micro:
        raise InvalidInput(
            "micro_batch", f"must divide the {per_replica} sequences each replica gets, got {micro}"
        )
    return Layout(
        tp=tp,
        dp=dp,
        pp=parallel.pp,
        ep=parallel.ep,
        micro_batch=micro,
        micro_batches=per_replica // micro,
        layers=arch.layers,
        cp=parallel.cp,
    )
