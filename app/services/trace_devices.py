"""Which device a torch.profiler trace ran on, and whether that is the chip it would be judged
against: a trace is judged only against a chip it ran on.

The catalog's chips are accelerators, none a CPU. A GPU run's trace has kernel events (the
profiler's CUDA activity) and names its GPUs (`deviceProperties`, each with an `id` that the
kernels' `args["device"]` gives). A trace without kernel events ran on the CPU, unless it holds
the host's calls to the CUDA runtime or driver: then it is a GPU run recorded without
ProfilerActivity.CUDA, whose operator times are the launches, not the work.
"""

from __future__ import annotations

from app.catalog.loader import ChipRecord
from app.engine.trace_events import TraceEvents
from app.services.profiles import device_matches

RECORD_GPU = "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]"


class DeviceMismatch(Exception):
    """The trace did not run on the chip it would be judged against; the message names both
    devices and what to do."""


def _gpu_names(device_properties: object, used: set[object]) -> set[str]:
    """The names of the GPUs whose kernels the trace holds (of `used`, the device ids its
    kernels give), or all the GPUs it lists where the kernels name none of them."""
    listed = device_properties if isinstance(device_properties, list) else []
    names = {
        d.get("id"): d["name"]
        for d in listed
        if isinstance(d, dict)
        and isinstance(d.get("name"), str)
        and not isinstance(d.get("id"), (list, dict))  # an id, as the kernels give them
    }
    return {names[i] for i in used if i in names} or set(names.values())


def mismatch(
    events: TraceEvents, device_properties: object, record: ChipRecord
) -> tuple[str, str] | None:
    """Why the trace whose `events` and `deviceProperties` were read is no run on the catalog
    chip `record`, and what to do; None when it may be one (kernel events, on a GPU that is
    the chip or that it does not name)."""
    chip = f"{record.entry.id} ({record.entry.name})"
    if events.device:
        names = _gpu_names(device_properties, events.devices)
        if not names or any(device_matches(name, "torch", record) for name in names):
            return None
        ran_on = ", ".join(sorted(names))
        return f"it ran on {ran_on}, not on {chip}", "judge it against the chip it ran on"
    if calls := events.cuda_api_calls:
        why = (
            f"the trace holds {calls} CUDA API calls but no GPU kernel events: it was recorded "
            f"without ProfilerActivity.CUDA, so its times are the CPU's launches, not the work "
            f"of {chip}, an accelerator"
        )
        return why, f"record it with {RECORD_GPU}"
    why = f"the trace has no GPU kernel events: it ran on cpu, not on {chip}, an accelerator"
    return why, f"record the run on the chip with {RECORD_GPU}"


def refusal(why: str, remedy: str) -> DeviceMismatch:
    """The 422's error: what is wrong, what to do, and the way to judge it anyway."""
    return DeviceMismatch(
        f"not judged: {why}. To judge it, {remedy}, or pass allow_device_mismatch=true"
    )


def warning(why: str, record: ChipRecord) -> str:
    """The first thing the answer says when the mismatch was allowed."""
    return (
        f"Judged against {record.entry.id}, a chip the trace did not run on: {why} "
        "(allow_device_mismatch). The verdict and advice compare another device's times with "
        "that chip's roofline."
    )
