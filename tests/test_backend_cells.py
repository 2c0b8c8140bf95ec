"""A stack's own entry on one vendor's backend: fitted where its runs there are established
(5 runs by 2 sources, the rule that lets any entry keep its own range), used by the engine
before the stack's entry over every backend, and cross-validated like every other entry."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.engine import Backend, Fitted, Kind, Software, fitted
from app.engine.published_runs import FITTED, ON_BACKEND
from app.services.catalogs import load_catalog_files
from app.settings import Settings
from app.validation.calibrate import fit, lookup, parts, ratio
from app.validation.runs import Result, evaluate, load

CATALOG, MODELS = load_catalog_files(Settings())
BASE = next(
    r
    for r in evaluate(load(), CATALOG, MODELS)
    if r.row.id == "llamacpp4766-llama7b-f16-rtx4090-pp512"
)


def _row(i: int, source: str, backend: Backend, value: float) -> Result:
    """BASE (a llama.cpp prefill) as if published by `source` on a `backend` chip, taking
    `value` times its sustained-kernel time beyond its fixed costs."""
    p = parts(BASE)
    data = replace(BASE.row, id=f"r{i}", source_url=f"https://{source}")
    realism = replace(BASE.realism, backend=backend)
    return replace(BASE, row=data, realism=realism, measured_s=p.fixed + value * p.busy)


# Metal runs at 1.0-1.4 the sustained kernels, CUDA runs at 2.0-2.8, by sources a and b; AMD
# runs only 4 (not established)
APPLE = [_row(i, "ab"[i % 2], Backend.APPLE, 1.0 + 0.1 * i) for i in range(5)]
NVIDIA = [_row(10 + i, "ab"[i % 2], Backend.NVIDIA, 2.0 + 0.2 * i) for i in range(5)]
AMD = [_row(20 + i, "c", Backend.AMD, 3.0) for i in range(4)]


def test_a_stack_gets_its_own_entry_on_a_backend_only_where_established() -> None:
    # each median is over sources, of each source's median. Apple: a ran 1.0, 1.2, 1.4
    # (median 1.2), b 1.1, 1.3 (1.2): 1.2 (5 runs, 2 sources); NVIDIA: a 2.0, 2.4, 2.8 (2.4),
    # b 2.2, 2.6 (2.4): 2.4; AMD: 4 runs by one source, too few: no entry of its own. The
    # stack's entry over every backend: a's six runs (1.0, 1.2, 1.4, 2.0, 2.4, 2.8) have the
    # median (1.4 + 2.0) / 2 = 1.7, b's four (1.1, 1.3, 2.2, 2.6) 1.75, c's 3.0: 1.75
    rows = APPLE + NVIDIA + AMD
    assert [round(ratio(r), 6) for r in APPLE] == [1.0, 1.1, 1.2, 1.3, 1.4]
    table = fit(rows)
    cells = table.on_backend[Kind.PREFILL][Software.LLAMA_CPP]
    assert set(cells) == {Backend.APPLE, Backend.NVIDIA}
    assert (cells[Backend.APPLE].ratio, cells[Backend.APPLE].runs) == (1.2, 5)
    assert (cells[Backend.NVIDIA].ratio, cells[Backend.NVIDIA].sources) == (2.4, 2)
    assert table.entries[Kind.PREFILL][Software.LLAMA_CPP].ratio == 1.75
    # a run on each backend is predicted from its backend's entry; AMD's from the stack's
    assert lookup(table, APPLE[0]).ratio == 1.2
    assert lookup(table, NVIDIA[0]).ratio == 2.4
    assert lookup(table, AMD[0]).ratio == 1.75


def test_the_backend_entry_is_left_out_with_its_source() -> None:
    # without source b, Apple keeps 3 runs (1.0, 1.2, 1.4) by one source: not established,
    # so a's Apple run is predicted from the stack's entry over every backend; without
    # source c nothing changes for Apple and NVIDIA
    rows = APPLE + NVIDIA + AMD
    without_b = fit(r for r in rows if r.row.source != "https://b")
    assert Software.LLAMA_CPP not in without_b.on_backend.get(Kind.PREFILL, {})
    # a's 3 Apple runs and 3 NVIDIA runs (median 1.7) and c's 4 AMD runs (3.0): the median
    # of the two sources' medians, (1.7 + 3.0) / 2 = 2.35
    assert lookup(without_b, APPLE[0]).ratio == 2.35
    without_c = fit(r for r in rows if r.row.source != "https://c")
    assert lookup(without_c, APPLE[0]).ratio == 1.2


def test_the_engine_prices_llama_cpp_prefill_per_backend() -> None:
    # the engine's table: llama.cpp prompt processing on Apple's Metal and on NVIDIA's CUDA
    # has its own established entries, which differ (Metal's nearer the sustained kernels);
    # an AMD chip, without established llama.cpp prefill runs of its own, gets the stack's
    apple, used, on = fitted(Kind.PREFILL, Software.LLAMA_CPP, Backend.APPLE)
    assert (used, on) == (Software.LLAMA_CPP, Backend.APPLE)
    assert apple == Fitted(*ON_BACKEND["prefill"]["llama.cpp"]["apple"]) and apple.established
    nvidia, _, on = fitted(Kind.PREFILL, Software.LLAMA_CPP, Backend.NVIDIA)
    assert on is Backend.NVIDIA and nvidia.ratio > apple.ratio
    amd, used, on = fitted(Kind.PREFILL, Software.LLAMA_CPP, Backend.AMD)
    assert (used, on) == (Software.LLAMA_CPP, None)
    assert amd == Fitted(*FITTED["prefill"]["llama.cpp"])
    assert fitted(Kind.PREFILL, Software.LLAMA_CPP) == (amd, Software.LLAMA_CPP, None)


def test_every_backend_entry_is_established_and_its_stack_has_one() -> None:
    for kind, stacks in ON_BACKEND.items():
        for stack, backends in stacks.items():
            assert stack in FITTED[kind], (kind, stack)
            for backend, entry in backends.items():
                cell = Fitted(*entry)
                assert Backend(backend) and cell.established, (kind, stack, backend)
                assert 0 < cell.low <= 1 <= cell.high  # multiples of the realistic time
                assert cell.runs <= FITTED[kind][stack][3]


@pytest.mark.parametrize("backend", list(Backend))
def test_a_catalog_chip_of_each_backend_carries_it(backend: Backend) -> None:
    chips = [c.chip for c in CATALOG.chips.values() if c.chip.backend is backend]
    assert chips, backend
