"""`measure` against a catalog chip is judged by the service's /check, with the chip's
last-level cache: a GEMV whose bytes fit in it, timed back to back faster than the memory
roof, is cache-resident (docs/formulas.md#the-cache-roof). Real PyTorch records the work; the
time is given (a CPU cannot run at an A100's rate)."""

import pytest
import torch

from app.measure import measure, runner
from app.measure.timing import Timing


def timed_at(seconds):
    """A `_time_calls` whose every repeat took `seconds`."""

    def fixed(*args, **kwargs):
        figures = ("median_s", "ci_low_s", "ci_high_s", "min_s", "max_s", "mean_s")
        return Timing(
            **dict.fromkeys(figures, seconds),
            stdev_s=0.0,
            p25_s=seconds,
            p75_s=seconds,
            repeats=10,
            warmup=1,
            first_call_s=seconds,
            relative_ci=0.0,
            target_ci=0.02,
            converged=True,
            clock="cuda_events",
            cpu_median_s=0.1 * seconds,
            cpu_share=0.1,
            times_s=(seconds,) * 10,
        )

    return fixed


# x @ w, (1, 4,000) @ (4,000, 4,000) in bf16, on an A100 SXM4 80GB: bytes (4,000 + 16,000,000
# + 4,000) x 2 = 32,016,000 (30.5 MiB) in its 40 MiB L2. Memory roof 32,016,000 / 2.039e12 =
# 15.70 us; L2 roof 32,016,000 / 7.219e12 = 4.435 us (3.2e7 FLOPs / 312e12 = 0.10 us of
# compute). 10 us lies between them: cache-resident; 4 us is under the L2 roof as well.
BYTES = (4_000 + 4_000 * 4_000 + 4_000) * 2


@pytest.mark.parametrize(
    ("seconds", "verdict"), [(10e-6, "cache_resident"), (4e-6, "faster_than_roofline")]
)
def test_a_gemv_timed_between_the_l2_and_memory_roofs_is_cache_resident(
    url, monkeypatch, seconds, verdict
):
    monkeypatch.setattr(runner, "_time_calls", timed_at(seconds))
    x = torch.ones(1, 4_000, dtype=torch.bfloat16)
    w = torch.ones(4_000, 4_000, dtype=torch.bfloat16)
    result = measure(lambda x, w: x @ w, x, w, chip="a100", url=url, allow_device_mismatch=True)
    answer = result.answer
    assert answer is not None
    assert answer["bytes"] == BYTES
    assert answer["expected_time_s"] == pytest.approx(BYTES / 2.039e12, rel=1e-3)
    assert result.verdict == verdict
    if verdict == "cache_resident":
        assert any(
            line.startswith("Cache-resident: the working set (30.5 MiB)") for line in result.advice
        )
