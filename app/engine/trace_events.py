"""A torch.profiler trace's events, read one at a time (docs/formulas.md#traces).

The reader hands each element of `traceEvents` to `TraceEvents.add` as it parses it, so that
a trace is never held whole: what the analysis needs of an event is kept (a `cpu_op` with
shapes as an `Event`, a device event's times, launcher and copy (`Device`), the host's
launches and synchronisations (`Call`), a count), the rest dropped. The count of elements is
bounded (MAX_EVENTS), and each event kept is bounded by what it holds (a name of at most 200
characters, its shapes as the trace wrote them).

Kineto ties each device event to the host call that queued it by `args["correlation"]`, the
same number on both (its `ac2g` flow events draw that link in a viewer; they add nothing
here), and to the operator that made the call by `args["External id"]`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from app.engine.errors import EngineError
from app.engine.trace_ops import uses_arguments

MAX_EVENTS = 500_000
DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
CUDA_API_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})  # the host's calls to CUDA
# the host calls that block it until the device has done its work (CUDA Runtime API,
# "Synchronization" and "Memory Management": cudaMemcpy is synchronous with the host)
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
    }
)
# the host calls that replay a captured CUDA graph: its kernels share the call's correlation
GRAPH_CALLS = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})
STEP = "ProfilerStep#"  # torch.profiler's schedule marks each step with one such event
US = 1e-6  # the trace's times are microseconds
MAX_DURATION_US = 1e7 / US  # 10^7 s, the longest measured time roofcheck judges
HOW = (
    "a JSON object whose traceEvents hold cpu_op events with 'Input Dims' in their args: "
    "record one with `with torch.profiler.profile(record_shapes=True) as prof: ...` and "
    "`prof.export_chrome_trace('trace.json')`"
)
SMALLER = (
    "record a smaller trace: fewer steps (`schedule=torch.profiler.schedule(wait=1, warmup=1, "
    "active=1)` records one), keeping record_shapes=True and leaving out with_stack and "
    "profile_memory, whose events only add to its size"
)


class NotATrace(EngineError):
    """The JSON is not a torch.profiler trace with shapes; the message says what is."""


class TooManyEvents(EngineError):
    """The trace holds more events than are analysed."""


Key = tuple[str, str, str, str]  # name, and the repr of its shapes, types and arguments
Raw = tuple[list[object], list[object], list[object]]  # the key's shapes, types, arguments


@dataclass(frozen=True, slots=True)
class Device:
    """One device event (kernel, memcpy or memset): its times in microseconds (`start` None
    without a usable ts), the operator that launched it (External id), the host call that
    queued it (correlation), its category and, for a copy, its name and bytes."""

    start: float | None
    dur: float
    external_id: object
    correlation: object
    category: str
    name: str = ""
    bytes: float | None = None

    @property
    def end(self) -> float:
        return (self.start or 0.0) + self.dur


@dataclass(frozen=True, slots=True)
class Call:
    """A host call to CUDA that queued device work (its correlation; `graph`, a captured
    graph's kernels) or blocked the host until the device was done (`sync`): its times in
    microseconds."""

    start: float
    dur: float
    correlation: object
    sync: bool
    graph: bool = False


@dataclass(slots=True)
class Event:
    """One cpu_op event: its times in microseconds and its key."""

    key: Key
    thread: tuple[str, str]
    start: float
    dur: float
    external_id: object


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def duration(event: Mapping[str, object]) -> float | None:
    """An event's `dur` in microseconds, or None where it is no duration a run can have:
    missing, negative, or longer than MAX_DURATION_US."""
    dur = _number(event.get("dur"))
    return dur if dur is not None and 0 <= dur <= MAX_DURATION_US else None


def _id(value: object) -> object:
    """An id as the trace gives it (a number or a string), or None for anything else."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


@dataclass(slots=True)
class TraceEvents:
    """What the analysis keeps of a trace's events, added one at a time."""

    count: int = 0  # elements of traceEvents, objects or not
    cpu_ops: int = 0  # cpu_op events, with shapes or not
    skipped: int = 0  # cpu_op events with shapes but no usable ts or dur
    ops: list[Event] = field(default_factory=list)  # the cpu_op events with shapes
    raw: dict[Key, Raw] = field(default_factory=dict)  # each key's values, as recorded
    device: list[Device] = field(default_factory=list)
    devices: set[object] = field(default_factory=set)  # the device events' args["device"]
    cuda_api_calls: int = 0
    calls: list[Call] = field(default_factory=list)  # launches and synchronisations
    steps: list[tuple[float, float]] = field(default_factory=list)  # ProfilerStep# spans
    span: tuple[float, float] | None = None  # first start, last end of the timed events
    _uses_arguments: dict[str, bool] = field(default_factory=dict)  # by operator name
    # one object for each distinct key and thread, however many events share it
    _keys: dict[Key, Key] = field(default_factory=dict)
    _threads: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def add(self, event: object) -> None:
        """Keep what the analysis needs of one element of traceEvents (TooManyEvents past
        MAX_EVENTS)."""
        self.count += 1
        if self.count > MAX_EVENTS:
            raise TooManyEvents(
                f"the trace has more than {MAX_EVENTS} events, at most {MAX_EVENTS} are read: "
                + SMALLER
            )
        if not isinstance(event, dict):
            return
        category = event.get("cat")
        name = event.get("name")
        if isinstance(name, str) and name.startswith(STEP):
            self._step(event)
        if category == "cpu_op":
            self._cpu_op(event)
        elif category in DEVICE_CATEGORIES:
            self._device(event, str(category))
        elif category in CUDA_API_CATEGORIES:
            self.cuda_api_calls += 1
            self._call(event)

    def _timed(self, event: Mapping[str, object]) -> tuple[float, float] | None:
        """The event's (ts, dur), now part of the trace's span; None without both."""
        start, dur = _number(event.get("ts")), duration(event)
        if start is None or dur is None:
            return None
        first, last = self.span or (start, start + dur)
        self.span = (min(first, start), max(last, start + dur))
        return start, dur

    def _step(self, event: Mapping[str, object]) -> None:
        timed = self._timed(event)
        if timed is not None:
            self.steps.append((timed[0], timed[0] + timed[1]))

    def _device(self, event: Mapping[str, object], category: str) -> None:
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        if not isinstance(args.get("device"), (list, dict)):
            self.devices.add(args.get("device"))  # an id, as deviceProperties gives them
        dur = duration(event)
        if dur is None:
            return
        timed = self._timed(event)
        name = event.get("name")
        copied = _number(args.get("bytes"))
        self.device.append(
            Device(
                start=None if timed is None else timed[0],
                dur=dur,
                external_id=_id(args.get("External id")),
                correlation=_id(args.get("correlation")),
                category=category,
                name=name[:200] if isinstance(name, str) and category == "gpu_memcpy" else "",
                bytes=copied if copied is not None and copied > 0 else None,
            )
        )

    def _call(self, event: Mapping[str, object]) -> None:
        args = event.get("args")
        correlation = _id(args.get("correlation")) if isinstance(args, dict) else None
        sync = event.get("name") in SYNC_CALLS
        if correlation is None and not sync:
            return
        timed = self._timed(event)
        if timed is not None:
            graph = event.get("name") in GRAPH_CALLS
            self.calls.append(Call(timed[0], timed[1], correlation, sync, graph))

    def _cpu_op(self, event: Mapping[str, object]) -> None:
        self.cpu_ops += 1
        args = event.get("args")
        if not isinstance(args, dict) or "Input Dims" not in args:
            return
        timed = self._timed(event)
        if timed is None:
            self.skipped += 1
            return
        start, dur = timed
        name = event.get("name")
        name = name[:200] if isinstance(name, str) else ""
        uses = self._uses_arguments.get(name)
        if uses is None:
            uses = self._uses_arguments[name] = uses_arguments(name)
        values = (
            _list(args.get("Input Dims")),
            _list(args.get("Input type")),
            _list(args.get("Concrete Inputs")) if uses else [],
        )
        key = (name, repr(values[0]), repr(values[1]), repr(values[2]))
        self.raw.setdefault(key, values)
        key = self._keys.setdefault(key, key)
        thread = (str(event.get("pid")), str(event.get("tid")))
        thread = self._threads.setdefault(thread, thread)
        self.ops.append(Event(key, thread, start, dur, _id(args.get("External id"))))

    def require_ops(self) -> None:
        """NotATrace unless some cpu_op event has shapes and usable times."""
        if not self.ops:
            why = (
                "it has no cpu_op events" if not self.cpu_ops else "it was recorded without shapes"
            )
            raise NotATrace(f"not a torch.profiler trace with shapes ({why}): expected {HOW}")


def collect(events: Iterable[object]) -> TraceEvents:
    """The events of a parsed traceEvents list (the reader streams them into `add`)."""
    found = TraceEvents()
    for event in events:
        found.add(event)
    return found
