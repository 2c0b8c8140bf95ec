"""A torch.profiler trace's events, read one at a time (docs/formulas.md#traces).

The reader hands each element of `traceEvents` to `TraceEvents.add` as it parses it, so that
a trace is never held whole: what the analysis needs of an event is kept (a `cpu_op` with
shapes as an `Event`, a device event's time and launcher, a count), the rest dropped. The
count of elements is bounded (MAX_EVENTS), and each event kept is bounded by what it holds
(a name of at most 200 characters, its shapes as the trace wrote them).
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
    device: list[tuple[float, object]] = field(default_factory=list)  # (dur, External id)
    devices: set[object] = field(default_factory=set)  # the device events' args["device"]
    cuda_api_calls: int = 0
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
        if category == "cpu_op":
            self._cpu_op(event)
        elif category in DEVICE_CATEGORIES:
            args = event.get("args")
            if isinstance(args, dict) and not isinstance(args.get("device"), (list, dict)):
                self.devices.add(args.get("device"))  # an id, as deviceProperties gives them
            dur = duration(event)
            if dur is not None:
                launcher = args.get("External id") if isinstance(args, dict) else None
                self.device.append((dur, launcher))
        elif category in CUDA_API_CATEGORIES:
            self.cuda_api_calls += 1

    def _cpu_op(self, event: Mapping[str, object]) -> None:
        self.cpu_ops += 1
        args = event.get("args")
        if not isinstance(args, dict) or "Input Dims" not in args:
            return
        start, dur = _number(event.get("ts")), duration(event)
        if start is None or dur is None:
            self.skipped += 1
            return
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
        self.ops.append(Event(key, thread, start, dur, args.get("External id")))

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
