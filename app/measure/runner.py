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
    /check answer (None without a chip) and the advice."""

    name: str
    chip: str | None
    timing: Timing
    counts: Counts
    answer: dict[str, Any] | None
    advice: tuple[str, ...]

    @property
    def verdict(self) -> str | None:
        """near_roofline, room_to_improve, ... (None without a chip)."""
        return None if self.answer is None else str(self.answer["verdict"])

    def report(self) -> str:
        """The printed report: time, work, expectations, verdict, top ops and advice."""
        return findings.report(self.name, self.timing, self.counts, self.answer, self.advice)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form: `workload` is the `ops` workload judged."""
        return {
            "name": self.name,
            "chip": self.chip,
            "timing": self.timing.as_dict(),
            "work": self.counts.as_dict(),
            "workload": self.counts.workload(),
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
    stack: str = "eager",
    repeats: int = MIN_REPEATS,
    warmup: int = 3,
    max_time_s: float = MAX_TIME_S,
    target_ci: float = TARGET_CI,
) -> Measurement:
    """Time `fn(*args)` and judge it on `chip`.

    The first call is timed apart (compilation, allocation), then `fn` runs once under
    PyTorch's dispatch to record its operators and FLOPs, then `warmup` untimed calls, then
    at least `repeats` timed ones, until the median's 95% interval is within `target_ci` of it
    or `max_time_s` has passed (CUDA events on a GPU, perf_counter on the CPU). With a `chip`
    (a catalog id or alias), the service at `url` (default $ROOFCHECK_URL, else
    http://localhost:8000) judges the median; `chip="local"` judges it here against the
    ceilings `roofcheck probe` measures on this machine; without one nothing is judged.
    """
    trace = _torch_trace()
    try:
        software = Software(stack)
    except ValueError:
        raise MeasureError(
            f"unknown stack {stack!r}; one of {', '.join(s.value for s in Software)}"
        ) from None

    def call() -> object:
        return fn(*args)

    trace.synchronize()
    start = time.perf_counter()
    call()
    trace.synchronize()
    first_call_s = time.perf_counter() - start
    recorded, flops = trace.record(fn, args)
    counts = count(recorded, flops)
    gpu = trace.on_gpu(args, recorded)
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
    if chip == judging.LOCAL:
        answer = judging.local_check(counts.ops, timing.median_s, software)
    elif chip is not None:
        url = url or judging.default_url()
        answer = judging.service_check(url, chip, software, counts.workload(), timing.median_s)
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return Measurement(
        name=name,
        chip=chip,
        timing=timing,
        counts=counts,
        answer=answer,
        advice=tuple(findings.advice(counts, timing, answer)),
    )
