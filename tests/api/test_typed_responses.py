"""Every JSON route publishes a response model in the OpenAPI schema (no untyped objects), and
the catalog answers validate against theirs."""

import pytest

from app.engine import Dtype
from app.schemas.catalog_bodies import ChipDetail, ChipList, ModelDetail, ModelList


def _success_schemas(client):
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith("2") and status != "204":  # 204: no body to type
                    yield f"{method.upper()} {path} {status}", response


def test_every_success_response_is_a_named_model(client):
    untyped = [
        name
        for name, response in _success_schemas(client)
        if "$ref" not in response["content"]["application/json"]["schema"]
    ]
    assert not untyped, untyped


@pytest.mark.parametrize(
    ("path", "model"),
    [
        ("/chips", "ChipList"),
        ("/chips/{chip}", "ChipDetail"),
        ("/models", "ModelList"),
        ("/models/{model}", "ModelDetail"),
        ("/catalog/versions", "CatalogVersions"),
    ],
)
def test_catalog_routes_name_their_models(client, path, model):
    spec = client.get("/openapi.json").json()
    schema = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
    assert schema["schema"] == {"$ref": f"#/components/schemas/{model}"}


def test_the_empirical_route_names_its_model(client):
    spec = client.get("/openapi.json").json()
    created = spec["paths"]["/chips/{chip}/empirical"]["post"]["responses"]["201"]
    assert created["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/StoredProfile"
    }


def test_the_catalog_answers_are_what_their_models_say(client):
    chips = ChipList.model_validate(client.get("/chips").json())
    a100 = ChipDetail.model_validate(client.get("/chips/a100").json())
    assert a100.id == "a100-sxm4-80gb" and a100.id in {c.id for c in chips.chips}
    # bf16 ridge: 312e12 FLOP/s over 2.039e12 B/s = 153.0 FLOP/B (A100 SXM4 80GB datasheet)
    assert a100.ridge_intensity_flops_per_byte[Dtype.BF16] == pytest.approx(312e12 / 2.039e12)
    models = ModelList.model_validate(client.get("/models").json())
    llama = ModelDetail.model_validate(client.get("/models/llama-8b").json())
    assert llama.id in {m.id for m in models.models}
    # Llama 3.1 8B: 32 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes = 131,072 B
    assert llama.kv_bytes_per_token == 131_072
    assert llama.config["num_hidden_layers"] == 32


def test_an_encoder_lists_no_kv_cache(client):
    # BERT keeps no KV cache: 0 bytes per token (a decoder of its shape would hold
    # 2 x 12 layers x 12 heads x 64 dims x 2 bytes = 36,864)
    assert client.get("/models/bert-base").json()["kv_bytes_per_token"] == 0
