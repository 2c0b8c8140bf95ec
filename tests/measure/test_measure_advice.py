"""The measure report's advice fits the code and the device it ran on: no kernel launches on
a CPU (issue 34, item 5)."""

import json
import re

import pytest
import torch

from app.cli import PASS, run
from app.measure import LOCAL, measure
from app.measure.findings import advice, compiled_by, fusion_advice, judged_stack, report
from app.measure.op_counts import RecordedOp, TensorInfo, count
from app.measure.timing import Timing

FAST = ["--repeats", "3", "--warmup", "1", "--max-time-s", "0.2"]


def _t(id_, device, n=1000):
    return TensorInfo((n,), "float32", device, id_, 4 * n)


def _timing(cpu_share=0.1):
    # the host's CPU time as a share of the 1 ms median: 0.1, a host mostly waiting
    return Timing(
        median_s=1e-3,
        ci_low_s=1e-3,
        ci_high_s=1e-3,
        min_s=1e-3,
        max_s=1e-3,
        mean_s=1e-3,
        stdev_s=0.0,
        p25_s=1e-3,
        p75_s=1e-3,
        repeats=10,
        warmup=1,
        first_call_s=1e-3,
        relative_ci=0.0,
        target_ci=0.02,
        converged=True,
        clock="perf_counter",
        cpu_median_s=cpu_share * 1e-3,
        cpu_share=cpu_share,
    )


def _cos_chain(device, n_ops=3):
    """x.cos().cos()... recorded on `device`: `n_ops` kernels, each its own."""
    return count(
        [
            RecordedOp("aten::cos", (_t(f"t{i}", device),), (_t(f"t{i + 1}", device),))
            for i in range(n_ops)
        ],
        0.0,
    )


# the answer's fixed costs as the engine prices 3 eager kernels: 3 x 8 µs of dispatch,
# more than the 10 ns of work
OVERHEAD_BOUND = {
    "expected_time_s": 10e-9,
    "launch_overhead_s": 24e-6,
    "kernels": 3,
    "fused_time_s": 1e-6,
    "unfused_time_s": 1e-6,
    "against_fusion": "slower_than_unfused",
    "stack": "eager",
    "advice": [],
}


def test_on_a_gpu_the_fixed_cost_is_the_kernel_launches():
    lines = advice(_cos_chain("cuda:0"), _timing(), OVERHEAD_BOUND)
    assert "3 kernel launches take 24 µs alone, more than the work (10 ns)" in lines[0]
    assert "compile it" in lines[0]
    # compiled already: CUDA graphs are what is left
    compiled = advice(_cos_chain("cuda:0"), _timing(), OVERHEAD_BOUND | {"stack": "compiled"})
    assert "compile it" not in compiled[0] and 'mode="reduce-overhead"' in compiled[0]


def test_on_a_cpu_the_fixed_cost_is_the_frameworks_dispatch_per_op():
    lines = advice(_cos_chain("cpu"), _timing(), OVERHEAD_BOUND)
    assert not any("kernel launch" in line for line in lines)
    assert lines[0].startswith(
        "3 ops dispatched one at a time by the framework cost 24 µs alone, more than the "
        "work (10 ns): overhead-bound"
    )
    # and the work line says what a CPU runs: ops, not kernel launches
    work = report("f", _timing(), _cos_chain("cpu"), None, ())
    assert "3 ops on the CPU (no kernel launches)" in work
    assert "3 ops, 3 kernel launches" in report("f", _timing(), _cos_chain("cuda:0"), None, ())


