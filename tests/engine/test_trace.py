"""The trace reader's rules, event by event: each operator family's derived output, what is
not modelled and why, nesting on a thread, and the bounds (app/engine/trace.py, trace_ops.py)."""

import pytest

from app.engine import Dtype, Software
from app.engine.ops import Tensor
from app.engine.trace import MAX_DISTINCT, analyse
from app.engine.trace_events import NotATrace, collect
from app.engine.trace_ops import VIEW, op_of
from tests.engine.chips import A100


def op(name, dims, types=None, arguments=()):
    return op_of(name, dims, types or ["float"] * len(dims), list(arguments))


def outputs(result):
    assert not isinstance(result, str), result
    return [(t.shape, t.dtype) for t in result.outputs]


@pytest.mark.parametrize(
    ("name", "dims", "out"),
    [
        ("aten::mm", [[4, 8], [8, 2]], (4, 2)),
        ("aten::addmm", [[2], [4, 8], [8, 2], [], []], (4, 2)),
        ("aten::bmm", [[3, 4, 8], [3, 8, 2]], (3, 4, 2)),
        ("aten::matmul", [[5, 1, 4, 8], [3, 8, 2]], (5, 3, 4, 2)),  # batch broadcast
        ("aten::matmul", [[8], [8]], ()),  # a dot product
        ("aten::matmul", [[8], [3, 8, 2]], (3, 2)),
        ("aten::matmul", [[3, 4, 8], [8]], (3, 4)),
        ("aten::linear", [[2, 4, 8], [16, 8], [16]], (2, 4, 16)),
        ("aten::linear", [[2, 8], [8]], (2,)),
        ("aten::add", [[4, 1], [1, 5]], (4, 5)),
        ("aten::softmax", [[4, 5], [], []], (4, 5)),
        ("aten::clone", [[4, 5]], (4, 5)),
    ],
)
def test_outputs_are_derived_from_the_inputs(name, dims, out):
    assert outputs(op(name, dims))[0][0] == out


def test_reductions_read_their_dimensions_from_the_arguments():
    assert outputs(op("aten::sum", [[4, 5, 6], [], []], None, ["", "[-1]", "False"]))[0][0] == (
        4,
        5,
    )
    assert outputs(op("aten::mean", [[4, 5, 6], []], None, ["", "[0, 2]"]))[0][0] == (5,)
    assert outputs(op("aten::sum", [[4, 5]], None, [""]))[0][0] == ()
    assert outputs(op("aten::max", [[4, 5]]))[0][0] == ()


def test_copies_and_casts():
    copy = op("aten::copy_", [[4, 5], [4, 5], []], ["c10::BFloat16", "float", "Scalar"])
    assert not isinstance(copy, str)
    assert [t.dtype for t in copy.inputs] == [Dtype.FP32]
    assert outputs(copy) == [((4, 5), Dtype.BF16)]
    cast = op("aten::_to_copy", [[4], []], ["float", "Scalar"], ["", "15"])
    assert outputs(cast) == [((4,), Dtype.BF16)]
    assert "scalar type 4" in op("aten::_to_copy", [[4], []], ["float", "Scalar"], ["", "4"])


def test_attention_reads_its_causal_flag():
    q = [2, 8, 128, 64]
    sdpa = op(
        "aten::scaled_dot_product_attention",
        [q, q, q, [], [], [], []],
        ["c10::BFloat16"] * 3 + ["", "Scalar", "Scalar", ""],
        ["", "", "", "", "0.", "True", ""],
    )
    assert not isinstance(sdpa, str) and sdpa.causal
    assert outputs(sdpa) == [(tuple(q), Dtype.BF16)]
    assert (
        op("aten::scaled_dot_product_attention", [q, q]) == "attention needs query, key and value"
    )


