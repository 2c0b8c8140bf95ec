"""`roofcheck probe`: the NumPy and PyTorch CPU paths for real (small), the PyTorch GPU path
with a fake torch; the local chip's growth to the plateau, first touch and cache with fakes."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest
import torch

from app import local_probe as probes
from app import probe as plain
from app.cli import main, run
from app.engine.units import MIB
from app.local_probe import HostRates, first_touch, local_profile, probe_host
from app.probe import (
    Probe,
    best_time,
    cache_bytes,
    plateau,
    probe_cpu,
    probe_gpu,
    probe_torch_cpu,
)


def test_best_time_discards_warmup_and_takes_the_fastest() -> None:
    times = iter([0.5, 3.0, 1.0, 2.0])  # the first run is warm-up
    assert best_time(lambda: next(times), warmup=1, repeats=3) == 1.0
    with pytest.raises(ValueError, match="repeats"):
        best_time(lambda: 1.0, warmup=0, repeats=0)


def _rates(
    by_n: dict[int, float],
) -> tuple[list[int], Callable[[int], float], Callable[[int], float]]:
    """A fake product timer whose rate at n is by_n[n] FLOP/s (n^3 FLOPs: seconds = n^3 / rate),
    with the sizes it was asked for."""
    asked: list[int] = []

    def seconds(n: int) -> float:
        asked.append(n)
        return n**3 / by_n[n]

    return asked, seconds, lambda n: float(n**3)


def _approx_pair(got: tuple[float, int | None], rate: float, size: int) -> bool:
    """`got` is (about `rate`, exactly `size`)."""
    return got[0] == pytest.approx(rate) and got[1] == size


def test_products_grow_until_the_rate_stops_rising() -> None:
    # 256: 1e9, 512: 2e9 (+100%), 1024: 2.05e9 (+2.5% < 5%): the plateau, at 1024
    asked, seconds, flops = _rates({256: 1e9, 512: 2e9, 1024: 2.05e9, 2048: 9e9})
    assert _approx_pair(plateau(seconds, flops, 4096), 2.05e9, 1024)
    assert asked == [256, 512, 1024]
    # a dip keeps the best reached; the largest size asked bounds the growth
    asked, seconds, flops = _rates({256: 3e9, 512: 2e9})
    assert _approx_pair(plateau(seconds, flops, 4096), 3e9, 512)
    asked, seconds, flops = _rates({256: 1e9, 512: 2e9, 1024: 4e9})
    assert _approx_pair(plateau(seconds, flops, 1024), 4e9, 1024)
    asked, seconds, flops = _rates({128: 1e9})
    assert _approx_pair(plateau(seconds, flops, 128), 1e9, 128)


def test_a_slow_product_stops_the_growth() -> None:
    # 256^3 = 1.68e7 FLOPs at 1e8 FLOP/s: 0.17 s; 512^3 = 1.34e8 at 2e8 FLOP/s: 0.67 s,
    # over SLOW_RUN_S (0.25 s), though the rate doubled: 1024 is not timed
    asked, seconds, flops = _rates({256: 1e8, 512: 2e8})
    assert _approx_pair(plateau(seconds, flops, 4096), 2e8, 512)
    assert asked == [256, 512]


def test_first_touch_from_the_extra_time_of_fresh_outputs() -> None:
    # glibc's way: 1 to 16 MiB reuse freed memory (no extra), 32 and 64 MiB are mapped anew
    # at 0.5 ns per byte: 64 MiB x 0.5e-9 = 33.6 ms extra
    extra = {2**k * MIB: 0.0 for k in range(5)} | {32 * MIB: 32 * MIB * 5e-10}
    extra[64 * MIB] = 64 * MIB * 5e-10
    assert _approx_pair(first_touch(extra), 5e-10, 32 * MIB)
    # a noisy small size past half its share does not count below a size that did not fault
    assert _approx_pair(first_touch(extra | {MIB: MIB * 5e-10}), 5e-10, 32 * MIB)
    # 16 MiB at 60% of its share counts (at least half), at 40% it does not
    assert first_touch(extra | {16 * MIB: 16 * MIB * 3e-10})[1] == 16 * MIB
    assert first_touch(extra | {16 * MIB: 16 * MIB * 2e-10})[1] == 32 * MIB
    # the largest size took no extra time: no first touch at all
    assert first_touch({MIB: 0.001, 64 * MIB: 0.0}) == (0.0, None)


def test_the_last_level_cache_as_linux_states_it() -> None:
    # L1d 48K, L1i 32K, L2 2048K, L3 307200K (300 MiB)
    assert cache_bytes(["48K\n", "32K\n", "2048K\n", "307200K\n"]) == 300 * MIB
    assert cache_bytes(["1M", "4096"]) == MIB
    assert cache_bytes([]) == plain.NO_CACHE_BYTES


def test_cpu_probe_measures_this_machine() -> None:
    result = probe_cpu(copy_bytes=32 * 2**20, n=256, repeats=3)
    assert result.backend == "numpy"
    assert result.copy_bytes == 32 * 2**20
    # any machine copies faster than 100 MB/s and multiplies faster than 100 MFLOP/s, and
    # none beyond 100 TB/s or 100 TFLOP/s on a CPU: the figures are real and finite
    assert 1e8 < result.copy_bytes_per_s < 1e14
    assert set(result.matmul_flops_per_s) == {"fp64", "fp32"}
    assert all(1e8 < v < 1e14 for v in result.matmul_flops_per_s.values())


def test_torch_cpu_probe_measures_this_machine() -> None:
    result = probe_torch_cpu(torch, copy_bytes=16 * MIB, max_n=256, repeats=3)
    assert result.backend == "torch" and result.software["torch"] == torch.__version__
    assert result.copy_bytes == 16 * MIB and result.matmul_n == 256
    assert 1e8 < result.copy_bytes_per_s < 1e14
    assert set(result.matmul_flops_per_s) == {"fp64", "fp32"}
    assert all(1e8 < v < 1e14 for v in result.matmul_flops_per_s.values())


def test_host_probe_times_every_priced_function_and_fresh_memory(monkeypatch) -> None:
    monkeypatch.setattr(probes, "SPECIAL_MAX", probes.SPECIAL_MIN)
    monkeypatch.setattr(probes, "FRESH_MAX", 2 * probes.FRESH_MIN)
    rates = probe_host(torch, repeats=2)
    assert set(rates.special_per_s) == {
        *("cos", "sin", "exp", "exp2", "expm1", "log", "log1p", "log2"),
        *("tanh", "sigmoid", "erf"),
    }
    # a CPU evaluates between 1e5 and 1e13 transcendental functions a second (the lower bound
    # leaves room for a shared machine's preemptions in two runs of 16,384 values)
    assert all(1e5 < v < 1e13 for v in rates.special_per_s.values())
    assert rates.first_touch_s_per_byte >= 0
    assert rates.fresh_from_bytes in (None, probes.FRESH_MIN, 2 * probes.FRESH_MIN)


class _FakeEvent:
    """A CUDA event on a fake clock: each record() reads the next timestamp (ms)."""

    clock: Iterator[float] = iter(())

    def __init__(self, enable_timing: bool) -> None:
        assert enable_timing
        self.t = 0.0

    def record(self) -> None:
        self.t = next(_FakeEvent.clock)

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _FakeEvent) -> float:
        return end.t - self.t


class _FakeTensor:
    def copy_(self, other: _FakeTensor) -> _FakeTensor:
        return self

    def __matmul__(self, other: _FakeTensor) -> _FakeTensor:
        return self


def test_gpu_probe_turns_cuda_event_times_into_rates() -> None:
    # every timed run takes 2 ms on the fake clock (start, end pairs 2 ms apart)
    _FakeEvent.clock = iter(float(t) for pair in range(1000) for t in (pair * 10, pair * 10 + 2))
    fake = SimpleNamespace(
        cuda=SimpleNamespace(Event=_FakeEvent, get_device_name=lambda: "Fake GPU"),
        backends=SimpleNamespace(cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=True))),
        version=SimpleNamespace(cuda="12.4"),
        __version__="2.5.1",
        uint8="uint8",
        bfloat16="bf16",
        float16="fp16",
        float32="fp32",
        empty=lambda *a, **k: _FakeTensor(),
        empty_like=lambda t: _FakeTensor(),
        ones=lambda *a, **k: _FakeTensor(),
    )
    result = probe_gpu(fake, copy_bytes=10**9, n=1000, warmup=1, repeats=3)
    assert fake.backends.cuda.matmul.allow_tf32 is False
    # copy: 2 x 1e9 bytes in 2 ms = 1e12 B/s; matmul: 2 x 1000^3 FLOPs in 2 ms = 1e12 FLOP/s
    assert math.isclose(result.copy_bytes_per_s, 1e12)
    assert result.matmul_flops_per_s == pytest.approx({"bf16": 1e12, "fp16": 1e12, "fp32": 1e12})
    assert result.device == "Fake GPU"
    assert result.software == {"torch": "2.5.1", "cuda": "12.4"}


def test_probe_command_prints_the_profile(capsys) -> None:
    assert run(["probe", "--copy-mib", "16", "--n", "512", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["matmul_n"] == 128
    assert printed["copy_bytes_per_s"] > 0
    # without --json, a table a person reads: a header, then the copy and each dtype's matmul
    assert run(["probe", "--copy-mib", "16", "--n", "512"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("roofcheck probe: ") and "(torch; " in lines[0]
    assert lines[1].lstrip().startswith("copy (16.8 MB)") and lines[1].endswith("B/s")
    assert [line.split()[0] for line in lines[2:]] == ["fp64", "fp32"]
    assert all(line.endswith("FLOP/s") and "matmul (128^3)" in line for line in lines[2:])


def test_the_probe_table_of_a_known_profile() -> None:
    # 1 GiB copied at 1.5e12 B/s and bf16 at 3.12e14 FLOP/s read as a person writes them
    profile = Probe(
        device="NVIDIA A100-SXM4-80GB",
        backend="torch",
        software={"torch": "2.5.1"},
        date="2026-11-23",
        copy_bytes_per_s=1.5e12,
        matmul_flops_per_s={"bf16": 3.12e14},
        copy_bytes=2**30,
        matmul_n=8192,
    )
    assert profile.table().splitlines() == [
        "roofcheck probe: NVIDIA A100-SXM4-80GB (torch; torch 2.5.1), 2026-11-23",
        "  copy (1.07 GB)        1.5 TB/s",
        "  bf16 matmul (8192^3)  312 TFLOP/s",
    ]


def test_probe_without_numpy_says_which_extra_to_install(monkeypatch, capsys) -> None:
    # no NumPy, and no PyTorch either (it would probe a GPU instead): a usage error, exit 2
    # (1 means a bad verdict), with the pip command instead of a traceback
    monkeypatch.setitem(sys.modules, "numpy", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(sys, "argv", ["roofcheck", "probe", "--copy-mib", "1", "--n", "64"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "roofcheck: probing the CPU needs NumPy: "
        "install the probe extra (pip install -e '.[probe]')\n"
    )


_PROFILE = Probe("cpu", "torch", {"torch": "2.13"}, "2026-11-28", 2e10, {"fp32": 1e11}, 2**30, 1024)
_HOST = HostRates({"cos": 7e8}, 1e-9, 32 * MIB)


def test_the_local_profile_is_probed_once_then_read_from_the_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    probed: list[str] = []

    def fake_cpu(torch_: object, *, copy_bytes: int, max_n: int) -> Probe:
        probed.append("cpu")
        return _PROFILE

    def fake_host(torch_: object) -> HostRates:
        probed.append("host")
        return _HOST

    monkeypatch.setattr(probes, "probe_torch_cpu", fake_cpu)
    monkeypatch.setattr(probes, "probe_host", fake_host)

    def local(reprobe: bool = False) -> probes.LocalProfile:
        return local_profile(torch, "cpu", copy_bytes=MIB, n=64, cpu_n=64, reprobe=reprobe)

    first = local()
    assert probed == ["cpu", "host"] and not first.cached
    assert first.path.parent == tmp_path / "roofcheck" and first.path.is_file()
    second = local()
    assert probed == ["cpu", "host"]  # read, not probed
    assert second.cached and (second.probe, second.host) == (_PROFILE, _HOST)
    assert local(reprobe=True).cached is False and len(probed) == 4
    # a cache of another machine, device, torch or format is not read (its key differs)
    stored = json.loads(first.path.read_text())
    assert stored["key"].endswith(f"|torch {torch.__version__}|format {probes.LOCAL_FORMAT}")
    first.path.write_text(json.dumps(stored | {"key": "another machine"}))
    assert local().cached is False and len(probed) == 6
    first.path.write_text("{not json")  # nor a damaged one
    assert local().cached is False and len(probed) == 8
    assert local().cached is True
