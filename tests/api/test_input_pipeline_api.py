"""The `input_pipeline` workload, and a training step fed by one, through the ASGI app: worked
answers, and bad input a 422 naming its field (docs/formulas.md#input-pipeline)."""

import pytest

# 256 ImageNet JPEGs of 110 kB from local NVMe, 5 ms of decoding each on 8 workers, copied to
# the device as 224 x 224 x 3 uint8 images (150,528 bytes) from pinned memory
IMAGENET = {
    "kind": "input_pipeline",
    "sample_bytes": 110_000,
    "samples_per_step": 256,
    "storage": "local_nvme",
    "decode_s_per_sample": 5e-3,
    "workers": 8,
    "device_bytes_per_sample": 150_528,
    "pinned": True,
}
# Llama 3.1 8B, 8 sequences of 4,096 tokens per step on one H100
TRAINING = {"model": "llama-8b", "phase": "training", "batch": 8, "seq_len": 4096}


def post(client, path, workload, chip="a100", **top):
    return client.post(path, json={"chip": chip, "workload": workload, **top})


def test_imagenet_from_nvme_is_decode_bound(client):
    # storage: 28.16 MB / 6.5 GB/s = 4.3323 ms; 256 x ceil(110,000 / 4,096) = 6,912 reads /
    # 900,000 IOPS = 7.68 ms. decode: 256 x 5 ms / 8 = 160 ms. copy: 38.535 MB over the A100's
    # 32 GB/s each way, 1.2042 ms ideal, pinned at 75%: 1.6056 ms. Per step: 160 ms, decode
    body = post(client, "/expected-time", IMAGENET).json()
    assert body["expected_time_s"] == pytest.approx(0.16)
    assert body["realistic_time_s"] == pytest.approx(0.16)
    assert body["bound"] == "input"
    stages = body["input_pipeline"]
    assert stages["limit"] == "decode"
    assert stages["reads"] == 6912
    assert stages["storage_bandwidth_s"] == pytest.approx(4.3323e-3, rel=1e-4)
    assert stages["storage_iops_s"] == pytest.approx(7.68e-3)
    assert stages["decode_s"] == pytest.approx(0.16)
    assert stages["host_copy_s"] == pytest.approx(1.6056e-3, rel=1e-4)
    assert stages["device_bytes"] == 256 * 150_528
    assert any("a batch every 160 ms" in line for line in body["explanation"])
    assert body["workload"]["storage"] == "local_nvme"


def test_a_measured_step_says_what_limits_its_input(client):
    # 170 ms against the 160 ms the pipeline needs: input-bound, decode's advice first
    body = post(client, "/check", IMAGENET, measured_ms=170).json()
    assert body["bound"] == "input"
    assert body["advice"][0].startswith("Input-bound")
    assert any("more DataLoader workers" in line for line in body["advice"])
    assert any("prefetch_factor" in line for line in body["advice"])


def test_storage_figures_given_in_place_of_a_preset(client):
    # an object store read at 200 MB/s in total, 1,000 GETs/s of 1 MiB: 64 samples of 3 MB =
    # 192 MB / 200 MB/s = 0.96 s; 64 x ceil(3e6 / 1,048,576) = 192 reads / 1,000 = 0.192 s
    own = {"read_bytes_per_s": 2e8, "iops": 1000, "block_bytes": 2**20}
    workload = {"kind": "input_pipeline", "sample_bytes": 3e6, "samples_per_step": 64, **own}
    stages = post(client, "/expected-time", workload).json()["input_pipeline"]
    assert stages["reads"] == 192
    assert stages["storage_bandwidth_s"] == pytest.approx(0.96)
    assert stages["storage_iops_s"] == pytest.approx(0.192)
    assert stages["limit"] == "storage_bandwidth"
    # a preset with one figure overridden: S3's 5,500 GETs/s become 20; each 3 MB sample is
    # one 8 MiB range: 64 reads / 20 = 3.2 s, longer than 192 MB / 87.5 MB/s (one worker's
    # connection) = 2.1943 s
    s3 = {"kind": "input_pipeline", "sample_bytes": 3e6, "samples_per_step": 64}
    body = post(client, "/expected-time", {**s3, "storage": "object_store", "iops": 20}).json()
    assert body["input_pipeline"]["storage_iops_s"] == pytest.approx(3.2)
    assert body["input_pipeline"]["storage_bandwidth_s"] == pytest.approx(2.1943, rel=1e-4)
    assert body["input_pipeline"]["limit"] == "storage_iops"


