"""Empirical ceilings of the machine this runs on: `roofcheck probe`, and `chip="local"`.

Measures a large device-to-device copy and large matrix products per dtype: with PyTorch on
the GPU when one is present (CUDA events), with PyTorch on the CPU otherwise, with NumPy
where PyTorch is not installed. A ceiling is the best the machine reached: every figure is
from the fastest of `repeats` timed runs after `warmup` untimed ones. A copy of B bytes moves
2 B (read + write), as STREAM and BabelStream count it; an n x n x n product is 2 n^3 FLOPs.
On a CPU, the products grow until their rate stops rising, and `probe_host` measures what a
CPU pays beyond FLOPs and bytes: each transcendental function's rate and the first touch of
fresh memory (docs/formulas.md#the-local-chip).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import importlib
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from app import formatting as fmt
from app.engine import Dtype, matmul, memcopy
from app.engine.ops import SPECIAL_FUNCTIONS
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
# Transcendental functions are timed from SPECIAL_MIN to SPECIAL_MAX elements (fp32, input
# and output within a core's L2 at the smaller sizes, so that memory does not limit them),
# their rate the best of those sizes.
SPECIAL_MIN = 2**14
SPECIAL_MAX = 2**20
# First touch: a fresh fp32 output written whole (torch.empty then fill_) against the same
# write into a buffer already touched, at sizes doubling from FRESH_MIN to FRESH_MAX: its
# cost per byte is measured at FRESH_MAX, and a size pays it on every call when its extra
# time is at least half of that size's share (glibc maps blocks above its mmap threshold,
# at most 32 MiB on 64-bit systems, anew on every allocation; mallopt(3)).
FRESH_MIN = MIB
FRESH_MAX = 64 * MIB
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


@dataclass(frozen=True, slots=True)
class HostRates:
    """What a CPU pays beyond its matmul rate and copy bandwidth: each transcendental
    function's evaluations per second (fp32), the seconds per byte of a fresh output's first
    touch, and the smallest output that pays it on every call (None: none did)."""

    special_per_s: dict[str, float]
    first_touch_s_per_byte: float
    fresh_from_bytes: int | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


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


def _fresh_extra_s(torch: Any, size: int, *, warmup: int, repeats: int) -> float:
    """Extra seconds of writing a fresh fp32 tensor of `size` bytes over a touched one."""
    elements = size // 4
    kept = torch.zeros(elements)
    touched = best_time(wall(lambda: kept.fill_(1.0)), warmup=warmup, repeats=repeats)
    fresh = best_time(
        wall(lambda: torch.empty(elements).fill_(1.0)), warmup=warmup, repeats=repeats
    )
    return max(fresh - touched, 0.0)


def _special_s(torch: Any, name: str, n: int, *, warmup: int, repeats: int) -> float:
    """The best time of torch.<name> over `n` fp32 values into a touched buffer."""
    function = getattr(torch, name)
    x = torch.rand(n) + 0.5  # in every function's domain (log, log2: positive)
    out = torch.zeros_like(x)
    return best_time(wall(lambda: function(x, out=out)), warmup=warmup, repeats=repeats)


def special_names() -> list[str]:
    """The transcendental functions the engine prices (ops.SPECIAL_FUNCTIONS), each a torch
    function of the same name."""
    return sorted({name for names in SPECIAL_FUNCTIONS.values() for name in names})


def first_touch(extra_s: dict[int, float]) -> tuple[float, int | None]:
    """From the extra seconds a fresh output of each size took over a touched one: the
    seconds per byte at the largest size, and the smallest size from which every larger one
    took at least half its share of them (None, with 0 s/B, when the largest took none)."""
    largest = max(extra_s)
    per_byte = extra_s[largest] / largest
    if not per_byte > 0:
        return 0.0, None
    smallest = largest
    for size in sorted(extra_s, reverse=True):
        if extra_s[size] < size * per_byte / 2:
            break
        smallest = size
    return per_byte, smallest


def probe_host(torch: Any, *, warmup: int = 1, repeats: int = 7) -> HostRates:
    """What a CPU pays beyond FLOPs and bytes, with PyTorch: each transcendental function's
    best rate (fp32, into a buffer already touched, SPECIAL_MIN to SPECIAL_MAX elements), and
    the first touch of fresh outputs (FRESH_MIN to FRESH_MAX bytes)."""
    special = {}
    for name in special_names():
        sizes = _doubling(SPECIAL_MIN, SPECIAL_MAX, 4)
        times = (_special_s(torch, name, n, warmup=warmup, repeats=repeats) for n in sizes)
        special[name] = max(n / spent for n, spent in zip(sizes, times, strict=True))
    extra = {
        size: _fresh_extra_s(torch, size, warmup=warmup, repeats=repeats)
        for size in _doubling(FRESH_MIN, FRESH_MAX, 2)
    }
    per_byte, fresh_from = first_touch(extra)
    return HostRates(special, per_byte, fresh_from)


def _doubling(low: int, high: int, factor: int) -> list[int]:
    """low, low x factor, ... up to high."""
    sizes = [low]
    while sizes[-1] * factor <= high:
        sizes.append(sizes[-1] * factor)
    return sizes


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


# --- the local chip's ceilings, cached per machine -------------------------------------------

# bumped when what the local probe measures changes: a cache of another format is not read
LOCAL_FORMAT = 1


@dataclass(frozen=True, slots=True)
class LocalProfile:
    """This machine's ceilings on one device, as `chip="local"` judges against them: the
    probe, a CPU's host rates, and the cache file they were read from (`cached`) or written
    to."""

    probe: Probe
    host: HostRates | None
    path: Path
    cached: bool


def cache_dir() -> Path:
    """Where the local ceilings are kept: $XDG_CACHE_HOME/roofcheck, else ~/.cache/roofcheck."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "roofcheck"


