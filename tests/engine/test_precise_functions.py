"""The instructions of CUDA's precise transcendental routines, recomputed from the H200's
timings that app/engine/precise_functions.py quotes, and where they apply."""

from dataclasses import replace

import pytest

from app.catalog.loader import load_chip_catalog
from app.engine.precise_functions import PRECISE_INSTRUCTIONS, precise_rates
from app.engine.stacks import Backend
from app.settings import Settings

# microseconds over 10^8 fp32 elements: a compiled sum of 16 terms f(x c_i), and of 32
H200_US = {
    "exp": (591.872, 1123.392),
    "sigmoid": (935.072, 1732.864),
    "log": (1512.224, 2887.200),
    "erf": (1778.240, 3385.056),
    "cos": (1629.408, 3675.392),
    "tanh": (1396.640, 3487.040),
}
LANES_PER_S = 132 * 128 * 1.98e9  # H200: SMs x fp32 lanes x boost clock


@pytest.mark.parametrize("name", sorted(H200_US))
def test_each_functions_instructions_are_its_extra_terms_time_at_the_lanes_rate(name):
    sixteen, thirty_two = H200_US[name]
    per_evaluation = (thirty_two - sixteen) * 1e-6 / (16 * 1e8)
    # less the multiply of x by c_i and the add into the sum that each term costs
    assert PRECISE_INSTRUCTIONS[name] == pytest.approx(per_evaluation * LANES_PER_S - 2, abs=0.05)


def test_the_rates_are_the_lanes_issue_rate_over_the_instructions_on_nvidia_chips_only():
    catalog = load_chip_catalog(Settings().chip_catalog)
    h200 = catalog.resolve("h200").chip
    # the fp32 vector peak (67.0 TFLOP/s) counts a fused multiply-add as two FLOPs
    assert precise_rates(h200)["cos"] == pytest.approx(67.0e12 / 2 / 40.8, rel=1e-3)
    assert precise_rates(catalog.resolve("mi300x").chip) == {}  # AMD's were not measured
    assert precise_rates(replace(h200, backend=Backend.AMD)) == {}
