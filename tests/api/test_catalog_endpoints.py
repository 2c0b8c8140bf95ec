"""GET /health, /chips, /models, /catalog/versions."""

import pytest

# API.md: these names must resolve (case-insensitive), each to the catalog entry named here
# (the ids and aliases of chip_catalog.json and app/catalog/models.json)
REQUIRED_CHIP_NAMES = {
    "a100": "a100-sxm4-80gb",
    "a100-40gb": "a100-sxm4-40gb",
    "a100-pcie": "a100-pcie-80gb",
    "h100": "h100-sxm5-80gb",
    "h100-pcie": "h100-pcie-80gb",
    "h200": "h200-sxm-141gb",
    "b200": "b200",
    "l4": "l4",
    "l40s": "l40s",
    "t4": "t4",
    "v100": "v100-sxm2-32gb",
    "rtx-4090": "rtx-4090",
    "mi300x": "mi300x",
    "mi250x": "mi250x",
    "tpu-v5e": "tpu-v5e",
    "tpu-v5p": "tpu-v5p",
}
REQUIRED_MODEL_NAMES = {
    "llama-8b": "llama-3.1-8b",
    "llama-70b": "llama-3.1-70b",
    "llama-405b": "llama-3.1-405b",
    "llama2-7b": "llama-2-7b",
    "llama2-13b": "llama-2-13b",
    "llama2-70b": "llama-2-70b",
    "mistral-7b": "mistral-7b-v0.1",
    "mixtral-8x7b": "mixtral-8x7b",
    "qwen2.5-7b": "qwen2.5-7b",
    "qwen2.5-72b": "qwen2.5-72b",
    "gemma2-9b": "gemma-2-9b",
    "gpt2": "gpt2",
    "gpt3-175b": "gpt3-175b",
    "bert-base": "bert-base-uncased",
    "deepseek-v3": "deepseek-v3",
}


def test_health_names_the_catalog_version(client):
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert body["catalog_version"] == client.get("/catalog/versions").json()["current"]


@pytest.mark.parametrize(("name", "chip_id"), REQUIRED_CHIP_NAMES.items())
def test_required_chip_aliases_resolve(client, name, chip_id):
    for spelling in (name, name.upper()):
        response = client.get(f"/chips/{spelling}")
        assert response.status_code == 200, response.text
        assert response.json()["id"] == chip_id


def test_a100_alias_is_the_sxm4_80gb_part_with_sourced_figures(client):
    chip = client.get("/chips/a100").json()
    assert chip["id"] == "a100-sxm4-80gb"
    bandwidth = chip["memory"]["bandwidth_bytes_per_s"]
    assert bandwidth["value"] == 2.039e12
    assert bandwidth["source"]["url"].startswith("http")
    assert chip["peak_flops_per_s"]["matrix"]["bf16"]["value"] == 312e12
    # ridge = 312e12 / 2.039e12 = 153.0 FLOP/B
    assert chip["ridge_intensity_flops_per_byte"]["bf16"] == pytest.approx(153.0, rel=1e-3)


def test_every_chip_figure_carries_a_source_url(client):
    body = client.get("/chips").json()
    assert len(body["chips"]) >= 25

    def figures(node):
        if isinstance(node, dict):
            if "verify" in node:
                yield node
            else:
                for value in node.values():
                    yield from figures(value)

    for chip in body["chips"]:
        found = list(figures(chip))
        assert len(found) >= 5, chip["id"]
        for figure in found:
            assert figure["source"]["url"].startswith("http"), chip["id"]
            assert figure["verify"] in {"V", "S", "U", "D"}


def test_chip_shows_its_compute_units_and_fp8_fraction_with_sources(client):
    chip = client.get("/chips/h100-sxm5-80gb").json()
    assert chip["compute_units"]["value"] == 132
    assert chip["compute_units"]["source"]["url"].startswith("https://")
    fp8 = chip["sustained"]["matrix_by_dtype"]["fp8"]
    assert fp8["value"] == 0.709  # MAMF fp8 1402.6 / 1978.9 TFLOP/s
    assert fp8["source"]["key"] == "mleng-mamf"
    bare = client.get("/chips/t4").json()
    assert bare["compute_units"] is None and bare["sustained"]["matrix_by_dtype"] == {}


def test_unknown_chip_is_a_404_with_suggestions(client):
    response = client.get("/chips/h10")
    assert response.status_code == 404
    detail = response.json()["detail"]
    assert detail["message"] == "unknown chip 'h10'"
    assert any(s.startswith("h100") for s in detail["suggestions"])


@pytest.mark.parametrize(("name", "model_id"), REQUIRED_MODEL_NAMES.items())
def test_required_model_aliases_resolve(client, name, model_id):
    for spelling in (name, name.upper()):
        response = client.get(f"/models/{spelling}")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["id"] == model_id
        assert "model_type" in body["config"]


def test_models_list_derived_counts(client):
    models = {m["id"]: m for m in client.get("/models").json()["models"]}
    llama = models["llama-3.1-8b"]
    assert llama["params_total"] == 8_030_261_248
    assert llama["kv_bytes_per_token"] == 131_072  # 2 * 32 layers * 8 heads * 128 * 2 bytes
    deepseek = models["deepseek-v3"]
    # MLA caches (512 + 64) elements per layer: 61 * 576 * 2 bytes = 70,272
    assert deepseek["kv_bytes_per_token"] == 70_272
    assert deepseek["params_active"] < deepseek["params_total"] / 10


def test_unknown_model_is_a_404_with_suggestions(client):
    detail = client.get("/models/llama-8").json()["detail"]
    assert "llama-3.1-8b" in detail["suggestions"]


def test_catalog_versions_list_hash_and_date(client):
    body = client.get("/catalog/versions").json()
    (current,) = [v for v in body["versions"] if v["current"]]
    assert len(current["content_sha256"]) == 64
    assert current["version"] == body["current"]
    chips = client.get("/chips", params={"catalog_version": body["current"]})
    assert chips.status_code == 200
    missing = client.get("/chips", params={"catalog_version": "1999.01.01"})
    assert missing.status_code == 404
    assert body["current"] in missing.json()["detail"]["suggestions"]


def test_openapi_describes_every_endpoint(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/health",
        "/chips",
        "/chips/{chip}",
        "/models",
        "/models/{model}",
        "/catalog/versions",
    ):
        assert "get" in paths[path]
    for path in ("/expected-time", "/memory-fit", "/optimal-batch", "/check"):
        assert {"get", "post"} <= set(paths[path])
        names = {p["name"] for p in paths[path]["get"]["parameters"]}
        assert {
            "chip",
            "model",
            "phase",
            "batch",
            "seq_len",
            "gen_len",
            "dtype",
            "weight_dtype",
            "kv_dtype",
            "tp",
            "catalog_version",
        } <= names
