"""POST /check/trace and the trace page: a torch.profiler trace's bytes in, the engine's
analysis (app/engine/trace.py) out as a TraceCheck.

The trace is read one event at a time (app/services/trace_reader.py), never held whole. A
trace is judged only against a chip it ran on (app/services/trace_devices.py), which is known
once its events are read, before the analysis: otherwise it is refused (DeviceMismatch)
unless the caller allows the mismatch, and then the answer's warnings say so first.

`check` runs in a process of its own (app/http/isolated.py), within the trace's time and
memory budget: its arguments and its answer travel between processes, pickled."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from app.catalog.loader import ChipRecord
from app.engine import Software
from app.engine.trace import MAX_DISTINCT, TraceAnalysis, analyse
from app.engine.trace_events import collect
from app.schemas.trace_answers import (
    TraceBreakdown,
    TraceCheck,
    TraceChip,
    TraceCopies,
    TraceCopy,
    TraceKernels,
    TraceNotModelled,
    TraceOp,
    TracePart,
)
from app.services import trace_devices
from app.services.catalogs import Catalogs
from app.services.trace_reader import Document

NESTING = (
    "Nested operators count once: the outermost one the engine models, with everything it "
    "calls (aten::linear, not also its aten::addmm)."
)


def work(
    catalogs: Catalogs, chip: str, stack: Software, *, allow_device_mismatch: bool
) -> Callable[[bytes], TraceCheck]:
    """`check` on `chip`, resolved now (UnknownName: 404), of the body it will be given."""
    catalog = catalogs.chips()
    return partial(
        check,
        record=catalog.resolve(chip),
        catalog_version=catalog.version,
        stack=stack,
        allow_device_mismatch=allow_device_mismatch,
    )


def check(
    body: bytes,
    record: ChipRecord,
    catalog_version: str,
    stack: Software,
    allow_device_mismatch: bool,
) -> TraceCheck:
    """The trace in `body` judged on the chip of `record` (NotATrace, TooManyEvents;
    DeviceMismatch unless `allow_device_mismatch`)."""
    document = Document(body)
    events = collect(document.events())
    events.require_ops()
    warnings = []
    found = trace_devices.mismatch(events, document.device_properties, record)
    if found is not None:
        if not allow_device_mismatch:
            raise trace_devices.refusal(*found)
        warnings.append(trace_devices.warning(found[0], record))
    result = analyse(events, record.chip, stack)
    chip_out = TraceChip(id=record.entry.id, name=record.entry.name)
    return _answer(result, chip_out, catalog_version, stack, warnings)


def _notes(result: TraceAnalysis) -> list[str]:
    source = (
        "Measured times are the GPU kernels' durations, each counted in the operator that "
        "launched it."
        if result.kernels
        else "The trace has no GPU kernel events: measured times are the operators' durations "
        "on the CPU."
    )
    notes = [source, NESTING]
    if result.copies:
        notes.append(
            "Copies between host and device memory (the HtoD and DtoH memcpy events) are priced "
            "on the host link in `copies`, apart from the operators that launched them."
        )
    if result.skipped:
        notes.append(
            f"{result.skipped} cpu_op events without a usable ts or dur (missing, negative, "
            "or over 10^7 s) were skipped."
        )
    if any(n.reason.startswith("over the") for n in result.not_modelled):
        notes.append(
            f"Only {MAX_DISTINCT} distinct operators are analysed; the rest count as not modelled."
        )
    return notes


def _answer(
    result: TraceAnalysis, chip: TraceChip, version: str, stack: Software, warnings: list[str]
) -> TraceCheck:
    whole, judgement = result.whole, result.judgement
    kernels = result.kernels
    return TraceCheck(
        warnings=warnings,
        chip=chip,
        catalog_version=version,
        stack=stack,
        time_source="kernels" if kernels else "cpu_ops",
        events=result.events,
        measured_time_s=result.measured,
        modelled_time_s=result.modelled_time,
        expected_time_s=whole.expected_time if whole else None,
        realistic_time_s=whole.realistic_time if whole else None,
        ratio=judgement.ratio if judgement else None,
        time_lost_s=result.modelled_time - whole.expected_time if whole else None,
        bound=whole.bound if whole else None,
        verdict=judgement.verdict if judgement else None,
        advice=[*_elsewhere(result), *(judgement.advice if judgement else []), *_copy_line(result)],
        not_modelled_time_s=result.not_modelled_time,
        not_modelled_share=result.not_modelled_share,
        ops=[
            TraceOp(
                name=m.op.name,
                shapes=[list(t.shape) for t in m.op.inputs],
                dtype=m.op.inputs[0].dtype,
                count=m.count,
                flops=m.work.flops,
                bytes=m.work.bytes,
                measured_time_s=m.measured,
                expected_time_s=m.expected_time,
                realistic_time_s=m.realistic_time,
                ratio=m.measured / m.expected_time,
                time_lost_s=m.time_lost,
                bound=m.roofline.bound,
                verdict=m.judgement().verdict,
            )
            for m in result.modelled
        ],
        not_modelled=[
            TraceNotModelled(
                name=n.name, reason=n.reason, count=n.count, measured_time_s=n.measured
            )
            for n in result.not_modelled
        ],
        kernels=None
        if kernels is None
        else TraceKernels(
            kernels=kernels.count,
            kernel_time_s=kernels.time,
            unattributed_time_s=kernels.unattributed_time,
            op_cpu_time_s=kernels.op_cpu_time,
        ),
        copies=_copies(result),
        breakdown=_breakdown(result),
        notes=_notes(result),
    )


def _copy_line(result: TraceAnalysis) -> list[str]:
    """The share of the measured time the host copies take at best, where they are priced."""
    line = "" if result.copies is None else result.copies.share_line(result.measured)
    return [line] if line else []


def _copies(result: TraceAnalysis) -> TraceCopies | None:
    copies = result.copies
    if copies is None:
        return None
    return TraceCopies(
        copies=[
            TraceCopy(
                direction=g.direction.value,
                memory="pinned" if g.pinned else "pageable",
                bytes=g.bytes,
                count=g.count,
                measured_time_s=g.measured,
                expected_time_s=None if g.roofline is None else g.expected_time,
                realistic_time_s=None if g.roofline is None else g.realistic_time,
                launched_by=sorted(g.launchers),
            )
            for g in copies.groups
        ],
        measured_time_s=copies.measured,
        expected_time_s=copies.expected_time,
        share=copies.expected_time / result.measured if result.measured > 0 else 0.0,
        unpriced=copies.unpriced or None,
    )


def _elsewhere(result: TraceAnalysis) -> list[str]:
    line = None if result.breakdown is None else result.breakdown.elsewhere()
    return [] if line is None else [line]


def _breakdown(result: TraceAnalysis) -> TraceBreakdown | None:
    found = result.breakdown
    if found is None:
        return None
    window = found.timeline.window
    first = found.first
    return TraceBreakdown(
        window_s=window,
        steps=found.timeline.steps,
        parts=[
            TracePart(
                part=p.name,
                time_s=p.time,
                share=p.time / window if window > 0 else 0.0,
                limit_s=p.limit,
                limit=p.limit_words,
                over_s=p.over,
                advice=p.advice,
            )
            for p in found.parts
        ],
        mapped_kernel_time_s=found.mapped,
        unmapped_kernel_time_s=found.unmapped,
        attack_first=None if first is None else first.name,
        attack_first_advice=found.attack_first(),
    )
