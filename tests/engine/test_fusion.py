"""What a fused kernel must still write: a tensor mutated in place (its storage holds the new
value after the kernel) and a tensor read after the kernel by an op outside it. Worked
examples (fp32: 4 bytes an element) and an invariant on generated sequences."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.fusion import estimate_ops
from app.engine.ops import Op, Tensor
from app.engine.traffic import external_bytes
from tests.engine.chips import A100

N = 1000  # elements
SIZE = 4 * N  # bytes of one fp32 tensor of N elements


def t(id=None):
    return Tensor((N,), id=id)


def test_an_input_mutated_in_place_and_read_after_is_written_back():
    # x.add_(y); z = x.cos(): fused, x and y are read (2 N s), x's storage must hold x + y
    # afterwards (N s) and z is the result (N s): 4 N s = 16000 bytes (not 3 N s: x, read by
    # the cos on chip, is still written). Each op alone: add_ 3 N s, cos 2 N s = 5 N s.
    x, y, z = t("x"), t("y"), t("z")
    ops = [Op("aten::add_.Tensor", (x, y), (x,)), Op("aten::cos", (x,), (z,))]
    assert external_bytes(ops) == 4 * SIZE
    result = estimate_ops(ops, A100)
    assert result.fused_bytes == 4 * SIZE
    assert result.roofline.bytes == 5 * SIZE


def test_an_in_place_op_mutates_its_first_input_without_ids_too():
    # the same without ids: the in-place add_ writes the storage it reads (its first input),
    # so the cos's input is that storage, on chip, and it is written back: 4 N s
    ops = [Op("aten::add_", (t(), t()), (t(),)), Op("aten::cos", (t(),), (t(),))]
    assert external_bytes(ops) == 4 * SIZE
    # an out-of-place add makes a new tensor, which the cos reads on chip: x, y, z: 3 N s
    assert external_bytes([Op("aten::add", ops[0].inputs, ops[0].outputs), ops[1]]) == 3 * SIZE


def test_a_tensor_made_in_the_kernel_and_mutated_there_stays_on_chip():
    # a = x.sin(); a.mul_(a); z = a.cos(): a is made in the kernel and read only there:
    # x read, z written: 2 N s
    x, a, z = t("x"), t("a"), t("z")
    ops = [
        Op("aten::sin", (x,), (a,)),
        Op("aten::mul_", (a, a), (a,)),
        Op("aten::cos", (a,), (z,)),
    ]
    assert external_bytes(ops) == 2 * SIZE


def test_a_tensor_used_outside_its_group_is_written_by_the_group():
    # a = x.sin(); b = a.cos(), fused as group [0, 1]; then c = a + b alone.
    # group: x read, a written (read after it by op 2), b written: 3 N s (not 2 N s);
    # op 2 alone: a, b read, c written: 3 N s; in all 6 N s. The whole fused: x read,
    # c written: 2 N s.
    x, a, b, c = t("x"), t("a"), t("b"), t("c")
    ops = [Op("aten::sin", (x,), (a,)), Op("aten::cos", (a,), (b,)), Op("aten::add", (a, b), (c,))]
    assert external_bytes(ops[:2], outside={"a", "b"}) == 3 * SIZE
    result = estimate_ops(ops, A100, groups=[[0, 1]])
    assert result.roofline.bytes == 6 * SIZE
    assert result.fused_bytes == 2 * SIZE


def test_a_read_before_the_group_does_not_make_it_write_what_it_does_not_write():
    # z = x.cos() alone, then a = x.sin(); b = a.exp() fused: op 0 reads x before the group,
    # and a is read by no op after it: the group reads x, writes b: 2 N s
    x, z, a, b = t("x"), t("z"), t("a"), t("b")
    ops = [Op("aten::cos", (x,), (z,)), Op("aten::sin", (x,), (a,)), Op("aten::exp", (a,), (b,))]
    assert estimate_ops(ops, A100, groups=[[1, 2]]).roofline.bytes == 2 * SIZE + 2 * SIZE


_NAMES = ["aten::cos", "aten::exp", "aten::add", "aten::mul", "aten::add_", "aten::mul_"]


@st.composite
def programs(draw):
    """Pointwise ops over N-element tensors named t0..t5 (any may be read, written or
    mutated in place), and a partition of them into contiguous groups."""
    names = [f"t{i}" for i in range(6)]
    ops = []
    for _ in range(draw(st.integers(1, 10))):
        name = draw(st.sampled_from(_NAMES))
        binary = name.rstrip("_").endswith(("add", "mul"))
        ins = [t(draw(st.sampled_from(names))) for _ in range(2 if binary else 1)]
        out = ins[0] if name.endswith("_") else t(draw(st.sampled_from(names)))
        ops.append(Op(name, tuple(ins), (out,)))
    cuts = sorted(draw(st.sets(st.integers(1, max(len(ops) - 1, 1)))))
    edges = [0, *(c for c in cuts if c < len(ops)), len(ops)]
    groups = [list(range(a, b)) for a, b in itertools.pairwise(edges) if b > a]
    return ops, groups


@settings(max_examples=150, deadline=None)
@given(program=programs())
def test_fusing_never_costs_bytes_with_mutations(program):
    ops, groups = program
    alone = estimate_ops(ops, A100)
    grouped = estimate_ops(ops, A100, groups=groups)
    assert alone.fused_bytes <= grouped.roofline.bytes <= alone.roofline.bytes
    # the whole fused reads each tensor whose first use is a read, and writes back those of
    # them written later (their storage holds the new value): at least these bytes
    first_use: dict[str, str] = {}
    for o in ops:
        for side, tensors in (("read", o.inputs), ("written", o.outputs)):
            for tensor in tensors:
                first_use.setdefault(tensor.id, side)
    read = {i for i, side in first_use.items() if side == "read"}
    rewritten = read & {tensor.id for o in ops for tensor in o.outputs}
    assert alone.fused_bytes >= (len(read) + len(rewritten)) * SIZE
