"""An input pipeline on a chip, on its own or feeding a training step: its time per step, the
lines that explain it and what it assumed (docs/formulas.md#input-pipeline)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from app import formatting as fmt
from app.engine import Roofline, TransformerEstimate
from app.engine.copies import link_fraction
from app.engine.hardware import Chip
from app.engine.input_pipeline import PipelineTime, fed, fed_estimate, pipeline_time, read_rate
from app.schemas.input_pipeline_bodies import (
    InputPipelineFields,
    InputPipelineOut,
    InputPipelineWorkload,
)
from app.schemas.requests import TransformerWorkload
from app.services.what_if import Alternative, ranked
from app.services.work_advice import Fed, WorkFacts

_LIMITS = {
    "storage_bandwidth": "the storage's read rate",
    "storage_iops": "the storage's reads per second",
    "decode": "decoding on the host",
    "host_copy": "the copy to the device",
}


def pipeline_of(fields: InputPipelineFields, chip: Chip, samples: int) -> PipelineTime:
    """The pipeline's stages on `chip`, `samples` per step where the fields give none."""
    return pipeline_time(fields.pipeline(samples), chip)


def input_roofline(workload: InputPipelineWorkload, chip: Chip) -> tuple[Roofline, PipelineTime]:
    """A pipeline on its own as a roofline: the batch's copy (its device and link terms), its
    times the pipeline's, input-bound."""
    pipe = pipeline_of(workload, chip, workload.samples_per_step)
    low, high = pipe.range()
    return replace(
        pipe.copy,
        expected_time=pipe.expected_time,
        realistic_time=pipe.realistic_time,
        sustained_time=pipe.realistic_time,
        realistic_low=low,
        realistic_high=high,
        input_time=pipe.realistic_time,
    ), pipe


def pipeline_out(pipe: PipelineTime) -> InputPipelineOut:
    """The answer's `input_pipeline` block."""
    p = pipe.pipeline
    return InputPipelineOut(
        time_per_step_s=pipe.realistic_time,
        expected_time_per_step_s=pipe.expected_time,
        limit=pipe.limit,
        samples_per_step=p.samples_per_step,
        bytes_read=pipe.bytes_read,
        reads=pipe.blocks,
        storage_bandwidth_s=pipe.bandwidth_time,
        storage_iops_s=pipe.iops_time,
        decode_s=pipe.decode_time,
        host_copy_s=pipe.copy.realistic_time,
        device_bytes=pipe.copy.bytes,
        read_bytes_per_s=read_rate(p),
        iops=p.storage.iops,
        block_bytes=p.storage.block_bytes,
    )


def input_fields(pipe: PipelineTime) -> dict[str, object]:
    """A pipeline's own answer's explanation, assumptions and `input_pipeline` block."""
    return {
        "explanation": input_lines(pipe),
        "assumptions": input_assumptions(pipe),
        "input_pipeline": pipeline_out(pipe),
    }


def input_lines(pipe: PipelineTime) -> list[str]:
    """How long each stage takes per step and which one sets the pipeline's time."""
    p = pipe.pipeline
    samples = f"{p.samples_per_step:,} samples"
    memory = "pinned" if p.pinned else "pageable"
    return [
        f"Storage: {samples} of {fmt.bytes_(p.sample_bytes)}, {fmt.bytes_(pipe.bytes_read)} at "
        f"{fmt.rate(read_rate(p), 'B/s')}, take {fmt.seconds(pipe.bandwidth_time)}; each "
        f"sample is read in whole blocks of {fmt.bytes_(p.storage.block_bytes)}, "
        f"{pipe.blocks:,} reads at {fmt.number(p.storage.iops)} per second take "
        f"{fmt.seconds(pipe.iops_time)}.",
        f"Decode: {samples} x {fmt.seconds(p.decode_s_per_sample)} on {p.workers} "
        f"worker{'s' if p.workers != 1 else ''} take {fmt.seconds(pipe.decode_time)}.",
        f"Copy: {fmt.bytes_(pipe.copy.bytes)} host to device from {memory} memory take "
        f"{fmt.seconds(pipe.copy.realistic_time)} at {fmt.percent(link_fraction(pinned=p.pinned))}"
        f" of the link ({fmt.seconds(pipe.copy.expected_time)} at its full rate).",
        "With prefetching the stages work on different batches at once: a batch every "
        f"{fmt.seconds(pipe.realistic_time)}, set by {_LIMITS[pipe.limit]} ({pipe.limit}).",
    ]


