"""No request freezes a worker: sizes beyond any real model are a prompt 422, calculations whose
cost is not bounded by closed forms alone (an inline config, an operator list, measured
ceilings) run off the event loop (so /health answers while they run) and within a time budget
(503 past it), and the engine's cost does not grow with the layer count (issue 16, item 1).
Bounded ones (a catalog model, a kernel) run on the event loop: a thread would cost more."""

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app import engine
from app.main import create_app
from app.services import expectations
from app.settings import Settings
from tests.conftest import serve

# a ~400-byte mixture-of-experts config that once ran a per-layer loop for 7-56 s
HUGE_MOE = {
    "model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 100_000_000,
    "num_attention_heads": 8, "intermediate_size": 128, "vocab_size": 100,
    "num_local_experts": 8, "num_experts_per_tok": 2,
}  # fmt: skip
MANY_HEADS = {
    "model_type": "llama", "hidden_size": 100_000_000, "num_hidden_layers": 2,
    "num_attention_heads": 100_000_000, "intermediate_size": 128, "vocab_size": 100,
}  # fmt: skip
# Llama 3.1 8B's shape, inline: a valid config, so its calculation runs in a worker thread
LLAMA_CONFIG = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "vocab_size": 128256,
}  # fmt: skip
X = {"id": "x", "shape": [1024], "dtype": "fp32"}
COS = {"name": "aten::cos", "inputs": [X], "outputs": [X]}
HOLD_S = 30  # the longest a held calculation (below) waits to be released


def _post(config):
    return {"chip": "a100", "workload": {"kind": "transformer", "config": config}}


@pytest.mark.parametrize(
    ("path", "config", "field", "limit"),
    [
        ("/expected-time", HUGE_MOE, "num_hidden_layers", 1024),
        ("/memory-fit", HUGE_MOE, "num_hidden_layers", 1024),
        ("/memory-fit", MANY_HEADS, "hidden_size", 2**18),
        ("/memory-fit", MANY_HEADS | {"hidden_size": 4096}, "num_attention_heads", 4096),
    ],
)
def test_a_config_beyond_any_real_model_is_a_prompt_422_naming_the_limit(
    client, path, config, field, limit
):
    started = time.perf_counter()
    response = client.post(path, json=_post(config))
    # the config's ranges are checked in milliseconds; the per-layer loop this config once
    # ran took 7-56 s: a bound between the two that a loaded machine does not reach
    assert time.perf_counter() - started < 5
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "workload", "config", field]
    assert f"between 1 and {limit}" in error["msg"]


@dataclass
class Held:
    """/memory-fit's engine call, held in its worker thread until `release` is set (or for
    HOLD_S): `running` is set once it is under way, `finished` once it has returned."""

    running: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def held(monkeypatch) -> Iterator[Held]:
    hold = Held()
    real = engine.memory_fit

    def slow(*args, **kwargs):
        hold.running.set()
        hold.release.wait(HOLD_S)
        try:
            return real(*args, **kwargs)
        finally:
            hold.finished.set()

    monkeypatch.setattr(engine, "memory_fit", slow)
    yield hold
    hold.release.set()


def test_health_answers_while_a_calculation_holds_its_thread(held, tmp_path: Path):
    """The calculations run in worker threads, never on the event loop: /health answers while
    one is held (on the event loop, it would hold every other request until released)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'db'}", calculation_budget_s=HOLD_S)
    with serve(create_app(settings)) as base:
        statuses: list[int] = []

        def call():
            response = httpx.post(base + "/memory-fit", json=_post(LLAMA_CONFIG), timeout=HOLD_S)
            statuses.append(response.status_code)

        heavy = threading.Thread(target=call)
        heavy.start()
        try:
            assert held.running.wait(HOLD_S)
            with httpx.Client(base_url=base, timeout=HOLD_S / 3) as probe:
                for _ in range(3):
                    assert probe.get("/health").status_code == 200
            assert not held.finished.is_set()  # answered while the calculation was held
        finally:
            held.release.set()
            heavy.join()
    assert statuses == [200]


def test_a_calculation_past_its_budget_is_a_503_with_retry_after(held, tmp_path: Path):
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'db'}", calculation_budget_s=0.2)
    client = TestClient(create_app(settings))
    response = client.post("/memory-fit", json=_post(LLAMA_CONFIG))
    assert not held.finished.is_set()  # answered at the budget, not when the work ended
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert response.json()["detail"] == {
        "message": "the calculation took longer than its 0.2 s budget; retry later",
        "type": "over_budget",
    }


@pytest.mark.parametrize(
    ("workload", "in_thread"),
    [
        ({"kind": "transformer", "model": "llama-8b"}, False),
        ({"kind": "matmul", "m": 64, "n": 64, "k": 64}, False),
        ({"kind": "transformer", "config": LLAMA_CONFIG}, True),
        ({"kind": "ops", "ops": [COS]}, True),
    ],
)
def test_only_calculations_not_bounded_by_closed_forms_leave_the_event_loop(
    monkeypatch, tmp_path: Path, workload, in_thread
):
    """A catalog model or a kernel is calculated on the event loop's thread; an inline config
    or an operator list in a worker thread (within the budget)."""
    threads: list[int] = []
    real = expectations._place

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(expectations, "_place", spy)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'db'}")
    app = create_app(settings)
    loop_thread: list[int] = []

    @app.get("/__loop_thread")
    async def loop_thread_id() -> int:
        loop_thread.append(threading.get_ident())
        return 0

    with TestClient(app, base_url="http://localhost") as client:  # one event loop throughout
        client.get("/__loop_thread")
        response = client.post("/expected-time", json={"chip": "a100", "workload": workload})
    assert response.status_code == 200, response.text
    assert (threads != loop_thread) is in_thread
