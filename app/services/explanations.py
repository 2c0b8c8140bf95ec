"""The sentences of an answer's `explanation` and `warnings`, from the engine's results."""

from __future__ import annotations

from app import formatting as fmt
from app.engine import (
    LimitedBy,
    MemoryBreakdown,
    OptimalBatch,
    Roofline,
)
from app.engine.batch import NEAR_ASYMPTOTE as NEAR
from app.engine.scaling import ScalingPoint
from app.engine.training import TrainingStep
from app.engine.units import DAY
from app.schemas.echo import ignored
from app.services.inputs import ModelInput


def roofline_lines(roof: Roofline) -> list[str]:
    peak = roof.peak
    lines = [
        f"Compute: {fmt.flops(roof.flops)} at the {peak.dtype} {peak.unit} peak of "
        f"{fmt.rate(peak.flops_per_s, 'FLOP/s')} takes {fmt.seconds(roof.compute_time)}.",
        f"Memory: {fmt.bytes_(roof.bytes)} at {fmt.rate(roof.memory_bandwidth, 'B/s')} takes "
        f"{fmt.seconds(roof.memory_time)}.",
        f"Arithmetic intensity {fmt.number(roof.arithmetic_intensity)} FLOP/B vs the ridge "
        f"{fmt.number(roof.ridge_intensity)} FLOP/B: under the {roof.roof} roof.",
    ]
    if roof.communication_time:
        lines.append(
            f"Communication (and any pipeline idle) adds {fmt.seconds(roof.communication_time)} "
            "on the critical path."
        )
    lines.append(
        f"Expected (ideal roofline) time {fmt.seconds(roof.expected_time)}; at the chip's "
        f"sustained {roof.sustained_compute:.0%} of peak compute and {roof.sustained_memory:.0%} "
        f"of bandwidth, {fmt.seconds(roof.sustained_time)}."
    )
    published = (
        f" (published runs: {fmt.seconds(roof.realistic_low)} to "
        f"{fmt.seconds(roof.realistic_high)})"
    )
    overhead = f", of which {fmt.seconds(roof.overhead_time)} fixed costs" * (
        roof.overhead_time > 0
    )
    lines.append(
        f"Realistic {fmt.seconds(roof.realistic_time)}{published}{overhead}: {roof.bound}-bound."
    )
    return lines


def memory_line(memory: MemoryBreakdown, capacity: float) -> str:
    parts = [
        f"{name} {fmt.bytes_(value)}"
        for name, value in (
            ("weights", memory.weights),
            ("KV cache", memory.kv_cache),
            ("activations", memory.activations),
            ("gradients", memory.gradients),
            ("optimizer", memory.optimizer),
            ("reserve", memory.reserve),
        )
        if value
    ]
    verdict = "fits" if memory.fits_in(capacity) else "does NOT fit"
    return (
        f"Memory per chip: {' + '.join(parts)} = {fmt.bytes_(memory.total)} of "
        f"{fmt.bytes_(capacity)}: {verdict}."
    )


def warnings_of(model: ModelInput) -> list[str]:
    workload, arch = model.workload, model.arch
    warnings = []
    held = workload.seq_len + (workload.gen_len if workload.phase == "generate" else 0)
    if arch.max_positions and held > arch.max_positions:
        warnings.append(
            f"{held} tokens exceed {model.ref.id}'s max_position_embeddings "
            f"({arch.max_positions}); the model was not trained for that length."
        )
    for phase, names in ignored(workload).items():
        warnings.append(f"Ignored, as they only apply to phase={phase}: {', '.join(names)}.")
    if arch.attention.heads % workload.tp:
        warnings.append(
            f"tp={workload.tp} does not divide the {arch.attention.heads} attention heads; "
            "Megatron-style sharding needs it to."
        )
    return warnings


_CANNOT_RUN = (
    "for a configuration that cannot run as given (more chips, ZeRO, recomputation, a smaller "
    "batch or narrower dtypes would make it fit)."
)


def unfit_warning(memory: MemoryBreakdown, capacity: float) -> list[str]:
    """A warning, when the work does not fit, that its times describe what cannot run."""
    if memory.fits_in(capacity):
        return []
    return [
        f"Does not fit: {fmt.bytes_(memory.total)} per chip of {fmt.bytes_(capacity)}; the "
        f"times are {_CANNOT_RUN}"
    ]


