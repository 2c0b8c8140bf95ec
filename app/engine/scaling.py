"""Scaling a training job over chip counts: speedup and efficiency, beside Amdahl and Gustafson.

Data parallelism grows with the count (dp = chips / (tp x cp x pp x ep)); the other degrees
stay.
Strong scaling keeps the global batch; weak scaling keeps each replica's batch, so the global
batch grows with the chips. Speedup is throughput (tokens/s) over the first count's, from the
realistic step time (sustained fractions plus exposed communication; a given MFU is ignored
here, since it would hide the communication that makes scaling sub-linear).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine.architecture import Architecture
from app.engine.errors import InvalidInput
from app.engine.hardware import Chip
from app.engine.training.layout import check_degrees, regroup
from app.engine.training.step import step_on, step_plan
from app.engine.transformer import Phase
from app.engine.workload import (
    TransformerSpec,
    check_batch,
    training_memory_needed,
    validate,
)

MAX_COUNTS = 64


class ScalingMode(StrEnum):
    """Which batch stays fixed as chips are added."""

    STRONG = "strong"
    WEAK = "weak"


@dataclass(frozen=True, slots=True)
class ScalingPoint:
    """One chip count of a scaling curve."""

    chips: int
    dp: int
    batch: int
    step_time: float  # realistic, seconds
    tokens_per_s: float
    speedup: float  # over the first count
    efficiency: float  # speedup / (chips / first chips)
    law_speedup: float  # Amdahl (strong) or Gustafson (weak) at f, over the first count
    law_speedup_vs_one: float  # the same law over one chip
    communication_time: float  # exposed, per step
    fits: bool
    required_bytes: float  # memory per chip the step needs


def law_speedup(mode: ScalingMode, serial_fraction: float, first: int, chips: int) -> float:
    """Amdahl's (strong) or Gustafson's (weak) speedup at `chips` over `first` chips, for a
    serial fraction f.

    Strong scaling: 1 / (f + (1-f)/r) (Amdahl 1967), limited to 1/f; weak scaling:
    f + (1-f) r (Gustafson 1988), with r = chips / first: f is then the serial share of the
    first count's run, not of a one-chip run. Against one chip, pass a first count of 1: at 64
    chips and f = 0.02, 1 / (0.02 + 0.98/64) = 28.3 over one chip, but 1 / (0.02 + 0.98/8) =
    7.02 over 8 chips.
    """
    f = serial_fraction
    if mode is ScalingMode.STRONG:
        return 1 / (f + (1 - f) * first / chips)
    return f + (1 - f) * chips / first


def scaling(
    arch: Architecture,
    chip: Chip,
    spec: TransformerSpec,
    counts: Sequence[int],
    *,
    mode: ScalingMode,
    serial_fraction: float,
) -> list[ScalingPoint]:
    """The scaling curve of the training step `spec` over `counts` chips (ascending)."""
    if spec.phase is not Phase.TRAINING:
        raise InvalidInput("phase", "scaling is computed for training; use phase=training")
    if not 1 <= len(counts) <= MAX_COUNTS:
        raise InvalidInput("chip_counts", f"give between 1 and {MAX_COUNTS} chip counts")
    if list(counts) != sorted(set(counts)):
        raise InvalidInput("chip_counts", "chip counts must be distinct and ascending")
    parallel = spec.training.parallel
    group = spec.tp * parallel.cp * parallel.pp * parallel.ep
    if any(n % group for n in counts):
        raise InvalidInput(
            "chip_counts",
            f"every count must be a multiple of tp x cp x pp x ep = {group}, got {list(counts)}",
        )
    first = counts[0]
    first_dp = first // group
    if mode is ScalingMode.WEAK and spec.batch % (first_dp * parallel.ep):
        raise InvalidInput(
            "batch",
            f"must be a multiple of dp x ep = {first_dp * parallel.ep} at {first} chips",
        )
    if not 0 <= serial_fraction <= 1:
        raise InvalidInput("serial_fraction", f"must be between 0 and 1, got {serial_fraction}")
    # each count's step is the estimate's (`estimate` of the spec at that count's dp and
    # batch), built from its parts: the spec is checked once, and each count's batch; the
    # given MFU is dropped once for every count
    validate(arch, spec)
    # the degrees other than dp are checked once; each count regroups the batch at its dp
    check_degrees(arch, parallel)
    training = spec.training
    unpinned = training if training.mfu is None else replace(training, mfu=None)
    strong = mode is ScalingMode.STRONG
    plan = None
    points: list[ScalingPoint] = []
    for n in counts:
        dp = n // group
        batch = spec.batch  # strong: the spec's, which `validate` checked
        if not strong:
            batch = batch // first_dp * dp
            check_batch(batch)
        lay = regroup(arch, spec.tp, batch, parallel, dp)
        if plan is None or not strong:  # the same batch at every count of a strong curve
            plan = step_plan(
                arch,
                chip,
                batch=batch,
                seq_len=spec.seq_len,
                precision=spec.precision,
                training=unpinned,
                flash=spec.flash_attention,
                recompute=spec.recompute,
                software=spec.software,
            )
        step = step_on(plan, lay, breakdown=False)
        memory = training_memory_needed(arch, chip, spec, batch, lay)
        roof = step.roofline
        rate = step.tokens_per_step / roof.realistic_time
        speedup = rate / points[0].tokens_per_s if points else 1.0
        ratio = n / first
        points.append(
            ScalingPoint(
                chips=n,
                dp=dp,
                batch=batch,
                step_time=roof.realistic_time,
                tokens_per_s=rate,
                speedup=speedup,
                efficiency=speedup / ratio,
                law_speedup=law_speedup(mode, serial_fraction, first, n),
                law_speedup_vs_one=law_speedup(mode, serial_fraction, 1, n),
                communication_time=roof.communication_time,
                fits=memory.fits_in(chip.memory_bytes),
                required_bytes=memory.total,
            )
        )
    return points
