"""The longest context a decode step can hold (docs/formulas.md#longest-context): within the
chip's memory, within a bound on the step's realistic time, and within the model's positions.

A decode step at context C holds C + 1 tokens in its KV cache (the cache and the token the
step adds: `memory_needed`), so the model's own maximum of P positions allows C <= P - 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine.architecture import Architecture
from app.engine.batch import smallest_batch
from app.engine.errors import InvalidInput
from app.engine.hardware import Chip
from app.engine.transformer import Phase
from app.engine.workload import (
    MAX_TOKENS,
    TransformerEstimate,
    TransformerSpec,
    estimate,
    memory_needed,
)

# The longest context the engine takes: a step at it holds MAX_TOKENS tokens.
MAX_CONTEXT = MAX_TOKENS - 1


class ContextLimit(StrEnum):
    """What sets the longest context."""

    MEMORY = "memory"  # one token more does not fit in the chip's memory
    LATENCY = "latency"  # one token more takes the step past the bound
    MODEL = "model"  # the model's maximum position embeddings (or MAX_CONTEXT)


@dataclass(frozen=True, slots=True)
class MaxContext:
    """The longest context of a decode step and what sets it."""

    max_context: int  # tokens of context before the step; 0 when not even 1 fits (or is fast)
    limited_by: ContextLimit
    memory_context: int  # the longest that fits in memory (up to MAX_CONTEXT); 0: not even 1
    latency_context: int | None  # with a bound: the longest within it (0: not even 1)
    model_context: int  # max positions - 1, or MAX_CONTEXT where the model gives none
    step: TransformerEstimate | None  # the decode step at max_context; None at 0


def model_context(arch: Architecture) -> int:
    """The longest context the model's positions allow: the step's token takes position C,
    the last of its P (0-based); MAX_CONTEXT where the config gives none."""
    if arch.max_positions is None:
        return MAX_CONTEXT
    return min(arch.max_positions - 1, MAX_CONTEXT)


def _longest(holds: Callable[[int], bool], upper: int, guess: int | None = None) -> int:
    """The longest context in 1..upper where a monotone (true..false) predicate holds, 0 where
    it holds nowhere: one below the shortest where it fails. A `guess` of the answer is
    checked first, in two evaluations (it holds there and fails one token later)."""
    if upper < 1:
        return 0
    first_fail = smallest_batch(
        lambda c: not holds(c), upper=upper, guess=None if guess is None else guess + 1
    )
    return upper if first_fail is None else first_fail - 1


def memory_context(arch: Architecture, chip: Chip, spec: TransformerSpec) -> int:
    """The longest decode context whose memory fits each chip at `spec`'s batch and layout
    (0 when not even context 1 fits), up to MAX_CONTEXT.

    Memory is affine in the context between the sliding window's end and beyond it (weights,
    workspace and reserve fixed; the full layers' cache grows with each token, a sliding
    layer's until its window): on the piece where the capacity is reached, the answer is
    start + floor((capacity - memory(start)) / per_token), checked at the boundary (it fits
    and one token more does not) and searched for where the rounding leaves it off by one.
    """

    def memory(context: int) -> float:
        return memory_needed(arch, chip, replace(spec, seq_len=context), spec.batch).total

    capacity = chip.memory_bytes
    window = arch.attention.sliding_window if arch.attention.sliding_layers else None
    # the pieces' starts: context 1, and where the cache (C + 1 tokens) fills the window
    starts = [1] + ([window - 1] if window is not None and 1 < window - 1 < MAX_CONTEXT else [])
    fitting = [s for s in starts if memory(s) <= capacity]
    if not fitting:
        return 0
    start = fitting[-1]
    end = next((s for s in starts if s > start), MAX_CONTEXT)
    at_start, at_end = memory(start), memory(end)
    if at_end <= capacity:  # only at the last piece's end: a next piece's start does not fit
        return end
    # the line through the piece's ends (so far apart that the slope keeps its digits)
    per_token = (at_end - at_start) / (end - start)
    guess = start + math.floor((capacity - at_start) / per_token)
    return _longest(lambda c: memory(c) <= capacity, MAX_CONTEXT, min(max(guess, 1), end))


def max_context(
    arch: Architecture, chip: Chip, spec: TransformerSpec, max_step_time: float | None = None
) -> MaxContext:
    """The longest context of `spec`'s decode step (its batch, layout and dtypes) that fits in
    memory, is within the model's positions and, with `max_step_time` (seconds), whose
    realistic step time is within it. The spec's own seq_len is only validated."""
    if spec.phase is not Phase.DECODE:
        raise InvalidInput(
            "phase", f"the longest context is a decode step's; this workload's is {spec.phase}"
        )
    estimate(arch, chip, spec)  # validates the spec
    by_memory = memory_context(arch, chip, spec)
    by_model = model_context(arch)
    # the smallest limit sets it; on a tie the first named: a latency search stops at the
    # others' limit, which then sets it
    candidates = [(by_memory, ContextLimit.MEMORY), (by_model, ContextLimit.MODEL)]
    by_latency = None
    if max_step_time is not None:
        bound = max_step_time

        def within(context: int) -> bool:
            step = estimate(arch, chip, replace(spec, seq_len=context), breakdown=False)
            return step.roofline.realistic_time <= bound

        # the step reads the whole cache, so its time grows with the context: searched up to
        # the other limits (beyond them the bound no longer matters)
        by_latency = _longest(within, min(by_memory, by_model))
        candidates.append((by_latency, ContextLimit.LATENCY))
    longest, limited_by = min(candidates, key=lambda c: c[0])
    if limited_by is ContextLimit.MEMORY and by_memory == MAX_CONTEXT:
        limited_by = ContextLimit.MODEL  # memory never ran out: the engine's bound set it
    step = estimate(arch, chip, replace(spec, seq_len=longest)) if longest else None
    return MaxContext(longest, limited_by, by_memory, by_latency, by_model, step)
