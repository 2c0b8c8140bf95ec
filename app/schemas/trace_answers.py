"""The answer of POST /check/trace: a torch.profiler trace's operators against the roofline
(docs/api.md, "Import a profiler trace"; docs/formulas.md#traces). SI units throughout."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.engine import Bound, Dtype, Software, Verdict


class _Out(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)


class TraceChip(_Out):
    """The chip the trace is judged against."""

    id: str
    name: str


class TraceOp(_Out):
    """The calls of one operator with one set of input shapes."""

    name: str = Field(description="As the profiler names it, e.g. aten::linear.")
    shapes: list[list[int]] = Field(description="Its tensor inputs' shapes.")
    dtype: Dtype = Field(description="Its first tensor input's dtype.")
    count: int = Field(description="Calls counted (nested calls inside them are not).")
    flops: float = Field(description="FLOPs of one call.")
    bytes: float = Field(description="Bytes of one call: its inputs read, its output written.")
    measured_time_s: float = Field(description="All its calls, as measured.")
    expected_time_s: float = Field(description="All its calls' ideal roofline time.")
    realistic_time_s: float = Field(description="All its calls' realistic time on the stack.")
    ratio: float = Field(description="measured / expected.")
    time_lost_s: float = Field(description="measured - expected: what sorts the list.")
    bound: Bound = Field(description="compute, memory or overhead, for one call.")
    verdict: Verdict = Field(description="Its mean call judged as /check judges.")


class TraceNotModelled(_Out):
    """Time in operators the engine does not model, by name and reason."""

    name: str
    reason: str
    count: int
    measured_time_s: float


class TraceKernels(_Out):
    """The device's view, when the trace has GPU kernel events."""

    kernels: int = Field(description="Kernel, memcpy and memset events.")
    kernel_time_s: float = Field(description="Their total duration.")
    unattributed_time_s: float = Field(description="Of it, launched by no operator in the trace.")
    op_cpu_time_s: float = Field(description="The modelled operators' own time on the CPU.")


class TraceCopy(_Out):
    """Copies between host and device memory of one direction, memory and size."""

    direction: Literal["h2d", "d2h"]
    memory: Literal["pinned", "pageable"] = Field(description="The host end's memory.")
    bytes: float | None = Field(description="One copy's, from the memcpy event (null: none).")
    count: int
    measured_time_s: float = Field(description="All of them, as measured.")
    expected_time_s: float | None = Field(
        description="All of them at the host link's full rate (null: not priced)."
    )
    realistic_time_s: float | None = Field(
        description="All of them at the rate copies from that memory reach."
    )
    launched_by: list[str] = Field(description="The operators that launched them.")


class TraceCopies(_Out):
    """The trace's copies between host and device memory, priced as copies, apart from the
    operators that launched them."""

    copies: list[TraceCopy] = Field(description="By measured time, most first.")
    measured_time_s: float
    expected_time_s: float = Field(description="The priced ones at the host link's full rate.")
    share: float = Field(
        description="expected_time_s / the trace's measured_time_s: the least share of the "
        "measured time the copies take, 0 to 1."
    )
    unpriced: str | None = Field(description="Why some copies are not priced; null: none.")


class TracePart(_Out):
    """One part of the step's wall time."""

    part: Literal["kernels", "copies", "launch_gaps", "host_waits", "synchronisation", "other"]
    time_s: float
    share: float = Field(description="Of window_s, 0 to 1.")
    limit_s: float = Field(description="The least time the part could take.")
    limit: str = Field(description="What the limit is.")
    over_s: float = Field(description="max(0, time_s - limit_s).")
    advice: str


class TraceBreakdown(_Out):
    """The step's wall time split into parts that add up to it, each against its limit."""

    window_s: float = Field(description="The recorded steps, or the whole trace without them.")
    steps: int = Field(description="ProfilerStep# events in the window (0: none recorded).")
    parts: list[TracePart] = Field(description="Adding up to window_s.")
    mapped_kernel_time_s: float = Field(description="Kernels launched by modelled operators.")
    unmapped_kernel_time_s: float = Field(description="Kernels of operators not modelled.")
    attack_first: (
        Literal["kernels", "copies", "launch_gaps", "host_waits", "synchronisation", "other"] | None
    ) = Field(description="The part furthest over its limit; null: all within them.")
    attack_first_advice: str


class TraceCheck(_Out):
    """A trace's operators, each beside its roofline time, sorted by time lost, and the whole."""

    warnings: list[str] = Field(
        description="What the caller must read before the verdict: a trace judged against a "
        "chip it did not run on (allow_device_mismatch=true). Empty otherwise."
    )
    chip: TraceChip
    catalog_version: str
    stack: Software = Field(description="Whose published runs the realistic times assume.")
    time_source: Literal["kernels", "cpu_ops"] = Field(
        description="kernels: the GPU kernels' durations; cpu_ops: the operators' durations "
        "on the CPU (a trace without kernel events)."
    )
    events: int = Field(description="Events in the trace.")
    measured_time_s: float = Field(
        description="All counted time: modelled operators, those not modelled, host copies."
    )
    modelled_time_s: float = Field(description="Measured time in modelled operators.")
    expected_time_s: float | None = Field(description="Their ideal roofline time (null: none).")
    realistic_time_s: float | None
    ratio: float | None = Field(description="modelled_time_s / expected_time_s.")
    time_lost_s: float | None = Field(description="modelled_time_s - expected_time_s.")
    bound: Bound | None
    verdict: Verdict | None = Field(description="The modelled operators as a whole.")
    advice: list[str]
    not_modelled_time_s: float
    not_modelled_share: float = Field(description="Of measured_time_s, 0 to 1.")
    ops: list[TraceOp] = Field(description="Sorted by time lost, most first.")
    not_modelled: list[TraceNotModelled] = Field(description="Sorted by time, most first.")
    kernels: TraceKernels | None = Field(description="Null when the trace has no kernel events.")
    copies: TraceCopies | None = Field(
        description="Copies between host and device memory (HtoD, DtoH memcpy events); null: none."
    )
    breakdown: TraceBreakdown | None = Field(
        description="The step's time in parts; null when the trace has no kernel events."
    )
    notes: list[str]