def test_a_cpu_function_reading_scalars_is_not_told_of_kernel_launches(small_probe):
    # the case: 100 scalar reads on the CPU, no kernel launched anywhere, were told
    # "0 kernel launches take 800 µs alone". unbind and 100 _local_scalar_dense: 101 ops,
    # priced at 8 µs of eager dispatch each: 808 µs
    x = torch.arange(100.0)
    result = measure(lambda x: [float(v) for v in x], x, chip=LOCAL, repeats=3, max_time_s=0.2)
    assert result.answer is not None
    assert result.answer["launch_overhead_s"] == pytest.approx(101 * 8e-6)
    assert not any(re.search(r"\d kernel launch", line) for line in result.advice)
    assert "101 ops on the CPU (no kernel launches)" in result.report()
    dispatch = [line for line in result.advice if "dispatched one at a time" in line]
    assert dispatch and dispatch[0].startswith("101 ops dispatched one at a time")
    # the scalar reads: a CPU waits for no device; each read is an op of its own, from a loop
    (reads,) = [line for line in result.advice if line.startswith("A read of")]
    assert "at ops 1-100 (" in reads and "100 times from that line: in a loop" in reads
    assert "waits for the device" not in reads


def test_events_at_consecutive_ops_are_said_as_ranges():
    # .item() at ops 0-2 and 4 from one line, at op 3 from another
    reads = [
        RecordedOp(
            "aten::_local_scalar_dense",
            (_t(f"x{i}", "cuda:0", 1),),
            (),
            where="s.py:9" if i == 3 else "s.py:3",
        )
        for i in range(5)
    ]
    lines = advice(count(reads, 0.0), _timing(), None)
    assert "at ops 0-2, 4 (s.py:3), 4 times from that line" in lines[0]
    assert "at op 3 (s.py:9)" in lines[1]


# --- source lines -----------------------------------------------------------------------------

MODULES = """
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 32)
        self.down = nn.Linear(32, 8)

    def forward(self, x):
        hidden = torch.relu(self.up(x))
        return self.down(hidden)


def mlp():
    return MLP(), (torch.randn(4, 8),)


def stack():
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8)), (torch.randn(4, 8),)
"""


def _where(script, name, capsys):
    argv = ["measure", f"{script}:{name}", "--chip", LOCAL, "--json", *FAST]
    assert run(argv) == PASS
    return json.loads(capsys.readouterr().out)["work"]["where"]


@pytest.fixture
def modules(tmp_path):
    path = tmp_path / "my_model.py"
    path.write_text(MODULES)
    return path


def test_an_nn_modules_ops_point_at_its_forward_in_the_users_file(modules, small_probe, capsys):
    # nn.Linear on a matrix: t (a view) and addmm; then relu, and the detach of its output
    # that autograd keeps; then down's t and addmm
    where = _where(modules, "mlp", capsys)
    assert where == [f"{modules}:13 in forward"] * 4 + [f"{modules}:14 in forward"] * 2


def test_a_module_of_pytorchs_layers_names_the_layer_not_roofchecks_code(
    modules, small_probe, capsys
):
    # nothing of the call runs in the user's file: each op names the layer that ran it
    where = _where(modules, "stack", capsys)
    layers = ["module 0 (Linear)", "module 1 (ReLU)", "module 2 (Linear)"]
    assert where == [layer for layer in layers for _ in range(2)]


def test_a_measured_layer_is_named_by_its_class_not_by_the_line_that_measured_it():
    # before, the innermost frame outside PyTorch was the call of measure itself: this line
    result = measure(torch.nn.Linear(8, 8), torch.randn(4, 8), repeats=2, max_time_s=0)
    assert result.counts.as_dict()["where"] == ["a Linear module"] * 2


# --- compiled functions -----------------------------------------------------------------------

COMPILED = """
import torch


def chain(x):
    return x.cos().cos()


def compiled():  # dynamo alone (backend="eager"): the wrapper torch.compile returns, fast
    return torch.compile(chain, backend="eager"), (torch.randn(100_000),)


def plain():
    return chain, (torch.randn(100_000),)
"""


@pytest.fixture
def compiled_script(tmp_path):
    path = tmp_path / "compiled_case.py"
    path.write_text(COMPILED)
    return path


def _measured(script, name, capsys, *more):
    argv = ["measure", f"{script}:{name}", "--chip", LOCAL, "--json", *FAST, *more]
    assert run(argv) == PASS
    return json.loads(capsys.readouterr().out)


