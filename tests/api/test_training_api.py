"""Training, fine-tuning and scaling through the ASGI app (real catalogs)."""

import pytest

TRAIN = {"chip": "h100", "model": "llama-8b", "phase": "training", "seq_len": 2048}
LLAMA_8B_PARAMS = 8_030_261_248


def test_expected_time_of_a_data_parallel_training_run(client):
    # 64 H100s, 512 sequences of 2048 per step, ZeRO-1, 1e12 tokens at 40% MFU:
    # 6 N_mm + 6 L S H dh = 46,638,563,328 FLOPs per token (engine test); 1e12 tokens at
    # 64 * peak * 0.4 take 4.6639e22 / (64 * peak * 0.4) seconds
    params = {**TRAIN, "batch": 512, "dp": 64, "zero": 1, "train_tokens": 1e12, "mfu": 0.4}
    body = client.get("/expected-time", params=params).json()
    training = body["training"]
    peak = 989.4e12  # the H100 SXM5's dense bf16 matrix peak (datasheet 1978.8 with sparsity)
    assert body["peak_flops"] == peak
    assert training["chips"] == 64
    assert training["layout"] == {"tp": 1, "dp": 64, "pp": 1, "ep": 1, "cp": 1}
    assert training["tokens_per_step"] == 512 * 2048
    assert training["model_flops"] == pytest.approx(46_638_563_328 * 512 * 2048)
    assert training["realistic_mfu"] == pytest.approx(0.4)
    days = 46_638_563_328 * 1e12 / (64 * peak * 0.4) / 86400
    assert training["realistic_time_to_train_days"] == pytest.approx(days)
    assert training["communication"]["data_parallel_over_network"] is True  # 64 > 8 per node
    assert 0 < training["mfu"] <= 1
    assert any("MFU" in line for line in body["explanation"])
    assert any("days" in line for line in body["explanation"])


def test_post_takes_the_same_training_fields(client):
    params = {k: v for k, v in TRAIN.items() if k != "chip"}
    workload = {"kind": "transformer", **params, "batch": 64, "dp": 8, "zero": 3}
    posted = client.post("/expected-time", json={"chip": "h100", "workload": workload}).json()
    got = client.get("/expected-time", params={**TRAIN, "batch": 64, "dp": 8, "zero": 3}).json()
    assert posted == got


def test_memory_fit_of_zero3_and_of_qlora(client):
    # Llama 3.1 70B, ZeRO-3 over 8: AdamW's 12 bytes of 70,553,706,496 parameters / 8
    body = client.get(
        "/memory-fit", params={**TRAIN, "model": "llama-70b", "batch": 8, "dp": 8, "zero": 3}
    ).json()
    assert body["breakdown"]["optimizer"] == pytest.approx(12 * 70_553_706_496 / 8)
    assert body["breakdown"]["weights"] == pytest.approx(2 * 70_553_706_496 / 8)
    assert body["min_chips_layout"]["dp"] == 8
    assert body["min_chips"] == 8 * body["min_chips_layout"]["tp"] * body["min_chips_layout"]["pp"]
    # QLoRA of Llama 8B with recomputation fits one A100 at batch 1
    qlora = client.get(
        "/memory-fit",
        params={
            **TRAIN,
            "chip": "a100",
            "batch": 1,
            "lora_rank": 16,
            "qlora": True,
            "recompute": True,
        },
    ).json()
    assert qlora["fits"] is True
    assert qlora["breakdown"]["weights"] < 6e9  # NF4 blocks + bf16 embeddings
    # the largest model whose state fits: usable memory / 0.515875 bytes per parameter; the
    # catalog's A100 80GB has 81,920 MiB, of which 90% are usable
    assert qlora["available_bytes"] == 81_920 * 2**20
    usable = 0.9 * 81_920 * 2**20
    assert qlora["max_trainable_params"] == pytest.approx(usable / 0.515875)


def test_largest_trainable_model_on_one_80gb_chip(client):
    body = client.get("/memory-fit", params={**TRAIN, "batch": 1, "reserve_fraction": 0}).json()
    # 16 bytes per parameter: the catalog's 81,559 MiB (85,520,809,984 bytes) / 16 = 5.345e9
    assert body["available_bytes"] == 81_559 * 2**20
    assert body["max_trainable_params"] == pytest.approx(81_559 * 2**20 / 16)
    # with Llama 3.1 8B's activations at batch 1 x 2048 held fixed: 32 * 2048 * 4096 * 34
    # + 2048 * 128,256 * 4 = 10,177,478,656 bytes, leaving 75,343,331,328 / 16 = 4.709e9
    activations = 32 * 2048 * 4096 * 34 + 2048 * 128_256 * 4
    assert body["max_trainable_params_with_activations"] == pytest.approx(
        (81_559 * 2**20 - activations) / 16
    )
    assert any("largest model" in line for line in body["explanation"])


