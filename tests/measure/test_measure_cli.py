"""`measure` and `roofcheck measure` end to end: real PyTorch on the CPU, judged by the real
service on a loopback port (uvicorn in a thread) or, with chip local, by the engine here."""

import json
import re
import sys
import textwrap

import pytest
import torch

from app.cli import ERROR, FAIL, PASS, run
from app.measure import LOCAL, MeasureError, measure, runner

CASE = """
import torch

def case():
    x = torch.randn(100_000)
    return (lambda x: x.cos().cos()), (x,)

def not_a_pair():
    return 42

def broken():
    x = torch.randn(3)
    return (lambda x: x @ torch.randn(4)), (x,)

NOT_CALLABLE = 1
"""
FAST = ["--repeats", "3", "--warmup", "1", "--max-time-s", "0.2"]
MISMATCH = "--allow-device-mismatch"  # these CPU runs are judged on an A100 on purpose


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "bench_case.py"
    path.write_text(textwrap.dedent(CASE))
    return path


def test_measure_against_the_service(url):
    x = torch.randn(100_000)
    # a CPU run judged on an A100: the service's numbers, with the mismatch allowed
    result = measure(
        lambda x: x.cos().cos(),
        x,
        chip="a100",
        url=url,
        repeats=3,
        max_time_s=0.2,
        allow_device_mismatch=True,
    )
    answer = result.answer
    assert answer is not None and answer["chip"]["id"] == "a100-sxm4-80gb"
    assert answer["stack"] == "eager"
    # the service judged the measured median, with each recorded op as a row of its own
    assert answer["measured_time_s"] == result.timing.median_s
    assert [row["name"] for row in answer["ops"]] == ["aten::cos", "aten::cos"]
    # fused, 2 N s bytes instead of 4 N s: the service's fused floor is under the unfused time
    assert answer["fused_time_s"] < answer["unfused_time_s"]
    assert answer["against_fusion"] == "slower_than_unfused"  # a CPU is no A100
    assert result.verdict == answer["verdict"]
    assert result.advice[0].startswith("2 elementwise ops (2 cos) run as 2 kernels")
    assert "floor is" in result.advice[0] and "torch.compile" in result.advice[0]


def test_measure_locally_against_this_machines_probed_ceilings(small_probe):
    x = torch.randn(100_000)
    result = measure(lambda x: x.cos().cos(), x, chip=LOCAL, repeats=3, max_time_s=0.2)
    answer = result.answer
    assert answer is not None and answer["chip"]["id"] == "local"
    assert answer["ceilings"]["copy_bytes_per_s"] > 0
    assert answer["fused_time_s"] <= answer["unfused_time_s"]
    assert answer["verdict"] in {
        "faster_than_roofline",
        "near_roofline",
        "room_to_improve",
        "order_of_magnitude_slower",
    }
    report = result.report()
    assert "on local (eager)" in report and "top ops  #" in report


def test_the_cli_against_the_service(url, script, capsys):
    code = run(["measure", f"{script}:case", "--chip", "a100", "--url", url, *FAST, MISMATCH])
    out = capsys.readouterr().out
    assert code == PASS
    assert out.startswith("roofcheck measure: case.<locals>.<lambda> on a100-sxm4-80gb (eager)")
    # 2 cos over 1e5 fp32 on a CPU judged as eager work on an A100: 2 x 1e5 x 40.8 fp32
    # instructions (CUDA's precise cos) at 9.75e12 a second, 837 ns of work (over the bytes'
    # 785 ns) under a
    # fixed-cost floor of 10 us (2 ops x 5 us of dispatch at the low end); a CPU takes tens of
    # microseconds, more than those costs explain: how many times more, the machine decides
    assert re.search(r"verdict  (room_to_improve|order_of_magnitude_slower): ", out)
    assert "set a floor of 10 µs, while the work itself ideally takes 837 ns" in out
    assert "2 elementwise ops (2 cos) run as 2 kernels" in out


def test_the_cli_fails_on_a_verdict_when_asked(url, script, capsys):
    argv = ["measure", f"{script}:case", "--chip", "a100", "--url", url, *FAST, MISMATCH]
    # slower than its fixed costs explain, by whatever factor this machine gives
    assert run([*argv, "--fail-on", "room_to_improve,order_of_magnitude_slower"]) == FAIL
    assert run([*argv, "--fail-on", "typo"]) == ERROR
    assert "unknown typo" in capsys.readouterr().err


def test_the_cli_json_with_chip_local(script, small_probe, capsys):
    code = run(["measure", f"{script}:case", "--chip", "local", "--json", *FAST])
    assert code == PASS
    result = json.loads(capsys.readouterr().out)
    assert result["chip"] == "local" and result["answer"]["chip"]["id"] == "local"
    # 2 cos over 1e5 fp32: 4 N s unfused, 2 N s fused
    assert result["work"]["unfused_bytes"] == 4 * 100_000 * 4
    assert result["work"]["fused_bytes"] == 2 * 100_000 * 4
    assert result["workload"]["kind"] == "ops" and len(result["workload"]["ops"]) == 2
    assert result["timing"]["repeats"] >= 3


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no-colon", "give SCRIPT.py:NAME"),
        ("missing.py:case", "cannot read missing.py"),
        ("{script}:nope", "has no callable nope"),
        ("{script}:NOT_CALLABLE", "has no callable NOT_CALLABLE"),
        ("{script}:not_a_pair", "must return (fn, args), got int"),
    ],
)
def test_a_bad_target_is_a_usage_error(script, target, message, capsys):
    assert run(["measure", target.format(script=script), "--chip", "local"]) == ERROR
    assert message in capsys.readouterr().err


def test_the_scripts_own_error_is_shown_with_its_traceback(script, capsys):
    assert run(["measure", f"{script}:broken", "--chip", "local", *FAST]) == ERROR
    assert "Traceback" in capsys.readouterr().err


def test_the_services_error_is_shown(url, script, capsys):
    argv = ["measure", f"{script}:case", "--chip", "no-such-chip", "--url", url, *FAST]
    assert run(argv) == ERROR
    assert "the service answered 404: unknown chip 'no-such-chip'" in capsys.readouterr().err


def test_an_unreachable_service_is_an_error():
    with pytest.raises(MeasureError, match="cannot reach"):
        measure(torch.cos, torch.ones(4), chip="a100", url="http://127.0.0.1:9", repeats=1)


def test_too_many_ops_for_the_service_is_an_error_before_timing(url, monkeypatch):
    def many(x):
        for _ in range(4097):
            x = x + 1
        return x

    monkeypatch.setattr(runner, "_time_calls", None)  # a call to it would fail otherwise
    with pytest.raises(MeasureError, match="4097 operators"):
        measure(many, torch.ones(1), chip="a100", url=url, allow_device_mismatch=True)


def test_without_the_measure_extra_the_command_says_what_to_install(
    script, small_probe, monkeypatch, capsys
):
    # the script's `import torch` fails (--chip local probes with PyTorch: NumPy is not needed)
    monkeypatch.setitem(sys.modules, "torch", None)
    assert run(["measure", f"{script}:case", "--chip", "local", *FAST]) == ERROR
    assert capsys.readouterr().err == (
        "roofcheck: measuring a function needs torch: "
        "install the measure extra (pip install -e '.[measure]')\n"
    )