def fed_line(pipe: PipelineTime, own: Roofline) -> str:
    """Whether the pipeline keeps up with the step it feeds (`own`: the step without it)."""
    copy = (
        ""
        if pipe.pipeline.pinned
        else f"; its copy from pageable memory adds {fmt.seconds(pipe.copy.realistic_time)} to "
        "the step, as it cannot overlap compute"
    )
    if pipe.realistic_time > own.realistic_time:
        return (
            f"Input-bound: the pipeline needs {fmt.seconds(pipe.realistic_time)} per step, "
            f"longer than the step's own {fmt.seconds(own.realistic_time)}: the chip waits "
            f"for its data{copy}."
        )
    return (
        f"The pipeline keeps up: {fmt.seconds(pipe.realistic_time)} per step, within the "
        f"step's own {fmt.seconds(own.realistic_time)}{copy}."
    )


def input_assumptions(pipe: PipelineTime) -> list[str]:
    """What the pipeline's time assumed."""
    storage = pipe.pipeline.storage
    lines = [
        "prefetching (DataLoader workers, prefetch_factor) keeps storage reads, decoding and "
        "the copy working on different batches at once: the pipeline's time is the slowest",
        "each sample is read on its own, in whole blocks (no read-ahead across samples)",
        "each worker decodes one sample at a time on its own core",
        "a copy from pageable memory cannot overlap compute; from pinned memory it runs on "
        "its own stream beside it",
    ]
    if storage.per_worker:
        lines.append("an object store's read rate is per connection, one per worker")
    return lines


@dataclass(frozen=True, slots=True)
class Feeding:
    """A training step's input pipeline, and the step's own roofline without it."""

    pipe: PipelineTime
    own: Roofline
    chip: Chip


def feed(
    workload: TransformerWorkload, result: TransformerEstimate, chip: Chip
) -> tuple[TransformerEstimate, Feeding | None]:
    """A training step fed by its workload's `input_pipeline` (`fed_estimate`), the replica's
    batch per step where the pipeline gives no samples; the estimate as it is otherwise."""
    fields, step = workload.input_pipeline, result.training
    if fields is None or step is None:
        return result, None
    replica = max(1, round(step.layout.micro_batch * step.layout.micro_batches))
    pipe = pipeline_of(fields, chip, replica)
    return fed_estimate(result, pipe), Feeding(pipe, result.roofline, chip)


def feeding_lines(feeding: Feeding | None) -> list[str]:
    """The pipeline's lines and whether it keeps up with the step; none without one."""
    if feeding is None:
        return []
    return [*input_lines(feeding.pipe), fed_line(feeding.pipe, feeding.own)]


def feeding_fields(feeding: Feeding | None) -> dict[str, object]:
    """The answer's `input_pipeline` block, where a pipeline feeds the step."""
    return {} if feeding is None else {"input_pipeline": pipeline_out(feeding.pipe)}


def feeding_assumptions(feeding: Feeding | None) -> list[str]:
    """What the pipeline's time assumed, where one feeds the step."""
    return [] if feeding is None else input_assumptions(feeding.pipe)


def alternatives(found: list[Alternative], feeding: Feeding | None) -> list[Alternative]:
    """What-if changes of a step fed by a pipeline, each fed by it too (its samples scaled
    with the change's work: a larger batch reads more), ranked against the fed step."""
    if feeding is None:
        return found
    pipe, chip = feeding.pipe, feeding.chip
    fed_found = []
    for change in found:
        samples = max(1, round(pipe.pipeline.samples_per_step * change.work_scale))
        scaled = pipeline_time(replace(pipe.pipeline, samples_per_step=samples), chip)
        fed_found.append(replace(change, roofline=fed(change.roofline, scaled)))
    return ranked(fed(feeding.own, pipe), fed_found)


def facts_of(pipe: PipelineTime) -> Fed:
    """A pipeline's own advice facts: the stage that limits it."""
    return Fed(pipe.limit)


def fed_facts(feeding: Feeding | None, own: WorkFacts | None) -> WorkFacts | None:
    """The step's advice facts, the pipeline's first where one feeds it."""
    return own if feeding is None else Fed(feeding.pipe.limit, own)
