"""The measure tests: real PyTorch on the CPU, and this machine's probe kept small."""

from collections.abc import Iterator

import pytest

from app.engine.units import MIB
from app.measure import judging


@pytest.fixture
def small_probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`chip="local"` probes 16 MiB copies and 128 x 128 products: fast, and still real."""
    monkeypatch.setattr(judging, "LOCAL_COPY_BYTES", 16 * MIB)
    monkeypatch.setattr(judging, "LOCAL_CPU_N", 128)
    judging.local_ceilings.cache_clear()
    yield
    judging.local_ceilings.cache_clear()