def _listed(items: list[str]) -> str:
    """'1', '1 and 2', '1, 2 and 4'."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def scaling_unfit_warning(points: list[ScalingPoint], capacity: float) -> list[str]:
    """A warning naming the chip counts of a scaling curve where the step does not fit, with
    what it needs per chip at each."""
    unfit = [p for p in points if not p.fits]
    if not unfit:
        return []
    counts = _listed([str(p.chips) for p in unfit])
    noun = "chip" if [p.chips for p in unfit] == [1] else "chips"
    needs = _listed([fmt.bytes_(p.required_bytes) for p in unfit])
    return [
        f"The training step does not fit at {counts} {noun}: it needs {needs} per chip of "
        f"{fmt.bytes_(capacity)}; the times there are {_CANNOT_RUN}"
    ]


def training_lines(step: TrainingStep) -> list[str]:
    roof, lay, comm = step.roofline, step.layout, step.communication
    lines = [
        f"{lay.chips} chips (tp={lay.tp} x dp={lay.dp} x pp={lay.pp} x ep={lay.ep}"
        + (f" x cp={lay.cp}" if lay.cp > 1 else "")
        + "); "
        f"{lay.micro_batches} micro-batch(es) of {fmt.number(lay.micro_batch, 6)} sequences "
        "per replica.",
        f"Model FLOPs per step {fmt.flops(step.model_flops)} (6 N T + attention); "
        f"MFU {step.mfu(roof.expected_time):.0%} at the ideal step time "
        f"{fmt.seconds(roof.expected_time)}, {step.mfu(roof.realistic_time):.0%} at the "
        f"realistic {fmt.seconds(roof.realistic_time)}.",
    ]
    if step.given_mfu is not None:
        lines.append(
            f"The realistic time assumes the given MFU of {fmt.percent(step.given_mfu)}, "
            "instead of the chip's sustained fractions."
        )
    if lay.pp > 1:
        lines.append(f"Pipeline bubble: {lay.bubble_fraction:.0%} of the step is idle.")
    if lay.layers % lay.pp:
        lines.append(
            f"Uneven pipeline stages: {lay.pp} stages of {lay.stage_layers} or "
            f"{lay.stage_layers - 1} of the {lay.layers} layers; the fullest sets the step time "
            "and the memory per chip."
        )
    if comm.data_parallel:
        where = "the scale-out network" if comm.data_parallel_over_network else "the scale-up link"
        lines.append(
            f"Gradient reduction: {fmt.bytes_(comm.data_parallel_bytes)} per chip over {where}, "
            f"{fmt.seconds(comm.data_parallel)}, of which "
            f"{fmt.seconds(comm.data_parallel_exposed)} is not hidden behind the backward pass."
        )
    days = step.time_to_train(roof.realistic_time)
    if days is not None and step.tokens is not None:
        lines.append(
            f"Training on {fmt.number(step.tokens)} tokens takes {fmt.number(days / DAY)} days "
            "(realistic)."
        )
    return lines


def batch_lines(answer: OptimalBatch) -> list[str]:
    best, ridge, max_batch = answer.optimal_batch, answer.ridge_batch, answer.max_batch
    lines = []
    if ridge is None:
        lines.append(
            "No batch is compute-bound: the memory traffic that grows with the batch (the KV "
            "cache in decode) keeps the arithmetic intensity below the ridge: it tends to "
            f"{fmt.number(answer.asymptotic_intensity)} FLOP/B as the batch grows, against a "
            f"ridge of {fmt.number(answer.ridge_intensity)} FLOP/B."
        )
    else:
        lines.append(f"The smallest compute-bound batch (the ridge) is {ridge}.")
    lines.append(
        f"Memory allows at most batch {max_batch}." if max_batch else "Not even batch 1 fits."
    )
    if answer.latency_batch is not None:
        lines.append(
            f"The latency bound allows at most batch {answer.latency_batch} (realistic step time)."
            if answer.latency_batch
            else "Not even batch 1 meets the latency bound at the realistic step time."
        )
    if best is None and answer.limited_by is LimitedBy.LATENCY:
        lines.append(
            "No batch meets the latency bound: a faster chip, more tensor parallelism "
            "or a smaller model would."
        )
    elif best is None:
        lines.append("No batch fits: see /memory-fit for the fewest chips.")
    elif answer.limited_by is LimitedBy.RIDGE:
        lines.append(f"Optimal batch {best}: beyond it throughput stops growing, latency rises.")
    elif answer.limited_by is LimitedBy.LATENCY:
        lines.append(f"Optimal batch {best}: the largest within the latency bound.")
    else:
        lines.append(f"Optimal batch {best}: the largest that fits (limited by memory).")
    asymptote = fmt.rate(answer.throughput_asymptote, "tokens/s")
    tends = f"Throughput tends to {asymptote} as the batch grows"
    if max_batch and answer.near_asymptote_batch > max_batch:
        # a batch that does not fit is never cited: what the largest that fits reaches instead
        largest = next(p for p in answer.sweep if p.batch == max_batch)
        share = fmt.percent(largest.tokens_per_s / answer.throughput_asymptote)
        lines.append(
            f"{tends}; no batch that fits reaches {NEAR:.0%} of it: batch {max_batch}, the "
            f"largest that fits, reaches {share}."
        )
    elif max_batch:
        lines.append(f"{tends}; batch {answer.near_asymptote_batch} reaches {NEAR:.0%} of it.")
    else:
        lines.append(f"{tends}.")
    return lines
