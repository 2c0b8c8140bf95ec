"""The measure tests: real PyTorch on the CPU, and this machine's probe kept small."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from app import local_probe as probe
from app.engine.units import MIB
from app.measure import judging


@pytest.fixture
def small_probe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """`chip="local"` probes 16 MiB copies, products up to 128 x 128, each transcendental
    function over 2^14 values and fresh outputs of 1 to 2 MiB: fast, and still real; its
    cache is a temporary directory's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(judging.REPROBE_ENV, raising=False)
    monkeypatch.setattr(judging, "LOCAL_COPY_BYTES", 16 * MIB)
    monkeypatch.setattr(judging, "LOCAL_CPU_N", 128)
    monkeypatch.setattr(probe, "SPECIAL_MAX", probe.SPECIAL_MIN)
    monkeypatch.setattr(probe, "FRESH_MAX", 2 * probe.FRESH_MIN)
    judging.forget_local()
    yield
    judging.forget_local()
