"""The measure report gives each line's host <-> device copies their share of the measured
time at best (their ideal times on the host link, as the service prices them)."""

from app.measure.findings import advice
from app.measure.op_counts import RecordedOp, TensorInfo, count, op_json
from tests.measure.test_measure_advice import _timing


def _t(id_, device, n=1000):
    return TensorInfo((n,), "float32", device, id_, 4 * n)


def test_a_copy_line_gives_its_share_of_the_median():
    # copy_(dst on the GPU, src on the host) at s.py:3, 4000 B; the service prices it at
    # 0.25 ms ideal (say): of the 1 ms median, 25%
    counts = count(
        [
            RecordedOp(
                "aten::copy_",
                (_t("a", "cuda:0"), _t("b", "cpu")),
                (_t("a", "cuda:0"),),
                where="s.py:3",
            )
        ],
        0.0,
    )
    assert [t["device"] for t in op_json(counts.ops[0])["inputs"]] == ["cuda:0", "cpu"]
    answer = {
        "ops": [{"name": "aten::copy_", "expected_time_s": 0.25e-3}],
        "fused_time_s": 0.25e-3,
        "unfused_time_s": 0.25e-3,
        "stack": "eager",
        "launch_overhead_s": 0.0,
        "expected_time_s": 0.25e-3,
    }
    lines = advice(counts, _timing(), answer)
    assert any(
        "A copy cpu -> cuda:0 of 4 kB at op 0 (s.py:3): at best 250 µs" in line
        and "25% of the measured time" in line
        for line in lines
    ), lines