@pytest.mark.parametrize(
    ("name", "dims", "types", "reason"),
    [
        ("aten::view", [[4, 5], []], ["float", "ScalarList"], VIEW),
        ("aten::add", [[4], [4]], ["long int", "long int"], "arguments of type 'long int'"),
        ("aten::add", [[4, "x"]], ["float"], "not a list of integers"),
        ("aten::mm", [[4], []], ["float", "Scalar"], "two tensors"),
        ("aten::conv2d", [[1, 3, 8, 8], [4, 3, 3, 3]], None, "output shape is not in the trace"),
        ("aten::empty", [[], []], ["ScalarList", "Scalar"], "no tensor arguments"),
        ("aten::add", [[4, 0], [4, 0]], None, "an empty tensor"),
    ],
)
def test_what_cannot_be_modelled_says_why(name, dims, types, reason):
    result = op(name, dims, types)
    assert isinstance(result, str) and reason in result


def event(name, ts, dur, dims, types=None, *, tid=1, **args):
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": {"Input Dims": dims, "Input type": types or ["float"] * len(dims), **args},
    }


def test_nesting_is_per_thread_and_malformed_events_are_skipped():
    x = [[1000, 1000], [1000, 1000]]
    trace = {
        "traceEvents": [
            event("aten::matmul", 0, 100, x),
            event("aten::mm", 1, 98, x),  # inside the matmul: not counted again
            event("aten::mm", 50, 10, x, tid=2),  # another thread: its own unit
            event("aten::mm", "soon", 10, x),  # no usable time: skipped
            event("aten::mm", 200, -1, x),
            # 1e308 us: beyond the 10^7 s any measured time may last (a ratio would overflow)
            event("aten::mm", 300, 1e308, x),
            "not an event",
        ]
    }
    result = analyse(collect(trace["traceEvents"]), A100)
    counted = {(m.op.name, m.count, round(m.measured * 1e6, 6)) for m in result.modelled}
    assert counted == {("aten::matmul", 1, 100), ("aten::mm", 1, 10)}
    assert result.skipped == 3 and result.events == 7
    assert result.not_modelled == ()


def test_an_unsupported_dtype_on_the_chip_is_not_modelled_with_the_engines_reason():
    # an A100 has no fp8 peak: the engine's reason is listed, never an error
    trace = {
        "traceEvents": [event("aten::mm", 0, 10, [[64, 64], [64, 64]], ["c10::Float8_e4m3fn"] * 2)]
    }
    result = analyse(collect(trace["traceEvents"]), A100)
    assert result.modelled == () and result.whole is None and result.judgement is None
    [missing] = result.not_modelled
    assert "fp8" in missing.reason
    assert result.not_modelled_share == 1.0


def test_distinct_operators_past_the_bound_are_not_modelled():
    events = [event("aten::cos", i * 10, 5, [[i + 1]]) for i in range(MAX_DISTINCT + 5)]
    result = analyse(collect(events), A100, Software.TYPICAL)
    assert len(result.modelled) == MAX_DISTINCT
    [over] = result.not_modelled
    assert over.count == 5 and "distinct operators" in over.reason


def test_an_empty_trace_is_not_a_trace():
    with pytest.raises(NotATrace, match="no cpu_op events"):
        analyse(collect([]), A100)
    assert Tensor((2,)).numel == 2


def test_on_a_gpu_an_op_that_launched_no_kernel_takes_no_time():
    x = [[64, 64], [64, 64]]
    kernel = {"cat": "kernel", "ts": 3, "dur": 2.0, "args": {"External id": 7}}
    trace = {
        "traceEvents": [
            event("aten::mm", 0, 10, x, **{"External id": 7}),
            event("aten::cos", 20, 10, [[64]], **{"External id": 8}),  # no kernel of its own
            kernel,
            {"cat": "kernel", "ts": 3, "dur": "long"},  # no usable duration: not counted
        ]
    }
    result = analyse(collect(trace["traceEvents"]), A100)
    assert [(m.op.name, m.measured) for m in result.modelled] == [("aten::mm", 2e-6)]
    assert result.kernels is not None and result.kernels.count == 1
