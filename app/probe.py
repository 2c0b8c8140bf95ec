"""Empirical ceilings of the machine this runs on: `roofcheck probe`.

Measures a large device-to-device copy and large matrix products per dtype: with PyTorch on
the GPU when one is present (CUDA events), with NumPy on the CPU otherwise. Every figure is
the median of `repeats` timed runs after `warmup` untimed ones. A copy of B bytes moves 2 B
(read + write), as STREAM and BabelStream count it; an n x n x n product is 2 n^3 FLOPs.
"""

from __future__ import annotations

import datetime as dt
import importlib
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from app import formatting as fmt
from app.engine import Dtype, matmul, memcopy
from app.engine.units import GIB, seconds_from_ms

# what `roofcheck probe` copies (bytes) and multiplies (n x n) unless told otherwise
COPY_BYTES = GIB
MATMUL_N = 8192
# dtypes measured per backend (NumPy has no half-precision BLAS worth timing)
NUMPY_DTYPES = ("fp64", "fp32")
TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
INSTALL = "pip install -e '.[probe]'"


class NumpyMissing(ImportError):
    """NumPy is not installed: probing the CPU needs the `probe` extra."""

    def __init__(self) -> None:
        super().__init__(
            f"probing the CPU needs NumPy: install the probe extra ({INSTALL})", name="numpy"
        )


@dataclass(frozen=True, slots=True)
class Probe:
    """What a probe measured: copy bandwidth (bytes/s) and matmul rate (FLOP/s) per dtype."""

    device: str
    backend: str
    software: dict[str, str]
    date: str
    copy_bytes_per_s: float
    matmul_flops_per_s: dict[str, float] = field(default_factory=dict)
    copy_bytes: int = 0
    matmul_n: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def table(self) -> str:
        """The profile as a person reads it: one line per ceiling, with what was measured."""
        software = ", ".join(f"{name} {version}" for name, version in self.software.items())
        rows = [(f"copy ({fmt.bytes_(self.copy_bytes)})", fmt.rate(self.copy_bytes_per_s, "B/s"))]
        rows += [
            (f"{dtype} matmul ({self.matmul_n}^3)", fmt.rate(rate, "FLOP/s"))
            for dtype, rate in self.matmul_flops_per_s.items()
        ]
        width = max(len(name) for name, _ in rows)
        lines = [f"roofcheck probe: {self.device} ({self.backend}; {software}), {self.date}"]
        lines += [f"  {name:<{width}}  {value}" for name, value in rows]
        return "\n".join(lines)


def median_time(run: Callable[[], float], *, warmup: int, repeats: int) -> float:
    """Median of `repeats` timings returned by `run` (seconds), after `warmup` discarded runs."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    for _ in range(warmup):
        run()
    return statistics.median(run() for _ in range(repeats))


def _today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def probe_cpu(*, copy_bytes: int, n: int, warmup: int = 1, repeats: int = 5) -> Probe:
    """NumPy on the CPU: np.copyto of `copy_bytes` bytes and n^3 products in fp64 and fp32."""
    try:
        import numpy as np  # noqa: PLC0415 (optional extra: imported only when probing)
    except ImportError as error:
        raise NumpyMissing from error

    src = np.ones(copy_bytes // 8, dtype=np.float64)
    dst = np.empty_like(src)

    def wall(fn: Callable[[], object]) -> Callable[[], float]:
        def timed() -> float:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start

        return timed

    copy_s = median_time(wall(lambda: np.copyto(dst, src)), warmup=warmup, repeats=repeats)
    rates = {}
    for name in NUMPY_DTYPES:
        a = np.ones((n, n), dtype=np.float64 if name == "fp64" else np.float32)

        def product(a: Any = a) -> object:
            return a @ a

        matmul_s = median_time(wall(product), warmup=warmup, repeats=repeats)
        rates[name] = matmul(n, n, n, Dtype(name)).flops / matmul_s
    return Probe(
        device=platform.processor() or platform.machine(),
        backend="numpy",
        software={"numpy": np.__version__, "python": platform.python_version()},
        date=_today(),
        copy_bytes_per_s=memcopy(src.nbytes).bytes / copy_s,
        matmul_flops_per_s=rates,
        copy_bytes=int(src.nbytes),
        matmul_n=n,
    )


def probe_gpu(torch: Any, *, copy_bytes: int, n: int, warmup: int = 3, repeats: int = 10) -> Probe:
    """PyTorch on the current CUDA device, timed with CUDA events (`torch` is the module)."""
    cuda = torch.cuda

    def events(fn: Callable[[], object]) -> Callable[[], float]:
        def timed() -> float:
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return seconds_from_ms(float(start.elapsed_time(end)))

        return timed

    src = torch.empty(copy_bytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_s = median_time(events(lambda: dst.copy_(src)), warmup=warmup, repeats=repeats)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 at the fp32 rate, not TF32
    rates = {}
    for name, torch_name in TORCH_DTYPES.items():
        a = torch.ones((n, n), dtype=getattr(torch, torch_name), device="cuda")

        def product(a: Any = a) -> object:
            return a @ a

        matmul_s = median_time(events(product), warmup=warmup, repeats=repeats)
        rates[name] = matmul(n, n, n, Dtype(name)).flops / matmul_s
    return Probe(
        device=str(cuda.get_device_name()),
        backend="torch",
        software={"torch": str(torch.__version__), "cuda": str(torch.version.cuda)},
        date=_today(),
        copy_bytes_per_s=memcopy(copy_bytes).bytes / copy_s,
        matmul_flops_per_s=rates,
        copy_bytes=copy_bytes,
        matmul_n=n,
    )


def probe(*, copy_bytes: int, n: int, cpu_n: int) -> Probe:
    """The GPU probe when PyTorch sees a CUDA device, the NumPy CPU probe otherwise."""
    try:
        torch: Any = importlib.import_module("torch")  # optional: only when installed
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        return probe_gpu(torch, copy_bytes=copy_bytes, n=n)
    return probe_cpu(copy_bytes=min(copy_bytes, GIB // 4), n=cpu_n)
