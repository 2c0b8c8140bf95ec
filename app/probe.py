"""Empirical ceilings of the machine this runs on: `roofcheck probe`, and `chip="local"`.

Measures a large device-to-device copy and large matrix products per dtype: with PyTorch on
the GPU when one is present (CUDA events), with PyTorch on the CPU otherwise, with NumPy
where PyTorch is not installed. A ceiling is the best the machine reached: every figure is
from the fastest of `repeats` timed runs after `warmup` untimed ones. A copy of B bytes moves
2 B (read + write), as STREAM and BabelStream count it; an n x n x n product is 2 n^3 FLOPs.
On a CPU, the products grow until their rate stops rising (app/local_probe.py adds what a CPU
pays beyond FLOPs and bytes, and keeps the local chip's ceilings).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app import formatting as fmt
from app.engine import Dtype, matmul, memcopy
from app.engine.units import GIB, MIB, seconds_from_ms

# what `roofcheck probe` copies (bytes) and multiplies (n x n) unless told otherwise
COPY_BYTES = GIB
MATMUL_N = 8192
# dtypes measured per backend (NumPy has no half-precision BLAS worth timing; a CPU's
# half-precision products are no faster than its fp32 ones without matrix extensions)
NUMPY_DTYPES = ("fp64", "fp32")
TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
TORCH_CPU_DTYPES = {"fp64": "float64", "fp32": "float32"}
# A CPU's products grow from MIN_CPU_N, doubling, until the rate rises by less than PLATEAU
# from one size to the next, or one product takes SLOW_RUN_S (a larger one would take the
# probe past a few seconds on a laptop).
MIN_CPU_N = 256
PLATEAU = 0.05
SLOW_RUN_S = 0.25
# A copy beyond the last-level cache measures memory, not the cache: COPY_PER_CACHE times
# its size (Linux's /sys/devices/system/cpu/cpu0/cache/index*/size, the largest; NO_CACHE_BYTES
# where the system does not say), at least
# MIN_COPY_BYTES, at most the largest copy asked for and a sixteenth of the memory.
COPY_PER_CACHE = 4
NO_CACHE_BYTES = 32 * MIB
MIN_COPY_BYTES = 64 * MIB
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


def best_time(run: Callable[[], float], *, warmup: int, repeats: int) -> float:
    """The fastest of `repeats` timings returned by `run` (seconds), after `warmup` discarded
    runs: a ceiling is the best the machine reached, and any other run was slowed by
    something else (another process, a frequency change)."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    for _ in range(warmup):
        run()
    return min(run() for _ in range(repeats))


def wall(fn: Callable[[], object]) -> Callable[[], float]:
    """`fn` timed on the host's clock (a CPU's work is done when it returns)."""

    def timed() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return timed


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
    copy_s = best_time(wall(lambda: np.copyto(dst, src)), warmup=warmup, repeats=repeats)
    rates = {}
    for name in NUMPY_DTYPES:
        a = np.ones((n, n), dtype=np.float64 if name == "fp64" else np.float32)

        def product(a: Any = a) -> object:
            return a @ a

        matmul_s = best_time(wall(product), warmup=warmup, repeats=repeats)
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
    copy_s = best_time(events(lambda: dst.copy_(src)), warmup=warmup, repeats=repeats)
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 at the fp32 rate, not TF32
    rates = {}
    for name, torch_name in TORCH_DTYPES.items():
        a = torch.ones((n, n), dtype=getattr(torch, torch_name), device="cuda")

        def product(a: Any = a) -> object:
            return a @ a

        matmul_s = best_time(events(product), warmup=warmup, repeats=repeats)
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


def plateau(
    seconds: Callable[[int], float], flops: Callable[[int], float], max_n: int
) -> tuple[float, int]:
    """The best rate of products of growing size n (MIN_CPU_N, doubling, to at most `max_n`):
    `seconds(n)` times one, `flops(n)` counts its FLOPs. Growth stops where the rate rose by
    less than PLATEAU, or a product took SLOW_RUN_S. The best rate, and the largest n timed."""
    n, best = min(MIN_CPU_N, max_n), 0.0
    while True:
        spent = seconds(n)
        rate = flops(n) / spent
        rising = rate > best * (1 + PLATEAU)
        best = max(best, rate)
        if not rising or spent >= SLOW_RUN_S or 2 * n > max_n:
            return best, n
        n *= 2


