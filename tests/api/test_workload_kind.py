"""A workload without `kind` is a transformer, as the schema's default says (issue 36, item 5):
POST /check and POST /measurements answer it as the same workload with `kind` given."""

import pytest

WITHOUT_KIND = {"model": "llama-8b", "batch": 8}
WITH_KIND = {"kind": "transformer", **WITHOUT_KIND}


def test_the_schema_says_a_workload_defaults_to_a_transformer(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    kind = schemas["TransformerWorkload"]["properties"]["kind"]
    assert kind["default"] == "transformer"
    assert "kind" not in schemas["TransformerWorkload"].get("required", [])


@pytest.mark.parametrize("path", ["/check", "/measurements"])
def test_a_workload_without_kind_is_a_transformer(client, path):
    body = {"chip": "a100", "measured_ms": 30}
    given = client.post(path, json={**body, "workload": WITH_KIND})
    defaulted = client.post(path, json={**body, "workload": WITHOUT_KIND})
    assert given.status_code == defaulted.status_code == (201 if path != "/check" else 200)
    assert defaulted.json()["workload"] == given.json()["workload"]
    assert defaulted.json()["workload"]["kind"] == "transformer"
    assert defaulted.json()["ratio"] == given.json()["ratio"]


def test_a_kernel_still_names_its_kind(client):
    # matmul's fields without `kind` are no transformer: a 422 naming what a transformer lacks
    response = client.post(
        "/check", json={"chip": "a100", "measured_ms": 1, "workload": {"m": 8, "n": 8, "k": 8}}
    )
    assert response.status_code == 422
    assert ["body", "workload", "transformer", "m"] in [e["loc"] for e in response.json()["detail"]]
