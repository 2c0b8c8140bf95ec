"""The local chip's ceilings (`chip="local"`, docs/formulas.md#the-local-chip): app/probe.py's
copy and matmul rates, on a CPU with what it pays beyond FLOPs and bytes (each transcendental
function's rate and the first touch of fresh memory), cached per machine."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.engine.ops import SPECIAL_FUNCTIONS
from app.engine.units import MIB
from app.probe import Probe, best_time, cpu_copy_bytes, cpu_name, probe_gpu, probe_torch_cpu, wall

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
# The host probe sweeps its functions and sizes this many times, one sweep after another, and
# keeps the best of each: on a busy machine (a CPU's threads descheduled mid-call make one
# call ten times slower) a busy moment spoils one sweep, not the figure.
HOST_ROUNDS = 3


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


def probe_host(
    torch: Any, *, warmup: int = 1, repeats: int = 5, rounds: int = HOST_ROUNDS
) -> HostRates:
    """What a CPU pays beyond FLOPs and bytes, with PyTorch: each transcendental function's
    best rate (fp32, into a buffer already touched, SPECIAL_MIN to SPECIAL_MAX elements), and
    the first touch of fresh outputs (FRESH_MIN to FRESH_MAX bytes), the best of `rounds`
    sweeps one after another."""
    sizes, fresh_sizes = _doubling(SPECIAL_MIN, SPECIAL_MAX, 4), _doubling(FRESH_MIN, FRESH_MAX, 2)
    special = dict.fromkeys(special_names(), 0.0)
    extra = dict.fromkeys(fresh_sizes, math.inf)
    for _ in range(rounds):
        for name in special:
            for n in sizes:
                spent = _special_s(torch, name, n, warmup=warmup, repeats=repeats)
                special[name] = max(special[name], n / spent)
        for size in fresh_sizes:
            spent = _fresh_extra_s(torch, size, warmup=warmup, repeats=repeats)
            extra[size] = min(extra[size], spent)
    per_byte, fresh_from = first_touch(extra)
    return HostRates(special, per_byte, fresh_from)


def _doubling(low: int, high: int, factor: int) -> list[int]:
    """low, low x factor, ... up to high."""
    sizes = [low]
    while sizes[-1] * factor <= high:
        sizes.append(sizes[-1] * factor)
    return sizes


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
