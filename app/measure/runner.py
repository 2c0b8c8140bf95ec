"""`measure(fn, *args, chip=...)`: time a function, count its work from its aten operators,
and judge the time against the chip's roofline (docs/formulas.md#measuring-a-function)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.engine import Software
from app.measure import findings, judging
from app.measure.measure_errors import MeasureError, TorchMissing
from app.measure.op_counts import Counts, count
from app.measure.timing import MAX_TIME_S, MIN_REPEATS, TARGET_CI, Timing, perf_counter_clock
from app.measure.timing import time_calls as _time_calls


@dataclass(frozen=True, slots=True)
class Measurement:
    """A function measured: its timing, its work, the service's (or the local engine's)
    /check answer (None without a chip), the advice, and the warnings that come before the
    verdict (a chip the function did not run on)."""

    name: str
    chip: str | None
    timing: Timing
    counts: Counts
    answer: dict[str, Any] | None
    advice: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    stack: Software = Software.EAGER  # the software it is judged as

    @property
    def workload(self) -> dict[str, Any]:
        """The `ops` workload judged: compiled, with the kernels the compiler fuses."""
        return self.counts.workload(compiled=self.stack is Software.COMPILED)

    @property
    def verdict(self) -> str | None:
        """near_roofline, room_to_improve, ... (None without a chip)."""
        return None if self.answer is None else str(self.answer["verdict"])

    def report(self) -> str:
        """The printed report: time, work, expectations, verdict, top ops and advice; judged
        locally, the ceilings used, before the advice."""
        text = findings.report(
            self.name, self.timing, self.counts, self.answer, self.advice, warnings=self.warnings
        )
        if self.answer is None or self.chip != judging.LOCAL:
            return text
        lines = text.split("\n")
        advice = next((i for i, line in enumerate(lines) if line.startswith("  - ")), len(lines))
        line = "  ceilings " + judging.ceilings_line(self.answer, self.counts.ops)
        return "\n".join([*lines[:advice], line, *lines[advice:]])

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form: `workload` is the `ops` workload judged."""
        return {
            "name": self.name,
            "chip": self.chip,
            "warnings": list(self.warnings),
            "timing": self.timing.as_dict(),
            "work": self.counts.as_dict(),
            "workload": self.workload,
            "answer": self.answer,
            "advice": list(self.advice),
        }


def _torch_trace() -> Any:
    try:
        from app.measure import torch_trace  # noqa: PLC0415 (needs the optional torch)
    except ImportError as error:
        if (error.name or "").split(".")[0] == "torch":
            raise TorchMissing from error
        raise
    return torch_trace


