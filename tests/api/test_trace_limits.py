"""A profiler trace within bounds that the service states (issue 36, items 1, 2 and 5): its
body is never parsed for NUL characters (it is never stored), it is read and judged in a
process of its own within a time and a memory budget, answered 503 or 413 past them with how
to record a smaller trace; a trace that did not run on the chip is refused before its
analysis; only JSON is taken (415 otherwise), and the page's form only from the page."""

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.engine import Software
from app.http import request_text
from app.main import create_app
from app.services import trace_checks
from app.services.catalogs import load_catalog_files
from app.services.trace_devices import DeviceMismatch
from app.settings import Settings
from tests.traces.synthetic import many_small_events, repeated_gpu_trace

TRACES = Path(__file__).resolve().parent.parent / "traces"
JSON = {"content-type": "application/json"}
SMALLER = "record a smaller trace: fewer steps"


def _client(tmp_path: Path, **settings) -> TestClient:
    return TestClient(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'db'}", **settings)))


def _with_nul(recorded: bytes) -> bytes:
    """The trace with a NUL in its first operator's name (JSON's escape)."""
    return recorded.replace(b'"aten::cos"', b'"aten::cos\\u0000"', 1)


def test_a_nul_in_a_trace_is_never_parsed_for_it_and_the_trace_is_judged(client, monkeypatch):
    parsed: list[bytes] = []
    real = request_text._in_body

    def recording_body(*args: Any) -> Any:
        parsed.append(args[0][:10])
        return real(*args)

    monkeypatch.setattr(request_text, "_in_body", recording_body)
    body = _with_nul((TRACES / "gpu_cos.json").read_bytes())
    response = client.post("/check/trace?chip=h100", content=body, headers=JSON)
    assert response.status_code == 200, response.text
    assert parsed == []  # a trace is never stored: its body is not searched for NULs
    names = {op["name"] for op in response.json()["not_modelled"]} | {
        op["name"] for op in response.json()["ops"]
    }
    assert "aten::cos\x00" in names  # judged as sent (an operator the engine does not know)
    # a body that is stored is still checked, in a worker thread, off the event loop
    threads: list[int] = []

    def recording_thread(*args: Any) -> Any:
        threads.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(request_text, "_in_body", recording_thread)
    stored = client.post("/measurements", content=b'{"label": "\\u0000"}', headers=JSON)
    assert stored.status_code == 422 and stored.json()["detail"][0]["type"] == "string_nul"
    assert threads and threads[0] != threading.get_ident()


def test_a_trace_past_its_time_budget_is_a_503_that_says_how_to_record_a_smaller_one(tmp_path):
    client = _client(tmp_path, trace_budget_s=0.05)
    body = repeated_gpu_trace(8 * 2**20)  # about 0.3 s of analysis: past 0.05 s
    response = client.post("/check/trace?chip=h100", content=body, headers=JSON)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    detail = response.json()["detail"]
    assert detail["type"] == "over_budget"
    assert "the trace's analysis took longer than its 0.05 s budget" in detail["message"]
    assert SMALLER in detail["message"] and "schedule" in detail["message"]


def test_a_trace_past_its_memory_bound_is_a_413_that_says_how_to_record_a_smaller_one(tmp_path):
    # 64 MiB over the process's start: 250,000 cpu_op events, 27 MB received and as much
    # decoded, and the 250,000 events kept of it (about 100 bytes each), do not fit. The time
    # budget is its largest, so that on a machine busy with other work the memory bound, not
    # the clock, stops the analysis
    client = _client(tmp_path, trace_memory_bytes=64 * 2**20, trace_budget_s=600)
    body = many_small_events(250_000)
    response = client.post("/check/trace?chip=h100", content=body, headers=JSON)
    assert response.status_code == 413, response.text
    message = response.json()["detail"]["message"]
    assert "the trace's analysis needs more than its 64 MiB of memory" in message
    assert SMALLER in message
    # the next trace is judged: the process that ran out of memory was its own
    small = (TRACES / "gpu_cos.json").read_bytes()
    assert client.post("/check/trace?chip=h100", content=small, headers=JSON).status_code == 200


def test_the_device_is_checked_before_the_analysis(monkeypatch):
    def analysed(*args, **kwargs):
        raise AssertionError("analysed before the device was checked")

    monkeypatch.setattr(trace_checks, "analyse", analysed)
    catalog, _ = load_catalog_files(Settings(database_url="sqlite://"))
    body = (TRACES / "gpu_cos.json").read_bytes()  # an H100's run
    with pytest.raises(DeviceMismatch, match="ran on NVIDIA H100 80GB HBM3"):
        trace_checks.check(body, catalog.resolve("a100"), catalog.version, Software.EAGER, False)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_trace_not_sent_as_json_is_a_415(client, content_type):
    # a web page can make a browser post text/plain or a form to any site without asking;
    # application/json it cannot (CORS), so another site cannot spend the service's CPU
    headers = {"content-type": content_type} if content_type else {}
    body = (TRACES / "gpu_cos.json").read_bytes()
    response = client.post("/check/trace?chip=h100", content=body, headers=headers)
    assert response.status_code == 415
    assert "application/json" in response.json()["detail"]["message"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"origin": "https://evil.example", "sec-fetch-site": "cross-site"}],
)
def test_the_trace_form_is_taken_only_from_the_page(client, headers):
    files = {"trace": ("t.json", (TRACES / "gpu_cos.json").read_bytes(), "application/json")}
    form = {"chip": "h100", "stack": "eager"}
    response = client.post("/trace", data=form, files=files, headers=headers)
    assert response.status_code == 403
    assert "sent from this site&#39;s own page" in response.text
    own = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}
    assert client.post("/trace", data=form, files=files, headers=own).status_code == 200


def test_the_limits_are_in_the_openapi_schema(client):
    operation = client.get("/openapi.json").json()["paths"]["/check/trace"]["post"]
    assert {"413", "415", "503"} <= set(operation["responses"])
    assert "ROOFCHECK_TRACE_BUDGET_S" in operation["responses"]["503"]["description"]
    assert json.dumps(operation).count("ROOFCHECK_TRACE_MEMORY_BYTES") == 1