def test_uneven_pipeline_stages_are_accepted_and_explained(client):
    # 32 layers over 3 stages: 11, 11, 10
    body = client.get("/expected-time", params={**TRAIN, "batch": 3, "pp": 3}).json()
    assert body["training"]["layout"]["pp"] == 3
    assert any("stages of 11 or 10 of the 32 layers" in line for line in body["explanation"])


def test_context_parallel_training_step(client):
    # one sequence of 8192 tokens over cp = 4 (engine test: 5.369 ms of ring K/V traffic)
    params = {**TRAIN, "batch": 1, "seq_len": 8192, "cp": 4}
    body = client.get("/expected-time", params=params).json()
    assert body["training"]["chips"] == 4
    assert body["training"]["layout"]["cp"] == 4
    ring = 32 * 3 * 2 * 3 / 4 * 8192 * 1024 * 2
    link = body["training"]["communication"]["context_parallel_s"] * 450e9
    assert link == pytest.approx(ring, rel=0.01)  # the catalog H100's NVLink, about 450 GB/s
    assert any("cp=4" in line for line in body["explanation"])


def test_check_judges_a_training_step(client):
    # sharded over 8 chips with ZeRO-3 the step fits; at twice its ideal time it has room
    sharded = {**TRAIN, "batch": 8, "dp": 8, "zero": 3}
    expected = client.get("/expected-time", params=sharded).json()
    assert expected["fits"] is True
    measured = expected["expected_time_s"] * 2
    body = client.get("/check", params={**sharded, "measured_time_s": measured}).json()
    assert body["ratio"] == pytest.approx(2)
    assert body["verdict"] == "room_to_improve"
    assert body["training"]["layout"]["dp"] == 8


def test_a_training_step_that_cannot_fit_is_judged_so_first(client):
    # 8B parameters with Adam on one H100 (no sharding): 16 bytes each, 128 GB, over the
    # 80 GiB: whatever the time, the headline is that it cannot run as given
    one = {**TRAIN, "batch": 8}
    expected = client.get("/expected-time", params=one).json()
    assert expected["fits"] is False
    measured = expected["expected_time_s"] * 2
    body = client.get("/check", params={**one, "measured_time_s": measured}).json()
    assert body["ratio"] == pytest.approx(2)  # the time figures are still there
    assert body["verdict"] == "does_not_fit"
    assert body["advice"][0].startswith("Does not fit")
    assert not any("raise the batch" in line for line in body["advice"])


def test_scaling_curve_get_and_post(client):
    params = {
        "chip": "h100",
        "model": "llama-8b",
        "batch": 512,
        "zero": 1,
        "chip_counts": "8, 16,64,256",
        "serial_fraction": 0.01,
    }
    body = client.get("/scaling", params=params).json()
    points = body["points"]
    assert [p["chips"] for p in points] == [8, 16, 64, 256]
    assert points[0]["speedup"] == 1
    assert points[-1]["efficiency"] < 1
    assert body["amdahl_limit"] == pytest.approx(100)
    # Amdahl at 256 / 8 = 32x the chips: 1 / (0.01 + 0.99 / 32)
    assert points[-1]["law_speedup"] == pytest.approx(1 / (0.01 + 0.99 / 32))
    # the base is stated, and the law over one chip given beside: 1 / (0.01 + 0.99 / 256)
    assert body["base_chips"] == 8
    assert points[-1]["law_speedup_vs_one"] == pytest.approx(1 / (0.01 + 0.99 / 256))
    assert any("over one chip" in line for line in body["explanation"])
    assert body["workload"]["phase"] == "training"
    workload = {
        "kind": "transformer",
        "model": "llama-8b",
        "phase": "training",
        "batch": 512,
        "zero": 1,
    }
    posted = client.post(
        "/scaling",
        json={
            "chip": "h100",
            "workload": workload,
            "chip_counts": [8, 16, 64, 256],
            "serial_fraction": 0.01,
        },
    ).json()
    assert posted["points"] == points
    weak = client.get("/scaling", params={**params, "mode": "weak"}).json()
    assert [p["batch"] for p in weak["points"]] == [512, 1024, 4096, 16384]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/scaling", {"chip_counts": "16,8"}, "chip_counts"),
        ("/scaling", {"chip_counts": "0,8"}, "chip_counts"),
        ("/scaling", {"chip_counts": "eight"}, "chip_counts"),
        ("/scaling", {"chip_counts": "8,16", "batch": 7}, "batch"),
        ("/scaling", {"phase": "decode"}, "phase"),
        ("/scaling", {"serial_fraction": 2}, "serial_fraction"),
        ("/expected-time", {"phase": "training", "pp": 33}, "pp"),  # 32 layers
        ("/expected-time", {"phase": "training", "ep": 2}, "ep"),
        ("/expected-time", {"phase": "training", "cp": 0}, "cp"),
        ("/expected-time", {"phase": "training", "zero": 4}, "zero"),
        ("/expected-time", {"phase": "training", "mfu": 0}, "mfu"),
        ("/expected-time", {"phase": "training", "optimizer": "lion"}, "optimizer"),
        ("/expected-time", {"phase": "training", "lora_targets": "qkv"}, "lora_targets"),
        ("/expected-time", {"phase": "training", "qlora": True}, "qlora"),
        (
            "/memory-fit",
            {"phase": "training", "batch": 8, "dp": 2, "micro_batch": 3},
            "micro_batch",
        ),
        ("/optimal-batch", {"phase": "training", "batch": 8, "dp": 8}, "dp"),
    ],
)
def test_bad_training_input_is_a_422_naming_the_field(client, path, params, field):
    response = client.get(path, params={"chip": "h100", "model": "llama-8b", **params})
    assert response.status_code == 422, response.text
    locations = [error["loc"] for error in response.json()["detail"]]
    assert any(field in loc for loc in locations), locations


