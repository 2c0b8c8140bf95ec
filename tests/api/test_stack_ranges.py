"""A stack without a handful of its own published runs says so in `assumptions`, and its
range is widened to the stack spread instead of borrowing another stack's silently."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine.published_runs import FITTED, ON_BACKEND, STACK_SPREAD

DECODE = {"chip": "h100", "model": "llama-8b"}  # batch 1 after 2048 tokens: memory-bound
LAUNCH_LOW, LAUNCH_HIGH = 0.9 / 2.31, 6.7 / 2.31  # the fixed costs' spread (realism.py)


def _decode(client, stack: str) -> dict[str, Any]:
    answer: dict[str, Any] = client.get("/expected-time", params={**DECODE, "stack": stack}).json()
    return answer


def test_a_stack_without_prefill_runs_borrows_typicals_median_and_widens_its_range(client):
    # vLLM has 2 published prefill runs (dstack's, on MI300X): typical's median (64 runs, 12
    # sources), the range at STACK_SPREAD of the realistic time where that is wider than
    # typical's own. Llama 3.1 8B, one prompt of 2,048 tokens on the H100: busy 41.02 ms (its
    # kernels one after another, the flash kernel's at ATTENTION_PACE 1.4066), fixed costs
    # 1,057 us (292 graph nodes x 0.58 us + 291 boundaries x 3.0 us + one 15 us graph launch);
    # realistic = 41.02 ms x 1.6796 + 1.057 ms = 69.95 ms;
    # high = 69.95 ms x max(typical's 1.3311, the spread's 1.5138) = 105.9 ms, wider than
    #        the fixed costs at the high end of their own spread (68.90 + 3.07 = 71.96 ms);
    # low = 69.95 ms x min(0.7514, the spread's 0.7592) = 52.56 ms, above the 32.18 ms ideal
    params = {**DECODE, "phase": "prefill", "seq_len": 2048}
    vllm = client.get("/expected-time", params={**params, "stack": "vllm"}).json()
    typical = client.get("/expected-time", params={**params, "stack": "typical"}).json()
    median, low, high, runs, sources = FITTED["prefill"]["typical"]
    spread_low, spread_high = STACK_SPREAD
    realistic = vllm["realistic_time_s"]
    assert realistic == typical["realistic_time_s"]
    assert realistic == pytest.approx(69.95e-3, rel=2e-3)
    assert vllm["published_stack"] == "typical"
    assert vllm["realistic_range_s"][1] == pytest.approx(realistic * max(high, spread_high))
    assert vllm["realistic_range_s"][1] == pytest.approx(105.9e-3, rel=2e-3)
    assert vllm["realistic_range_s"][0] == pytest.approx(realistic * min(low, spread_low))
    assert vllm["realistic_range_s"][0] == pytest.approx(52.56e-3, rel=2e-3)
    assert vllm["realistic_range_s"][0] > vllm["expected_time_s"]
    assert typical["realistic_range_s"] == pytest.approx([realistic * low, realistic * high])
    line = next(a for a in vllm["assumptions"] if "published prefill runs" in a)
    assert line == (
        f"fewer than 3 published prefill runs on vllm: the median is typical tuned software's, "
        f"{median:.2f}x the sustained-kernel time ({runs} runs, {sources} sources); the range "
        f"is widened to {min(low, spread_low):.2f}-{max(high, spread_high):.2f}x the "
        "realistic time, how far runs of one stack fall from what other stacks' runs predict"
    )


def _eager_prefill(client) -> dict[str, Any]:
    params = {**DECODE, "phase": "prefill", "seq_len": 2048, "stack": "eager"}
    answer: dict[str, Any] = client.get("/expected-time", params=params).json()
    return answer


def test_a_stack_with_too_few_runs_keeps_its_median_and_says_it_is_thin(client):
    # eager PyTorch's prefill runs are 5 from 1 source: its own median, a widened range
    eager = _eager_prefill(client)
    assert eager["published_stack"] == "eager"
    assert any(
        "stack eager: published prefill runs take" in a
        and "too few to stand for the stack (fewer than 5 runs or 2 sources)" in a
        for a in eager["assumptions"]
    )


def test_an_established_stack_says_nothing_of_widening(client):
    # Megatron's training runs: 26 by 5 sources, all on NVIDIA chips (its own entry on
    # nvidia, established); typical decode: 53 by 10
    params = {"chip": "h100", "model": "llama-8b", "phase": "training", "seq_len": 2048}
    megatron = client.get("/expected-time", params={**params, "stack": "megatron"}).json()
    typical = _decode(client, "typical")
    for body in (megatron, typical):
        assert not any("widened" in a for a in body["assumptions"])
    assert any(
        a.startswith("stack megatron on nvidia chips: its published training runs on nvidia's")
        for a in megatron["assumptions"]
    )


def test_a_stack_with_established_runs_on_the_chips_backend_uses_them(client):
    # llama.cpp prompt processing: its established runs on Apple's Metal and on NVIDIA's CUDA
    # each set its ratio on chips of that backend (ON_BACKEND), and the assumption says
    # which; an AMD chip, without a handful of them, takes the stack's over every backend
    params = {"model": "llama-2-7b", "phase": "prefill", "seq_len": 512, "stack": "llama.cpp"}
    answers = {
        chip: client.get("/expected-time", params={**params, "chip": chip}).json()
        for chip in ("apple-m2-ultra", "rtx-4090", "mi300x")
    }
    for chip, backend in (("apple-m2-ultra", "apple"), ("rtx-4090", "nvidia")):
        answer = answers[chip]
        median, _, _, runs, sources = ON_BACKEND["prefill"]["llama.cpp"][backend]
        assert (answer["published_stack"], answer["published_backend"]) == ("llama.cpp", backend)
        assert answer["published_runs"] == runs
        assert (
            f"stack llama.cpp on {backend} chips: its published prefill runs on {backend}'s "
            f"backend take {median:.2f}x the sustained-kernel time ({runs} runs, {sources} "
            "sources)"
        ) in "\n".join(answer["assumptions"])
        # the median scales the sustained kernels: realistic = busy x median + fixed costs
        busy, fixed = answer["sustained_time_s"], answer["overhead_time_s"]
        assert answer["realistic_time_s"] == pytest.approx(busy * median + fixed)
    mi300x = answers["mi300x"]
    assert mi300x["published_backend"] is None
    assert mi300x["published_runs"] == FITTED["prefill"]["llama.cpp"][3]
    assert any(
        a.startswith("stack llama.cpp: published prefill runs") for a in mi300x["assumptions"]
    )


def test_a_dense_model_on_sglang_is_not_priced_by_sglangs_mixtures_of_experts(client):
    # SGLang's published decode steps of dense models (Qwen3-8B's generations on an H20, as
    # runs of their decode steps, and two of its steps on an H100) price a dense model's SGLang
    # decode step; its runs of fine-grained experts (DeepSeek-R1, gpt-oss) price those models'
    # steps alone. Pooled, Llama 3.1 8B's decode step on SGLang was 7x its sustained kernels
    sglang = _decode(client, "sglang")
    dense = ON_BACKEND["decode"]["sglang"]["nvidia"]
    fine = ON_BACKEND["decode-fine-moe"]["sglang"]["nvidia"]
    assert (sglang["published_stack"], sglang["published_backend"]) == ("sglang", "nvidia")
    assert sglang["published_runs"] == dense[3]
    busy, fixed = sglang["sustained_time_s"], sglang["overhead_time_s"]
    assert sglang["realistic_time_s"] == pytest.approx(busy * dense[0] + fixed)
    assert dense[0] != fine[0]
    deepseek = client.get(
        "/expected-time",
        params={"chip": "h200", "model": "deepseek-v3", "tp": 8, "batch": 8, "stack": "sglang"},
    ).json()
    median, _, _, runs, sources = fine
    assert (deepseek["published_stack"], deepseek["published_backend"]) == ("sglang", "nvidia")
    assert deepseek["published_runs"] == runs
    assert (
        f"stack sglang on nvidia chips: its published decode runs of fine-grained experts on "
        f"nvidia's backend take {median:.2f}x the sustained-kernel time ({runs} runs, "
        f"{sources} sources)"
    ) in " ".join(deepseek["assumptions"])


def test_fine_grained_experts_without_runs_of_their_own_borrow_every_models(client):
    # no prefill of fine-grained experts was published: every model's prefill runs stand in,
    # widened to the stack spread around their median, and the answer says so
    qwen = client.get(
        "/expected-time",
        params={"chip": "h100", "model": "qwen3-30b-a3b", "phase": "prefill", "seq_len": 2048},
    ).json()
    median, _, high, _, _ = FITTED["prefill"]["typical"]
    busy, fixed = qwen["sustained_time_s"], qwen["overhead_time_s"]
    assert "prefill-fine-moe" not in FITTED
    realistic = qwen["realistic_time_s"]
    assert realistic == pytest.approx(busy * median + fixed, rel=1e-6)
    assert qwen["realistic_range_s"][1] == pytest.approx(
        realistic * max(high, STACK_SPREAD[1]), rel=1e-6
    )
    assert (
        "no published prefill runs of fine-grained experts: every model's prefill runs stand "
        "in, their range widened as another stack's"
    ) in qwen["assumptions"]


def test_a_stack_from_one_source_says_so_in_the_singular(client):
    # eager PyTorch's own prefill runs: 5, all from one of Hugging Face Optimum's benchmarks
    median, _, _, runs, sources = FITTED["prefill"]["eager"]
    assert (runs, sources) == (5, 1)
    eager = _eager_prefill(client)
    line = next(a for a in eager["assumptions"] if "published prefill" in a)
    assert f"take {median:.2f}x the sustained-kernel time (5 runs, 1 source);" in line