def cache_bytes(sizes: list[str]) -> int:
    """The largest of the cache sizes Linux states ("48K", "307200K", "32M"), or
    NO_CACHE_BYTES where it states none."""
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}
    parsed = [
        int(text[:-1]) * scale[text[-1]] if text[-1:] in scale else int(text)
        for text in (size.strip() for size in sizes)
        if text[:-1].isdigit() or text.isdigit()
    ]
    return max(parsed, default=NO_CACHE_BYTES)


def cpu_copy_bytes(largest: int) -> int:
    """What a CPU probe copies: COPY_PER_CACHE times the last-level cache, within
    [MIN_COPY_BYTES, `largest`] and at most a sixteenth of the memory."""
    caches = Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size")
    cache = cache_bytes([path.read_text() for path in caches])
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        memory = 16 * largest
    return max(min(COPY_PER_CACHE * cache, largest, memory // 16), min(MIN_COPY_BYTES, largest))


def probe_torch_cpu(
    torch: Any, *, copy_bytes: int, max_n: int, warmup: int = 1, repeats: int = 5
) -> Probe:
    """PyTorch on the CPU (its own threads): a copy of `copy_bytes` bytes (fp32 tensors), and
    products in fp64 and fp32 growing to the plateau (`plateau`), each the best of `repeats`."""
    copy_s = _torch_copy_s(torch, copy_bytes // 4, warmup=warmup, repeats=repeats)
    rates, largest = {}, 0
    for name, torch_name in TORCH_CPU_DTYPES.items():
        rates[name], n = plateau(
            _product_s(torch, getattr(torch, torch_name), warmup, max(1, repeats // 2)),
            functools.partial(_product_flops, Dtype(name)),
            max_n,
        )
        largest = max(largest, n)
    return Probe(
        device=cpu_name(),
        backend="torch",
        software={"torch": str(torch.__version__), "python": platform.python_version()},
        date=_today(),
        copy_bytes_per_s=memcopy(copy_bytes // 4 * 4).bytes / copy_s,
        matmul_flops_per_s=rates,
        copy_bytes=copy_bytes // 4 * 4,
        matmul_n=largest,
    )


def _product_flops(dtype: Dtype, n: int) -> float:
    return matmul(n, n, n, dtype).flops


def _torch_copy_s(torch: Any, elements: int, *, warmup: int, repeats: int) -> float:
    """The best time of copying `elements` fp32 values between two touched CPU tensors."""
    src = torch.ones(elements, dtype=torch.float32)
    dst = torch.zeros_like(src)
    return best_time(wall(lambda: dst.copy_(src)), warmup=warmup, repeats=repeats)


def _product_s(torch: Any, dtype: Any, warmup: int, repeats: int) -> Callable[[int], float]:
    """Times one n x n x n CPU product of `dtype` (the best of `repeats`)."""

    def seconds(n: int) -> float:
        a = torch.ones((n, n), dtype=dtype)
        return best_time(wall(lambda: a @ a), warmup=warmup, repeats=repeats)

    return seconds


def cpu_name() -> str:
    """The processor as the platform names it (its architecture where it names none)."""
    return platform.processor() or platform.machine()


def _torch() -> Any:
    try:
        return importlib.import_module("torch")  # optional: only when installed
    except ImportError:
        return None


def probe(*, copy_bytes: int, n: int, cpu_n: int) -> Probe:
    """The GPU probe when PyTorch sees a CUDA device; on the CPU, PyTorch's where installed
    (products up to `cpu_n`), else NumPy's."""
    torch = _torch()
    if torch is not None and torch.cuda.is_available():
        return probe_gpu(torch, copy_bytes=copy_bytes, n=n)
    if torch is not None:
        return probe_torch_cpu(torch, copy_bytes=min(copy_bytes, GIB // 4), max_n=cpu_n)
    return probe_cpu(copy_bytes=min(copy_bytes, GIB // 4), n=cpu_n)