def test_a_training_step_waits_for_a_slower_pipeline(client):
    own = post(client, "/expected-time", TRAINING, chip="h100").json()
    assert own["realistic_time_s"] < 8.0  # the step alone (3.46 s realistic)
    # each of the 8 sequences (the replica's batch: no samples_per_step given) decoded in 1 s
    # by one worker: 8 s per step, longer than the step: it takes 8 s, ideal and realistic
    slow = {"sample_bytes": 16_384, "storage": "local_nvme", "decode_s_per_sample": 1.0}
    fed = post(
        client, "/expected-time", {**TRAINING, "input_pipeline": {**slow, "pinned": True}}, "h100"
    ).json()
    assert fed["input_pipeline"]["samples_per_step"] == 8
    assert fed["expected_time_s"] == pytest.approx(8.0)
    assert fed["realistic_time_s"] == pytest.approx(8.0)
    assert fed["bound"] == "input"
    waits = "Input-bound: the pipeline needs 8 s"
    assert any(line.startswith(waits) for line in fed["explanation"])
    # MFU at the step the chip now takes: the model FLOPs over 8 s
    assert fed["training"]["mfu"] == pytest.approx(
        own["training"]["mfu"] * own["expected_time_s"] / 8.0
    )
    # 32 workers: 8 x 1 s / 32 = 0.25 s, within the step: the step is its own
    quick = {**slow, "workers": 32, "pinned": True}
    kept = post(client, "/expected-time", {**TRAINING, "input_pipeline": quick}, "h100").json()
    assert kept["realistic_time_s"] == pytest.approx(own["realistic_time_s"])
    assert kept["bound"] == own["bound"] == "compute"
    assert any("The pipeline keeps up" in line for line in kept["explanation"])


def test_a_replicas_share_of_the_batch_feeds_each_chip(client):
    # batch 8 over dp = 2 replicas: each chip's loader delivers 4 sequences per step
    def replicas(storage: str) -> dict[str, object]:
        pipeline = {"sample_bytes": 16_384, "storage": storage}
        return {**TRAINING, "dp": 2, "input_pipeline": pipeline}

    # an unknown preset is a 422 naming the field
    refused = post(client, "/expected-time", replicas("s3"), "h100")
    assert refused.status_code == 422
    assert "storage" in refused.text
    body = post(client, "/expected-time", replicas("object_store"), "h100").json()
    assert body["input_pipeline"]["samples_per_step"] == 4


def test_outside_training_the_pipeline_is_ignored_with_a_warning(client):
    decode = {"model": "llama-8b", "batch": 8}
    pipeline = {"sample_bytes": 16_384, "storage": "local_nvme"}
    body = post(client, "/expected-time", {**decode, "input_pipeline": pipeline}).json()
    assert body["input_pipeline"] is None
    assert any("input_pipeline" in line for line in body["warnings"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"workers": 0}, "workers"),
        ({"sample_bytes": 0}, "sample_bytes"),
        ({"decode_s_per_sample": -1}, "decode_s_per_sample"),
        ({"storage": None, "iops": 5}, "read_bytes_per_s"),
        ({"storage": "tape"}, "storage"),
        ({"samples_per_step": None}, "samples_per_step"),
    ],
)
def test_bad_input_is_a_422_naming_its_field(client, change, field):
    workload = {k: v for k, v in {**IMAGENET, **change}.items() if v is not None}
    response = post(client, "/expected-time", workload)
    assert response.status_code == 422
    assert field in response.text


def test_a_measured_pipeline_is_stored_and_read_back(client):
    body = {"chip": "a100", "workload": IMAGENET, "measured_ms": 170.0, "label": "loader"}
    response = client.post("/measurements", json=body)
    assert response.status_code == 201, response.text
    stored = response.json()
    assert stored["workload"]["kind"] == "input_pipeline"
    assert client.get(f"/measurements/{stored['id']}").status_code == 200


def test_what_if_changes_of_a_fed_step_are_fed_too(client):
    # the step waits 8 s for its pipeline (8 sequences x 1 s of decoding, one worker): a
    # change of the chip's own work (a dtype, recomputation) leaves it at 8 s, no speed-up;
    # a change of batch changes the samples read with it (batch x 2: 16 s for twice the work)
    slow = {"sample_bytes": 16_384, "storage": "local_nvme", "decode_s_per_sample": 1.0}
    workload = {**TRAINING, "input_pipeline": {**slow, "pinned": True}}
    body = post(client, "/expected-time", workload, "h100", what_if=True).json()
    assert body["what_if"]
    for change in body["what_if"]:
        assert change["realistic_time_s"] >= 8.0 * change["work_scale"] - 1e-9
        assert change["speedup"] == pytest.approx(1.0)
