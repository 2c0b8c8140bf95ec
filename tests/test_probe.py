"""`roofcheck probe`: the NumPy CPU path for real, the PyTorch GPU path with a fake torch."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from app.cli import main, run
from app.probe import Probe, median_time, probe_cpu, probe_gpu


def test_median_time_discards_warmup_and_takes_the_median() -> None:
    times = iter([100.0, 3.0, 1.0, 2.0])  # the first run is warm-up
    assert median_time(lambda: next(times), warmup=1, repeats=3) == 2.0
    with pytest.raises(ValueError, match="repeats"):
        median_time(lambda: 1.0, warmup=0, repeats=0)


def test_cpu_probe_measures_this_machine() -> None:
    result = probe_cpu(copy_bytes=32 * 2**20, n=256, repeats=3)
    assert result.backend == "numpy"
    assert result.copy_bytes == 32 * 2**20
    # any machine copies faster than 100 MB/s and multiplies faster than 100 MFLOP/s, and
    # none beyond 100 TB/s or 100 TFLOP/s on a CPU: the figures are real and finite
    assert 1e8 < result.copy_bytes_per_s < 1e14
    assert set(result.matmul_flops_per_s) == {"fp64", "fp32"}
    assert all(1e8 < v < 1e14 for v in result.matmul_flops_per_s.values())


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
    assert lines[0].startswith("roofcheck probe: ") and "(numpy; " in lines[0]
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
