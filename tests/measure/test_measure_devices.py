"""A run is judged only against a chip it ran on: CPU tensors against a catalog chip (every one
an accelerator, none a CPU) are refused before the function is timed, unless the caller allows
the mismatch, and then the report says so first. A mistyped chip is found before any timing.
Real PyTorch on the CPU, judged by the real service on a loopback port."""

from typing import Any

import pytest
import torch

from app.cli import ERROR, PASS, run
from app.measure import LOCAL, MeasureError, Measurement, judging, measure, runner
from app.measure.op_counts import RecordedOp, TensorInfo

CASE = """
import torch

def case():
    x = torch.randn(1000)
    return (lambda x: x.cos().cos()), (x,)
"""


def fast(fn: Any, x: torch.Tensor, **options: Any) -> Measurement:
    return measure(fn, x, repeats=3, warmup=1, max_time_s=0.2, **options)


@pytest.fixture
def untimed(monkeypatch):
    """Fail the test if anything is timed."""

    def no_timing(*args, **kwargs):
        raise AssertionError("timed")

    monkeypatch.setattr(runner, "_time_calls", no_timing)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "bench_cpu.py"
    path.write_text(CASE)
    return path


def test_cpu_tensors_against_a_gpu_chip_are_refused_before_timing(url, untimed):
    with pytest.raises(MeasureError) as error:
        fast(lambda x: x.cos(), torch.ones(1000), chip="a100", url=url)
    message = str(error.value)
    # both devices named, and the ways out
    assert "ran on cpu" in message and "a100-sxm4-80gb (NVIDIA A100 SXM4 80GB)" in message
    assert "chip='local'" in message and "allow_device_mismatch" in message
    assert "move its tensors to the chip" in message


def test_the_cli_refuses_with_exit_code_2(url, script, untimed, capsys):
    assert run(["measure", f"{script}:case", "--chip", "h100", "--url", url]) == ERROR
    err = capsys.readouterr().err
    assert "ran on cpu" in err and "h100-sxm5-80gb" in err and "--chip local" in err


def test_allowed_the_mismatch_is_judged_and_the_report_says_so_first(url):
    result = fast(
        lambda x: x.cos(), torch.ones(1000), chip="a100", url=url, allow_device_mismatch=True
    )
    assert result.answer is not None and result.answer["chip"]["id"] == "a100-sxm4-80gb"
    [warning] = result.warnings
    assert "did not run on" in warning and "ran on cpu" in warning
    lines = result.report().splitlines()
    assert lines[1] == f"  WARNING  {warning}"  # before the time, the work and the verdict
    assert result.as_dict()["warnings"] == [warning]


def test_the_cli_allows_the_mismatch_when_asked(url, script, capsys):
    argv = ["measure", f"{script}:case", "--chip", "h100", "--url", url]
    fast = ["--repeats", "3", "--warmup", "1", "--max-time-s", "0.2"]
    assert run([*argv, *fast, "--allow-device-mismatch"]) == PASS
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("  WARNING  Judged against h100-sxm5-80gb")


def test_chip_local_and_no_chip_are_always_fine(small_probe):
    local = fast(torch.cos, torch.ones(1000), chip=LOCAL)
    assert local.answer is not None and local.warnings == ()
    assert fast(torch.cos, torch.ones(1000)).warnings == ()


def test_a_mistyped_chip_is_found_before_the_function_runs(url, untimed):
    calls: list[object] = []
    with pytest.raises(MeasureError, match=r"404: unknown chip 'a1000' \(did you mean .*a100"):
        measure(calls.append, torch.ones(4), chip="a1000", url=url)
    assert calls == []  # not even the first call


def test_the_cli_says_did_you_mean_with_exit_code_2(url, script, untimed, capsys):
    assert run(["measure", f"{script}:case", "--chip", "h1000", "--url", url]) == ERROR
    assert "did you mean" in capsys.readouterr().err


def _op(device):
    t = TensorInfo((1000,), "float32", device, "t0", 4000)
    return RecordedOp("aten::cos", (t,), (t,))


@pytest.mark.parametrize(
    ("devices", "refused"),
    [
        ({"cpu"}, True),
        (set(), True),  # no tensor at all: it ran on the host
        ({"cuda:0"}, False),
        ({"cpu", "cuda:0"}, False),  # a copy to the GPU: the work ran there
        ({"mps"}, False),
    ],
)
def test_which_runs_are_cpu_runs(devices, refused):
    chip = {"id": "h100-sxm5-80gb", "name": "NVIDIA H100 SXM5 80GB"}
    message = judging.device_mismatch(devices, chip)
    assert (message is not None) is refused
    if message is not None:
        assert "cpu" in message and "h100-sxm5-80gb (NVIDIA H100 SXM5 80GB)" in message


H100 = {"id": "h100-sxm5-80gb", "name": "NVIDIA H100 SXM5 80GB"}


@pytest.mark.parametrize(
    ("names", "refused"),
    [
        ({"cuda:0": "NVIDIA H200"}, True),  # seen on a lent H200: it was judged as an H100
        ({"cuda:0": "NVIDIA H100 80GB HBM3"}, False),
        ({"cuda:0": "NVIDIA H100 PCIe"}, False),  # the catalog's other H100s are the same rule
        ({"cuda:0": "NVIDIA H200", "cuda:1": "NVIDIA H100 80GB HBM3"}, False),  # one is it
        ({}, False),  # a GPU whose name is not known may be the chip
    ],
)
def test_a_gpu_run_is_refused_against_a_chip_its_gpu_is_not(names, refused):
    devices = {"cpu", *names} if names else {"cuda:0"}
    message = judging.device_mismatch(devices, H100, names)
    assert (message is not None) is refused
    if message is not None:
        assert message == (
            "the function ran on NVIDIA H200 (cuda:0), not on h100-sxm5-80gb "
            "(NVIDIA H100 SXM5 80GB)"
        )


def test_measure_refuses_a_run_on_another_gpu_before_timing(url, untimed, monkeypatch):
    # the names come from torch.cuda.get_device_name; this machine has no GPU, so the run's
    # devices and their names are those an H200 gave (tests/traces has its trace)
    trace = runner._torch_trace()
    monkeypatch.setattr(trace, "devices", lambda args, ops: {"cuda:0"})
    monkeypatch.setattr(trace, "device_names", lambda devices: {"cuda:0": "NVIDIA H200"})
    with pytest.raises(MeasureError) as error:
        fast(lambda x: x.cos(), torch.ones(1000), chip="h100", url=url)
    message = str(error.value)
    assert "ran on NVIDIA H200 (cuda:0), not on h100-sxm5-80gb" in message
    assert "against the chip it ran on" in message and "allow_device_mismatch" in message


def test_the_devices_of_a_run_are_its_arguments_and_its_ops():
    from app.measure.torch_trace import devices  # noqa: PLC0415

    assert devices([torch.ones(2)], [_op("cuda:0")]) == {"cpu", "cuda:0"}
    assert devices([], [_op("cpu")]) == {"cpu"}


@pytest.mark.parametrize("chip", ["", " ", ".", ".."])
def test_a_chip_name_that_names_no_chip_is_refused_before_the_function_runs(url, chip, untimed):
    # GET /chips/. would answer the list of chips: no chip, and no KeyError either
    with pytest.raises(MeasureError, match="unknown chip"):
        measure(torch.cos, torch.ones(4), chip=chip, url=url)


def test_a_url_that_serves_no_json_object_is_an_error(url, untimed):
    with pytest.raises(MeasureError, match="answered no JSON object"):
        measure(torch.cos, torch.ones(4), chip="a100", url=f"{url}/docs#")