def test_training_fields_on_an_inference_phase_are_flagged(client):
    body = client.get("/expected-time", params={"chip": "h100", "model": "llama-8b", "dp": 4})
    assert body.status_code == 200
    assert any("dp" in warning for warning in body.json()["warnings"])


def test_a_posted_scaling_error_is_located_at_its_top_level_field(client):
    """chip_counts sits beside the workload in the body, not inside it."""
    response = client.post(
        "/scaling",
        json={
            "chip": "h100",
            "chip_counts": [8, 16, 24],
            "workload": {"kind": "transformer", "model": "llama-8b", "phase": "training",
                         "batch": 64, "tp": 16},
        },
    )  # fmt: skip
    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["detail"]] == [["body", "chip_counts"]]


def test_qlora_without_a_rank_is_refused_every_time(client):
    """The training options are built once per distinct value; a refusal is not kept."""
    params = {**TRAIN, "qlora": "true"}
    for _ in range(2):
        response = client.get("/expected-time", params=params)
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"][-1] == "qlora"
        assert "lora_rank" in response.json()["detail"][0]["msg"]
    assert client.get("/expected-time", params={**params, "lora_rank": 8}).status_code == 200


SCALE = {"chip": "h100", "model": "llama-8b", "batch": 256, "micro_batch": 1}


def _needs(client, zero, dp):
    """What /memory-fit says the training step needs per chip at `dp` chips."""
    params = {**SCALE, "phase": "training", "zero": zero, "dp": dp}
    return client.get("/memory-fit", params=params).json()["formatted"]["required"]


def test_a_scaling_curve_names_the_chip_counts_where_the_step_does_not_fit(client):
    # ZeRO-3 shards weights, gradients and AdamW state (16 B a parameter, 8.03e9 of them:
    # 128 GB in all) over the chips: one H100 (85.5 GB) cannot hold the step, two can
    body = client.get("/scaling", params={**SCALE, "zero": 3, "chip_counts": "1,2,4"}).json()
    assert [p["fits"] for p in body["points"]] == [False, True, True]
    unfit = [w for w in body["warnings"] if "does not fit" in w]
    assert unfit == [
        f"The training step does not fit at 1 chip: it needs {_needs(client, 3, 1)} per chip "
        "of 85.5 GB; the times there are for a configuration that cannot run as given (more "
        "chips, ZeRO, recomputation, a smaller batch or narrower dtypes would make it fit)."
    ]
    assert _needs(client, 3, 1) == "147 GB"


def test_a_scaling_curve_where_no_count_fits_says_so_for_each(client):
    # without ZeRO every chip holds all 128 GB of weights, gradients and optimizer state
    body = client.get("/scaling", params={**SCALE, "zero": 0, "chip_counts": "1,2,4"}).json()
    assert not any(p["fits"] for p in body["points"])
    needs = [_needs(client, 0, dp) for dp in (1, 2, 4)]
    assert (
        f"The training step does not fit at 1, 2 and 4 chips: it needs {needs[0]}, {needs[1]} "
        f"and {needs[2]} per chip of 85.5 GB; the times there are for a configuration that "
        "cannot run as given"
    ) in body["warnings"][0]


def test_a_scaling_curve_that_fits_everywhere_warns_of_nothing(client):
    params = {**SCALE, "zero": 3, "chip_counts": "8,16,32,64", "serial_fraction": 0.02}
    body = client.get("/scaling", params=params).json()
    assert all(p["fits"] for p in body["points"]) and body["warnings"] == []
