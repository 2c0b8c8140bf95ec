"""What a transcendental function costs in PyTorch's kernels on an NVIDIA GPU
(docs/formulas.md#transcendental-functions-on-a-gpu).

PyTorch's CUDA kernels, eager and compiled alike, evaluate exp, log, cos, tanh, erf and
sigmoid in fp32 with CUDA's precise libdevice routines (a range reduction and a polynomial),
not the special-function unit's one-instruction approximations: an evaluation is the work of
9 to 42 fp32 operations. A fused chain of them is bound by that work, not by its bytes, even
on an H200 (the measurements are in the docs).
"""

from __future__ import annotations

from collections.abc import Mapping

from app.engine.hardware import Chip
from app.engine.roofline import Roofline
from app.engine.stacks import Backend
from app.engine.units import Dtype, Unit

# fp32 instructions per evaluation, measured on an H200 (PyTorch 2.11, CUDA 13.0, Triton 3.6;
# scripts/precise_functions.py): over 10^8 fp32 elements, a compiled sum of 32 terms f(x c_i)
# less one of 16, in microseconds (exp 591.9 -> 1123.4, sigmoid 935.1 -> 1732.9, log 1512.2
# -> 2887.2, erf 1778.2 -> 3385.1, cos 1629.4 -> 3675.4, tanh 1396.6 -> 3487.0), over the 16
# extra evaluations of each element at the fp32 lanes' issue rate (132 SMs x 128 lanes x
# 1.98 GHz = 3.345e13 per second), less the multiply and the add of each term (2).
PRECISE_INSTRUCTIONS: dict[str, float] = {
    "exp": 9.1,
    "sigmoid": 14.7,
    "log": 26.7,
    "erf": 31.6,
    "cos": 40.8,
    "tanh": 41.7,
}


def precise_rates(chip: Chip) -> dict[str, float]:
    """Evaluations per second of each function of PRECISE_INSTRUCTIONS on `chip`: its fp32
    lanes' issue rate (the fp32 vector peak over two, which counts a fused multiply-add as two
    FLOPs) over the function's instructions. Only NVIDIA chips' kernels are measured; elsewhere
    none, and each evaluation stays one FLOP at the vector peak."""
    if chip.backend is not Backend.NVIDIA:
        return {}
    lanes = chip.peak(Dtype.FP32, Unit.VECTOR).flops_per_s / 2
    return {name: lanes / instructions for name, instructions in PRECISE_INSTRUCTIONS.items()}


def evaluations_time(
    evaluations: Mapping[str, float], rates: Mapping[str, float], peak: float
) -> float:
    """The seconds `evaluations` (counts by function) take beyond one FLOP each at `peak`,
    each at its function's rate in `rates` (`precise_rates`, or those measured on the CPU a
    function runs on); a function without a rate keeps its FLOP."""
    return sum(
        count / rate - count / peak
        for name, count in evaluations.items()
        if (rate := rates.get(name))
    )


def with_evaluations(
    placed: Roofline, evaluations: Mapping[str, float], rates: Mapping[str, float]
) -> Roofline:
    """`placed`, one kernel, with its transcendental `evaluations` at their `rates`
    (`evaluations_time` more compute); itself where none has a rate."""
    extra = evaluations_time(evaluations, rates, placed.peak.flops_per_s)
    return placed.with_compute_time(placed.compute_time + extra) if extra else placed
