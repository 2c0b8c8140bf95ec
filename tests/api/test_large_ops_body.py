"""An operator list longer than an ordinary body (64 KiB): `roofcheck measure` on a Llama 3 8B
decode step (32 layers, some 450 operators, 121 kB) was refused with a 413 on an H200. Such a
body is taken up to ROOFCHECK_MAX_OPS_BYTES and validated in a worker thread, against the same
model, with the same answers and the same errors as an ordinary one."""

import json

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

ORDINARY = 65_536


def matmuls(n: int) -> list[dict[str, object]]:
    """n chained (1, 4096) x (4096, 4096) bf16 products, each reading the one before."""

    def tensor(name: str, shape: list[int]) -> dict[str, object]:
        return {"shape": shape, "dtype": "bf16", "id": name, "device": "cuda:0"}

    return [
        {
            "name": "aten::mm",
            "inputs": [tensor(f"x{i}", [1, 4096]), tensor(f"w{i}", [4096, 4096])],
            "outputs": [tensor(f"x{i + 1}", [1, 4096])],
        }
        for i in range(n)
    ]


def check(client: TestClient, ops: list[dict[str, object]], *, indent: int | None = None):
    body = {"chip": "h200", "workload": {"kind": "ops", "ops": ops}, "measured_time_s": 0.02}
    data = json.dumps(body, indent=indent).encode()
    response = client.post("/check", content=data, headers={"content-type": "application/json"})
    return len(data), response


def test_a_models_step_of_operators_is_judged(client):
    # 500 products of a 4096 x 4096 bf16 weight: each 2 * 4096^2 = 33.6 MFLOP and 33.6 MB of
    # weight; 500 of them 16.8 GB, 3.5 ms at the H200's 4.8 TB/s
    size, response = check(client, matmuls(500))
    assert size > ORDINARY and response.status_code == 200, response.text
    answer = response.json()
    assert answer["flops"] == 500 * 2 * 4096**2
    assert answer["expected_time_s"] == pytest.approx(500 * 4096**2 * 2 / 4.8e12, rel=1e-2)


def test_a_body_over_an_ordinary_cap_has_an_ordinary_bodys_answer(client):
    # the same 100 operators compact (validated by FastAPI) and indented past 64 KiB (in a
    # worker thread): one answer
    compact_size, compact = check(client, matmuls(100))
    padded_size, padded = check(client, matmuls(100), indent=40)
    assert compact_size < ORDINARY < padded_size
    assert compact.status_code == padded.status_code == 200
    assert compact.json() == padded.json()


def test_a_large_bodys_errors_are_an_ordinary_bodys(client):
    ops = matmuls(400)
    ops[3]["inputs"][0]["dtype"] = "bf17"  # type: ignore[index]
    size, response = check(client, ops)
    assert size > ORDINARY and response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "workload", "ops", "ops", "3", "inputs", "0", "dtype"]
    small = matmuls(4)
    small[3]["inputs"][0]["dtype"] = "bf17"  # type: ignore[index]
    assert check(client, small)[1].json()["detail"] == [error]
    broken = client.post(
        "/check",
        content=b"{" + b" " * ORDINARY + b"]",
        headers={"content-type": "application/json"},
    )
    assert broken.status_code == 422 and broken.json()["detail"][0]["type"] == "json_invalid"
    text = client.post(
        "/check", content=b" " * (ORDINARY + 1), headers={"content-type": "text/plain"}
    )
    assert text.status_code == 415


def test_an_operator_list_over_its_own_cap_is_refused_before_it_is_read(tmp_path):
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}", max_ops_bytes=100_000)
    with TestClient(create_app(settings)) as small:
        size, response = check(small, matmuls(500))
    assert size > 100_000 and response.status_code == 413
    assert "100000 bytes" in response.json()["detail"]["message"]
