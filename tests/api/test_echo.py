"""The workload echo: to JSON it writes each applying field's value itself (app/schemas/echo.py);
the bytes must be those of serialising the workload and keeping the fields that apply."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_core import to_json

from app.engine import Dtype, Phase
from app.engine.training.options import DataParallelAlgorithm, LoraTarget, Optimizer
from app.schemas.echo import ONLY_IN, EchoedWorkload, applicable, ignored
from app.schemas.requests import MatmulWorkload, TransformerWorkload


class Echo(BaseModel):
    workload: EchoedWorkload


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
fields: dict[str, Any] = {
    "phase": st.sampled_from(Phase),
    "batch": st.integers(1, 10**9),
    "reserve_fraction": st.sampled_from([0.0, -0.0, 0.1, 0.999]),
    "dtype": st.none() | st.sampled_from(Dtype),
    "kv_dtype": st.none() | st.sampled_from(Dtype),
    "optimizer": st.sampled_from(Optimizer),
    "dp_algorithm": st.sampled_from(DataParallelAlgorithm),
    "lora_targets": st.lists(st.sampled_from(LoraTarget), min_size=1, max_size=7),
    "mfu": st.none() | st.floats(0.01, 1.0),
    "network_bandwidth": st.floats(1.0, 1e15),
}
workloads = st.builds(TransformerWorkload, model=st.just("llama-8b"), **fields) | st.builds(
    TransformerWorkload, config=st.dictionaries(st.text(max_size=4), json_values), **fields
)


def _generic(workload: TransformerWorkload, **options: Any) -> dict[str, Any]:
    """What the echo was before its JSON path: the workload serialised, then filtered."""
    return applicable(workload.model_dump(mode="json", **options), workload.phase)


@given(workloads)
def test_the_echo_writes_the_bytes_of_the_serialised_workload_less_what_does_not_apply(
    workload: TransformerWorkload,
) -> None:
    echo = Echo(workload=workload)
    generic = _generic(workload)
    assert echo.model_dump_json().encode() == b'{"workload":' + to_json(generic) + b"}"
    assert echo.model_dump(mode="json") == {"workload": generic}
    # to Python, the enums stay enums, as the workload's own dump gives them
    assert echo.model_dump() == {"workload": applicable(workload.model_dump(), workload.phase)}


@given(workloads)
def test_options_that_drop_fields_still_drop_them(workload: TransformerWorkload) -> None:
    echo = Echo(workload=workload)
    for option in ("exclude_defaults", "exclude_none", "exclude_unset"):
        options: dict[str, Any] = {option: True}
        dumped = echo.model_dump_json(**options).encode()
        assert dumped == b'{"workload":' + to_json(_generic(workload, **options)) + b"}"


def test_a_kernel_is_echoed_whole() -> None:
    matmul = MatmulWorkload(kind="matmul", m=1, n=2, k=3, dtype=Dtype.BF16)
    assert Echo(workload=matmul).model_dump(mode="json")["workload"] == matmul.model_dump(
        mode="json"
    )


@given(workloads)
def test_the_ignored_fields_are_those_set_away_from_their_defaults_the_phase_ignores(
    workload: TransformerWorkload,
) -> None:
    # field by field, as the warning's definition reads (ignored() tests them all at once
    # first, since most requests leave them at their defaults)
    expected: dict[Phase, list[str]] = {}
    for name, field in TransformerWorkload.model_fields.items():
        phase = ONLY_IN.get(name)
        default = field.get_default(call_default_factory=True)
        if phase not in (None, workload.phase) and getattr(workload, name) != default:
            expected.setdefault(phase, []).append(name)
    assert ignored(workload) == expected
