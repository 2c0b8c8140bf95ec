"""/health answers within a second while the service receives and judges the largest trace it
takes, and one with a NUL in it (issue 36, items 1 and 2: a 32 MiB trace with one \\u0000 once
held the event loop for 7 s, and a 30 MB trace's analysis for 3 s). The service runs as
deployed, `uvicorn app.main:app` in a process of its own; /health is asked every 50 ms from
the upload's start until its answer."""

import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.faults.server import serve
from tests.traces.synthetic import repeated_gpu_trace

BIG = repeated_gpu_trace(31 * 2**20)  # just under the 32 MiB cap: 110,000 events
BOUND_S = 1.0  # the bound; a quiet machine answers in milliseconds


@pytest.mark.parametrize(
    "body",
    [BIG, BIG.replace(b'"aten::cos"', b'"aten::cos\\u0000"', 1)],
    ids=["large", "nul"],
)
def test_health_answers_within_a_second_during_an_upload(tmp_path: Path, body: bytes):
    with serve(f"sqlite:///{tmp_path / 'roofcheck.db'}") as (base, _):
        statuses: list[int] = []
        done = threading.Event()

        def upload() -> None:
            headers = {"content-type": "application/json"}
            url = base + "/check/trace?chip=h100"
            try:
                statuses.append(
                    httpx.post(url, content=body, headers=headers, timeout=60).status_code
                )
            finally:
                done.set()

        uploading = threading.Thread(target=upload)
        latencies: list[float] = []
        with httpx.Client(base_url=base, timeout=10) as probe:
            uploading.start()
            while not done.is_set():
                started = time.perf_counter()
                assert probe.get("/health").status_code == 200
                latencies.append(time.perf_counter() - started)
                time.sleep(0.05)
        uploading.join()
    assert statuses == [200]
    assert len(latencies) >= 5  # asked all along the upload and the analysis
    assert max(latencies) < BOUND_S, sorted(latencies)[-5:]