def _report(script, name, capsys):
    assert run(["measure", f"{script}:{name}", "--chip", LOCAL, *FAST]) == PASS
    return capsys.readouterr().out


def _told_to_compile(advice_lines):
    return any("compile (torch.compile) or fuse them" in line for line in advice_lines)


def test_a_compiled_function_is_judged_as_compiled(compiled_script, small_probe, capsys):
    result = _measured(compiled_script, "compiled", capsys)
    assert result["answer"]["stack"] == "compiled"
    assert result["advice"][0] == (
        "Detected as compiled (torch.compile): judged on the compiled stack "
        "(give the stack eager to judge it as eager PyTorch)."
    )
    assert not _told_to_compile(result["advice"])
    assert "on local (compiled)" in _report(compiled_script, "compiled", capsys)
    # judged as the compiler runs it: the two cos fused into one kernel (on an H200, judged as
    # two, a compiled x.cos().cos() looked faster than the roofline)
    assert result["workload"]["groups"] == [[0, 1]]
    assert result["answer"]["kernels"] == 1


def test_the_same_function_uncompiled_is_judged_as_eager(compiled_script, small_probe, capsys):
    result = _measured(compiled_script, "plain", capsys)
    assert result["answer"]["stack"] == "eager"
    assert not any(line.startswith("Detected as compiled") for line in result["advice"])


# the fused floor half the unfused time, and the measured time between them: fusion is worth
# a sentence
FUSABLE = {
    "fused_time_s": 1e-6,
    "unfused_time_s": 2e-6,
    "against_fusion": "between_fused_and_unfused",
}


def test_compiled_the_fusion_advice_is_what_to_look_for_not_to_compile():
    # 2 cos over 1000 fp32 elements: each reads and writes 4 kB (16 kB in all); fused, x read
    # and the result written: 8 kB
    counts = _cos_chain("cuda:0", n_ops=2)
    eager = fusion_advice(counts, FUSABLE | {"stack": "eager"})
    assert eager == [
        "2 elementwise ops (2 cos) run as 2 kernels, moving 16 kB in all: fused, the function "
        "moves 8 kB and its floor is 1 µs; compile (torch.compile) or fuse them."
    ]
    compiled = fusion_advice(counts, FUSABLE | {"stack": "compiled"})
    assert compiled == [
        "Compiled, its 2 elementwise ops (2 cos) should run fused: as 2 kernels they move "
        "16 kB, fused, the function moves 8 kB and its floor is 1 µs; above that floor, look "
        "for graph breaks (torch._dynamo.explain) or ops the compiler left unfused."
    ]


def test_a_stack_given_is_the_stack_judged(compiled_script, small_probe, capsys):
    # a plain function said to be compiled (compiled inside, say): no detection, no advice
    # to compile; and a compiled one said to be eager is judged as eager
    told = _measured(compiled_script, "plain", capsys, "--stack", "compiled")
    assert told["answer"]["stack"] == "compiled" and not _told_to_compile(told["advice"])
    assert not any(line.startswith("Detected") for line in told["advice"])
    eager = _measured(compiled_script, "compiled", capsys, "--stack", "eager")
    assert eager["answer"]["stack"] == "eager"


def test_what_torch_compile_returns_is_detected():
    def chain(x):
        return x.cos().cos()

    layer = torch.nn.Linear(4, 4)
    assert compiled_by(torch.compile(chain, backend="eager")) == "torch.compile"
    assert compiled_by(torch.compile(layer, backend="eager")) == "torch.compile"
    assert compiled_by(torch.compile(layer.forward, backend="eager")) == "torch.compile"
    in_place = torch.nn.Linear(4, 4)
    in_place.compile(backend="eager")  # nn.Module.compile: the module itself, compiled
    assert compiled_by(in_place) == "nn.Module.compile"
    assert compiled_by(chain) is None and compiled_by(layer) is None
    assert judged_stack(chain, None) == ("eager", ())
    assert judged_stack(layer, "typical") == ("typical", ())
    assert judged_stack(in_place, None)[0] == "compiled"