def measure(
    fn: Callable[..., object],
    *args: object,
    chip: str | None = None,
    url: str | None = None,
    stack: str | None = None,
    repeats: int = MIN_REPEATS,
    warmup: int = 3,
    max_time_s: float = MAX_TIME_S,
    target_ci: float = TARGET_CI,
    allow_device_mismatch: bool = False,
    reprobe: bool = False,
) -> Measurement:
    """Time `fn(*args)` and judge it on `chip`.

    The first call is timed apart (compilation, allocation), then `fn` runs once under
    PyTorch's dispatch to record its operators and FLOPs, then `warmup` untimed calls, then
    at least `repeats` timed ones, until the median's 95% interval is within `target_ci` of it
    or `max_time_s` has passed (CUDA events on a GPU, perf_counter on the CPU). With a `chip`
    (a catalog id or alias), the service at `url` (default $ROOFCHECK_URL, else
    http://localhost:8000) judges the median; `chip="local"` judges it here against this
    machine's ceilings on the device its tensors live on (probed with PyTorch once, then
    read from the cache; `reprobe` measures them again); without one nothing is judged.
    `stack`: the software it is judged as; by default `compiled` for a torch.compile'd callable
    (the advice says it was detected), else `eager`.

    The chip is resolved before anything runs (an unknown name: MeasureError with the
    service's suggestions). A function whose tensors all stay on the CPU is not judged against
    a catalog chip (MeasureError, before the timing) unless `allow_device_mismatch`: then
    the report's first line after the title says so.
    """
    trace = _torch_trace()
    stack, detected = findings.judged_stack(fn, stack)
    try:
        software = Software(stack)
    except ValueError:
        raise MeasureError(
            f"unknown stack {stack!r}; one of {', '.join(s.value for s in Software)}"
        ) from None
    url = url or judging.default_url()
    catalogued = None if chip in (None, judging.LOCAL) else judging.resolve_chip(url, chip)

    def call() -> object:
        return fn(*args)

    trace.synchronize()
    start = time.perf_counter()
    call()
    trace.synchronize()
    first_call_s = time.perf_counter() - start
    recorded, flops = trace.record(fn, args)
    counts = count(recorded, flops)
    devices = trace.devices(args, recorded)
    warnings: tuple[str, ...] = ()
    if catalogued is not None:
        judging.check_op_count(len(counts.ops))
        names = trace.device_names(devices)
        warnings = _device_warnings(devices, names, catalogued, allowed=allow_device_mismatch)
    gpu = any(device.startswith("cuda") for device in devices)
    timing = _time_calls(
        call,
        trace.cuda_events_clock() if gpu else perf_counter_clock,
        first_call_s=first_call_s,
        clock_name="cuda_events" if gpu else "perf_counter",
        warmup=warmup,
        repeats=repeats,
        max_time_s=max_time_s,
        target_ci=target_ci,
    )
    answer = None
    judged = counts.workload(compiled=software is Software.COMPILED)
    if chip == judging.LOCAL:
        device = min((d for d in devices if d.startswith("cuda")), default="cpu")
        answer = judging.local_check(
            counts.ops,
            timing.median_s,
            software,
            device,
            groups=judged.get("groups", []),
            reprobe=reprobe,
        )
    elif catalogued is not None:
        answer = judging.service_check(url, catalogued["id"], software, judged, timing.median_s)
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    return Measurement(
        name=name,
        chip=chip,
        timing=timing,
        counts=counts,
        answer=answer,
        advice=(*detected, *findings.advice(counts, timing, answer)),
        warnings=warnings,
        stack=software,
    )


def time_again(
    fn: Callable[..., object], *args: object, clock: str, repeats: int, warmup: int
) -> Timing:
    """Exactly `repeats` more timed calls of `fn(*args)`, after `warmup` untimed ones, on the
    clock the first measurement used ("cuda_events" or "perf_counter"): the repeats of a run
    confirming a suspected regression (`roofcheck measure --submit --confirm N`)."""
    trace = _torch_trace()

    def call() -> object:
        return fn(*args)

    return _time_calls(
        call,
        trace.cuda_events_clock() if clock == "cuda_events" else perf_counter_clock,
        first_call_s=0.0,  # warm already: the first call was timed with the measurement
        clock_name=clock,
        warmup=warmup,
        repeats=repeats,
        max_repeats=repeats,
    )


def _device_warnings(
    devices: set[str], names: dict[str, str], chip: dict[str, Any], *, allowed: bool
) -> tuple[str, ...]:
    """The warning of a run judged against a chip it did not run on, when allowed; else
    MeasureError, which names both devices and the ways out."""
    why = judging.device_mismatch(devices, chip, names)
    if why is None:
        return ()
    on_gpu = bool(names)
    if not allowed:
        first = "judge it against the chip it ran on" if on_gpu else "move its tensors to the chip"
        raise MeasureError(
            f"not judged: {why}, so its time says nothing of that chip. To judge it, {first}; "
            f"judge it on this machine with chip='{judging.LOCAL}' (--chip {judging.LOCAL}); "
            "or judge it anyway with allow_device_mismatch=True (--allow-device-mismatch)"
        )
    device = "another GPU's" if on_gpu else "a CPU's"
    return (
        f"Judged against {chip['id']}, a chip the function did not run on: {why} "
        f"(allow_device_mismatch). The verdict and advice compare {device} time with that "
        "chip's roofline.",
    )