def device_key(torch: Any, device: str) -> str:
    """What the local ceilings depend on: the host, the device (a CPU with PyTorch's thread
    count, a GPU by name), PyTorch's version and the cache's format."""
    if device.startswith("cuda"):
        name = str(torch.cuda.get_device_name(torch.device(device)))
    else:
        name = f"{cpu_name()} x{torch.get_num_threads()} threads"
    return f"{platform.node()}|{device}: {name}|torch {torch.__version__}|format {LOCAL_FORMAT}"


def _read(path: Path, key: str) -> tuple[Probe, HostRates | None] | None:
    """The profile cached at `path` for `key`, or None (missing, another key, unreadable)."""
    try:
        stored = json.loads(path.read_text())
        if stored["key"] != key:
            return None
        host = stored["host"]
        return Probe(**stored["probe"]), None if host is None else HostRates(**host)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write(path: Path, key: str, result: Probe, host: HostRates | None) -> None:
    """Cache the profile at `path` (written whole, then renamed: a reader never sees half)."""
    body = {
        "key": key,
        "probe": result.as_dict(),
        "host": None if host is None else host.as_dict(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(body, indent=2))
    partial.replace(path)


def local_profile(
    torch: Any, device: str, *, copy_bytes: int, n: int, cpu_n: int, reprobe: bool = False
) -> LocalProfile:
    """The ceilings of `device` ("cpu", "cuda:0", ...) with PyTorch, read from the cache when
    it holds them for this machine (device_key) and not `reprobe`; else probed (a GPU: copies
    of `copy_bytes` and n^3 products; a CPU: `cpu_copy_bytes`, products growing to `cpu_n`,
    and its host rates) and cached."""
    key = device_key(torch, device)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    path = cache_dir() / f"local-{digest}.json"
    if not reprobe and (stored := _read(path, key)) is not None:
        return LocalProfile(*stored, path=path, cached=True)
    host = None
    if device.startswith("cuda"):
        with torch.cuda.device(torch.device(device)):
            result = probe_gpu(torch, copy_bytes=copy_bytes, n=n)
    else:
        result = probe_torch_cpu(torch, copy_bytes=cpu_copy_bytes(copy_bytes), max_n=cpu_n)
        host = probe_host(torch)
    with contextlib.suppress(OSError):  # a read-only home: the ceilings hold all the same
        _write(path, key, result, host)
    return LocalProfile(result, host, path=path, cached=False)
