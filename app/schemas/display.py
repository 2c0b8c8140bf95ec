"""What an answer's `formatted` object shows: its times, rates and sizes as a person reads
them ('1.24 ms', '12,300 tok/s', '16.1 GB'), from app/formatting.py. Display strings only:
a program reads the numeric fields (the *_s seconds, bytes, FLOPs) beside them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app import formatting as fmt

# (key in `formatted`, the answer's field, how it reads); a field at None, or at 0 where
# nothing happened (no communication, no fixed costs), is left out
Shown = tuple[tuple[str, str, Callable[[Any], str]], ...]

DESCRIPTION = (
    "The answer's times, token rates and memory sizes for people to read (e.g. '1.24 ms', "
    "'12,300 tok/s'): only those the answer has. Display strings; programs read the numeric "
    "fields."
)


def _tokens(rate: float) -> str:
    return fmt.per_second(rate, "tok")


def _range(bounds: list[float]) -> str:
    low, high = bounds
    return f"{fmt.seconds(low)} to {fmt.seconds(high)}"


EXPECTED_TIME: Shown = (
    ("expected_time", "expected_time_s", fmt.seconds),
    ("realistic_time", "realistic_time_s", fmt.seconds),
    ("realistic_range", "realistic_range_s", _range),
    ("sustained_time", "sustained_time_s", fmt.seconds),
    ("compute_time", "compute_time_s", fmt.seconds),
    ("memory_time", "memory_time_s", fmt.seconds),
    ("communication_time", "communication_time_s", fmt.seconds),
    ("overhead_time", "overhead_time_s", fmt.seconds),
    ("memory_required", "memory_required_bytes", fmt.bytes_),
    ("memory_available", "memory_available_bytes", fmt.bytes_),
    ("tokens_per_s", "tokens_per_s", _tokens),
    ("realistic_tokens_per_s", "realistic_tokens_per_s", _tokens),
    ("time_to_first_token", "time_to_first_token_s", fmt.seconds),
    ("time_per_output_token", "time_per_output_token_s", fmt.seconds),
    ("unfused_time", "unfused_time_s", fmt.seconds),
    ("fused_time", "fused_time_s", fmt.seconds),
    ("realistic_time_to_train", "training.realistic_time_to_train_s", fmt.duration),
)
CHECK: Shown = (
    ("measured_time", "measured_time_s", fmt.seconds),
    ("ratio", "ratio", fmt.times),
    *EXPECTED_TIME,
)
MEMORY_FIT: Shown = (
    ("required", "required_bytes", fmt.bytes_),
    ("available", "available_bytes", fmt.bytes_),
)
OPTIMAL_BATCH: Shown = (
    ("max_step_time", "max_step_time_s", fmt.seconds),
    ("throughput_asymptote", "throughput_asymptote_tokens_per_s", _tokens),
)


def formatted(answer: object, shown: Shown) -> dict[str, str]:
    """`answer`'s fields in `shown` (a dotted name reads a nested answer's), as display
    strings."""
    texts = {}
    for key, name, show in shown:
        value: Any = getattr(answer, name) if "." not in name else _dotted(answer, name)
        if value is not None and value != 0:
            texts[key] = show(value)
    return texts


def _dotted(answer: object, name: str) -> Any:
    """The nested answer's field `name` names ('training.realistic_time_to_train_s'), or None
    where a part of it is None."""
    value: Any = answer
    for part in name.split("."):
        value = getattr(value, part)
        if value is None:
            break
    return value
