"""The expectation memo: a check that differs from an earlier one only in its measured time
reuses that one's expectation, and answers exactly as if it had computed it (a stored
measurement's, on both backends: tests/db/test_measurements.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.main import create_app
from app.schemas.requests import CalculationRequest, CheckRequest, TransformerWorkload
from app.services.expectation_key import memo_key
from app.services.memo import Memo
from app.settings import Settings
from tests.api import test_fuzz as fuzz

QUERY = "/check?chip=a100&model=llama-8b&batch=8"


def _started(stack: ExitStack, path: Path, name: str, *, memo: bool) -> TestClient:
    """A started app (stopped with `stack`), its expectation memo on or holding nothing."""
    app = create_app(Settings(database_url=f"sqlite:///{path}/{name}.db"))
    client = stack.enter_context(TestClient(app, base_url="http://localhost"))
    if not memo:
        app.state.catalogs.expectations.max_entries = 0
    return client


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Callable[[str], TestClient]]:
    with ExitStack() as stack:
        yield lambda name: _started(stack, tmp_path, name, memo=True)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, TestClient]]:
    path = tmp_path_factory.mktemp("memo")
    with ExitStack() as stack:
        yield _started(stack, path, "kept", memo=True), _started(stack, path, "fresh", memo=False)


def test_a_new_measured_time_reuses_the_expectation(
    started: Callable[[str], TestClient],
) -> None:
    client = started("one")
    memo = client.app.state.catalogs.expectations  # type: ignore[attr-defined]
    first = client.get(f"{QUERY}&measured_ms=5").json()
    # kept from its second time (a question asked once is not: app/services/memo.py)
    assert client.get(f"{QUERY}&measured_ms=7").status_code == 200 and len(memo) == 1
    second = client.get(f"{QUERY}&measured_ms=50").json()
    assert memo.hits == 1 and len(memo) == 1
    # the same expectation, judged against each time: 50 ms is 10x the ratio of 5 ms
    assert first["expected_time_s"] == second["expected_time_s"]
    assert second["ratio"] == pytest.approx(10 * first["ratio"])
    assert second["verdict"] != first["verdict"]

    # any other field is another expectation, with what that field asks for
    def other(extra: str) -> dict[str, Any]:
        client.get(f"{QUERY}{extra}&measured_ms=6")  # seen once, then kept
        answer: dict[str, Any] = client.get(f"{QUERY}{extra}&measured_ms=5").json()
        return answer

    assert other("&what_if=true")["what_if"] and first["what_if"] is None
    assert other("&breakdown=true")["breakdown"] and first["breakdown"] is None
    assert other("&stack=eager")["realistic_time_s"] > first["realistic_time_s"]
    assert other("&batch=9")["expected_time_s"] > first["expected_time_s"]
    assert memo.hits == 1 and len(memo) == 5
    # the expected time is not kept (an identical request is answered from the answer cache)
    client.get(QUERY.replace("/check", "/expected-time"))
    assert len(memo) == 5


# questions that mostly have answers (the fuzz strategies' mostly have errors)
answered = st.fixed_dictionaries(
    {
        "chip": st.sampled_from(["a100", "h100", "mi300x", "tpu-v5e", "l4"]),
        "model": st.sampled_from(["llama-8b", "mixtral-8x7b", "gpt2", "deepseek-v3", "bert-base"]),
    },
    optional={
        "phase": st.sampled_from(["decode", "prefill", "generate", "training"]),
        "batch": st.integers(1, 4096),
        "seq_len": st.integers(1, 32768),
        "tp": st.sampled_from([1, 2, 8]),
        "dtype": st.sampled_from(["bf16", "fp16", "fp8"]),
        "stack": st.sampled_from(["typical", "eager", "compiled", "vllm"]),
        "what_if": st.booleans(),
        "breakdown": st.booleans(),
    },
)
times = st.one_of(st.floats(1e-3, 1e6), fuzz.numbers)

SAME = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SAME
@given(params=st.one_of(answered, fuzz.query, fuzz.training_query), times=st.tuples(times, times))
def test_a_kept_expectation_answers_as_a_computed_one(
    pair: tuple[TestClient, TestClient], params: dict[str, Any], times: tuple[Any, Any]
) -> None:
    """Asked once with another time, then with this one: the same status and bytes as an
    app that computes every expectation."""
    kept, fresh = pair
    for measured in (times[0], 123.456):  # seen, then kept (each new to the answer cache)
        kept.get("/check", params={**params, "measured_ms": measured})
    ours = kept.get("/check", params={**params, "measured_ms": times[1]})
    theirs = fresh.get("/check", params={**params, "measured_ms": times[1]})
    assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content)


X = {"shape": [1000, 1000], "dtype": "fp32"}
operators = st.lists(
    st.sampled_from(["aten::cos", "aten::mul", "aten::add"]), min_size=1, max_size=4
)
ops = st.builds(
    lambda names, groups: {
        "kind": "ops",
        "ops": [{"name": n, "inputs": [X], "outputs": [X]} for n in names],
        "groups": groups,
    },
    operators,
    st.sampled_from([[], [[0]], [[0, 1]]]),
)
# as many operator lists as kernels (one_of would give each kind of kernel as many)
half_ops = st.booleans().flatmap(lambda pick: ops if pick else fuzz.kernel)


@SAME
@given(
    body=st.fixed_dictionaries(
        {
            "chip": st.sampled_from(["a100", "h100", "mi300x"]),
            "workload": half_ops,
        },
        optional={"stack": st.sampled_from(["eager", "compiled"]), "what_if": st.booleans()},
    )
)
def test_operator_lists_kept_answer_as_computed(
    pair: tuple[TestClient, TestClient], body: dict[str, Any]
) -> None:
    """An operator list's expectation is kept (as a transformer's); a kernel's is computed
    every time (it costs less than its key): both answer as an app that computes every one."""
    kept, fresh = pair
    memo = kept.app.state.catalogs.expectations  # type: ignore[attr-defined]
    for measured in (3, 4):  # seen, then kept (each new to the answer cache)
        kept.post("/check", json={**body, "measured_ms": measured})
    hits = memo.hits
    ours = kept.post("/check", json={**body, "measured_ms": [1, 2]})
    theirs = fresh.post("/check", json={**body, "measured_ms": [1, 2]})
    assert (ours.status_code, ours.content) == (theirs.status_code, theirs.content)
    kept_kind = body["workload"].get("kind") in ("ops", "transformer")
    assert memo.hits == hits + (1 if kept_kind and ours.status_code == 200 else 0)


def test_the_memo_keeps_the_most_recently_used() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # now the most recent: "b" goes first
    memo.put("c", 3)
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (1, None, 3)
    assert memo.hits == 3 and len(memo) == 2
    empty: Memo[str, int] = Memo(0)
    empty.put("a", 1)
    assert empty.get("a") is None and len(empty) == 0


def test_the_memo_takes_writers_from_several_threads() -> None:
    """Measurements are judged on worker threads: concurrent puts and gets keep the bound
    and lose no update to a race (an unlocked move_to_end after an eviction raises)."""
    memo: Memo[int, int] = Memo(64)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(5_000):
                memo.put((i * 7 + offset) % 200, i)
                memo.get((i * 3 + offset) % 200)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(memo) == 64


def test_a_memo_with_second_sight_keeps_a_key_put_twice() -> None:
    memo: Memo[str, int] = Memo(2, second_sight=True)
    memo.put("a", 1)
    assert memo.get("a") is None and len(memo) == 0  # seen once: not kept
    memo.put("a", 2)
    assert memo.get("a") == 2 and len(memo) == 1
    memo.put("b", 3)
    memo.put("c", 4)
    memo.put("b", 5)
    memo.put("c", 6)
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (None, 5, 6)  # 2 at most
    # the keys seen once are at most 4 x max_entries = 8: the ninth forgets them
    for key in range(9):
        memo.put(str(key), key)
    memo.put("0", 0)
    assert memo.get("0") is None
    memo.clear()
    memo.put("c", 7)
    assert memo.get("c") is None  # clearing forgets what was seen too


# a value other than the default of every field an expectation depends on
OTHER: dict[str, Any] = {
    "chip": "h100",
    "catalog_version": "2026.11.27",
    "stack": "vllm",
    "ceilings": "empirical",
    "breakdown": True,
    "what_if": True,
    "optimizer": "sgd_momentum",
    "zero": 3,
    "dp": 2,
    "pp": 2,
    "ep": 2,
    "cp": 2,
    "micro_batch": 4,
    "lora_rank": 8,
    "lora_targets": ["q", "v"],
    "qlora": True,
    "mfu": 0.5,
    "train_tokens": 1e12,
    "chips_per_node": 4,
    "network_bandwidth": 1e11,
    "overlap": False,
    "dp_algorithm": "parameter_server",
    "phase": "training",
    "batch": 9,
    "seq_len": 512,
    "gen_len": 7,
    "dtype": "fp8",
    "weight_dtype": "int4",
    "kv_dtype": "fp8",
    "tp": 2,
    "reserve_fraction": -0.0,  # equal to 0.0, but echoed as -0.0
    "flash_attention": False,
    "recompute": True,
    "kind": "transformer",  # the only kind of a transformer: the same key
    "model": "llama-70b",
}
BASE: dict[str, Any] = {
    "chip": "a100",
    "measured_ms": 5,
    "workload": {"kind": "transformer", "model": "llama-8b", "reserve_fraction": 0.0},
}


def _key(request: dict[str, Any]) -> Hashable:
    return memo_key(CheckRequest.model_validate(request))


def test_every_expectation_field_has_another_value_here() -> None:
    fields = set(CalculationRequest.model_fields) | set(TransformerWorkload.model_fields)
    assert fields - {"workload", "config"} == set(OTHER)


@pytest.mark.parametrize("name", sorted(OTHER))
def test_the_memo_key_changes_with_every_field_but_the_measured_time(name: str) -> None:
    """As the fields' JSON does (the key of an inline config or an operator list)."""
    top = name in CalculationRequest.model_fields
    changed = (
        {**BASE, name: OTHER[name]}
        if top
        else {**BASE, "workload": {**BASE["workload"], name: OTHER[name]}}
    )
    same = (_key(changed) == _key(BASE), _key({**BASE, "measured_ms": 7}) == _key(BASE))
    fields = set(CalculationRequest.model_fields)
    dumped = [
        CheckRequest.model_validate(r).model_dump_json(include=fields) for r in (changed, BASE)
    ]
    assert same == (dumped[0] == dumped[1], True)
    assert same[0] == (name == "kind")


def test_an_inline_config_is_keyed_by_its_json() -> None:
    config = {"model_type": "llama", "hidden_size": 64}
    key = _key({**BASE, "workload": {"kind": "transformer", "config": config}})
    assert isinstance(key, str) and '"hidden_size":64' in key


def test_a_negative_zero_is_echoed_as_sent_after_a_positive_one(
    started: Callable[[str], TestClient],
) -> None:
    client = started("zeros")
    for zero in ("0.0", "-0.0", "0.0"):
        answer = client.get(f"{QUERY}&measured_ms=5&reserve_fraction={zero}").json()
        assert json.dumps(answer["workload"]["reserve_fraction"]) == zero
