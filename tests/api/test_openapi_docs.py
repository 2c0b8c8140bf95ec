"""/docs reads well: every route has a written summary and description, and each calculation's
GET parameters list what must be given first (app/schemas/queries.py, `reading_order`)."""

from fastapi.testclient import TestClient

CALCULATIONS = (
    "/expected-time",
    "/memory-fit",
    "/max-context",
    "/optimal-batch",
    "/check",
    "/scaling",
    "/compare",
)


def _operations(client: TestClient):
    spec = client.get("/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def test_every_route_has_a_written_summary_and_description(client: TestClient) -> None:
    for path, method, operation in _operations(client):
        # FastAPI's generated summary is the route's name in title case ("Expected Time Get")
        summary, description = operation.get("summary", ""), operation.get("description", "")
        assert summary and description, f"{method} {path}"
        assert summary != summary.title(), (method, path, summary)  # written as a sentence


def test_required_parameters_come_first(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in CALCULATIONS:
        parameters = spec["paths"][path]["get"]["parameters"]
        required = [p["required"] for p in parameters]
        assert required == sorted(required, reverse=True), path  # every True before any False
        names = [p["name"] for p in parameters]
        assert names[:2] == (["chips", "model"] if path == "/compare" else ["chip", "model"])
        # the workload's shape next (the attention kernel among it), the training-only fields
        # last
        assert names.index("phase") < names.index("catalog_version") < names.index("zero")
        assert names.index("flash_attention") < names.index("zero")
        assert names[-1] == "recompute"
    check = [p["name"] for p in spec["paths"]["/check"]["get"]["parameters"]]
    assert check[2:4] == ["measured_time_s", "measured_ms"]  # one of the two is needed
