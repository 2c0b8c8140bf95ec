"""Measure what one evaluation of each transcendental function costs in PyTorch's CUDA kernels:
the figures of app/engine/precise_functions.py (docs/formulas.md#transcendental-functions-on-a-gpu).

    python3 scripts/precise_functions.py   # on a machine with an NVIDIA GPU and PyTorch

Over 10^8 fp32 elements in (0.5, 1.5), each function f is summed over 16 and over 32 terms
f(x c_i), c_i = 1 + i / 1000, compiled (torch.compile fuses each sum into one kernel that
reads x once and writes once), and timed with CUDA events (the median of 15 after 3 warm-up
calls). The 16 extra terms' time, per evaluation of an element, at the fp32 lanes' issue
rate (the GPU's SMs x 128 lanes on Hopper x its clock, given), less each term's multiply and
add, is the function's instructions. A function alone, eager, is timed too: on an H200 its
bytes bound it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import torch  # type: ignore[import-not-found, unused-ignore]

FUNCTIONS = ("exp", "sigmoid", "log", "erf", "cos", "tanh")
TERMS = (16, 32)


def _median_us(call: Callable[[], object], repeats: int = 15) -> float:
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[repeats // 2]


def _sum_of(f: Callable[[torch.Tensor], torch.Tensor], terms: int) -> Callable[..., torch.Tensor]:
    def summed(x: torch.Tensor) -> torch.Tensor:
        total = f(x)
        for i in range(1, terms):
            total = total + f(x * (1 + i * 1e-3))
        return total

    return summed


def _compiled_us(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> float:
    compiled = torch.compile(fn)
    return _median_us(lambda: compiled(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes-per-s", type=float, default=132 * 128 * 1.98e9, help="H200's")
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.rand(100_000_000, device="cuda") + 0.5
    found = {}
    for name in FUNCTIONS:
        torch._dynamo.reset()  # each function compiles anew, under the recompilation limit
        f = getattr(torch, name)
        short, long = (_compiled_us(_sum_of(f, n), x) for n in TERMS)
        extra = (long - short) * 1e-6 / ((TERMS[1] - TERMS[0]) * x.numel())
        found[name] = {
            f"{TERMS[0]}_terms_us": round(short, 1),
            f"{TERMS[1]}_terms_us": round(long, 1),
            "eager_alone_us": round(_median_us(lambda f=f: f(x)), 1),
            "instructions": round(extra * args.lanes_per_s - 2, 1),
        }
        print(name, found[name], flush=True)
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, **found}))


if __name__ == "__main__":
    main()
