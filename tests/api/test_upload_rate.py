"""A request body has a grace (ROOFCHECK_BODY_TIMEOUT_S) and then a minimum rate
(ROOFCHECK_BODY_MIN_RATE) to arrive (issue 36, item 5): a big body on a slow but steady link
arrives, however long it takes, and a client slower than the rate gets 408, its connection
closed. Sent by hand on a socket, at a chosen pace, to the app served over loopback."""

import json
import socket
import time
from pathlib import Path

from app.main import create_app
from app.settings import Settings
from tests.conftest import serve

GRACE_S, RATE = 0.3, 20_000  # bytes/s
CHECK = {"chip": "a100", "workload": {"kind": "matmul", "m": 64, "n": 64, "k": 64}}


def _post_slowly(base: str, body: bytes, chunk: int, every_s: float) -> bytes:
    """POST /expected-time with `body` sent `chunk` bytes at a time, one chunk every `every_s`; the
    whole answer, up to the server's closing the connection."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (
            "POST /expected-time HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        sock.sendall(head.encode())
        try:
            for start in range(0, len(body), chunk):
                sock.sendall(body[start : start + chunk])
                time.sleep(every_s)
        except OSError:  # the server answered 408 and closed the connection
            pass
        answer = b""
        while data := sock.recv(65536):
            answer += data
    return answer


def _check_posted_slowly(tmp_path: Path, chunk: int, every_s: float) -> tuple[bytes, float]:
    """A 30,000-byte /check body posted `chunk` bytes every `every_s` s to a service with the
    test's grace and rate: the raw answer, and the seconds it took."""
    body = json.dumps(CHECK).encode().ljust(30_000)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'db'}", body_timeout_s=GRACE_S, body_min_rate=RATE
    )
    with serve(create_app(settings)) as base:
        started = time.monotonic()
        answer = _post_slowly(base, body, chunk, every_s)
    return answer, time.monotonic() - started


def test_a_steady_body_arrives_however_long_it_takes_past_the_grace(tmp_path: Path):
    # 30,000 bytes, 5,000 every 0.2 s (25 kB/s): about 1.2 s, four times the grace, yet ahead
    # of the deadline at each chunk: 0.3 s + received / 20,000 B/s
    answer, took = _check_posted_slowly(tmp_path, 5_000, 0.2)
    assert took > 4 * GRACE_S
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]


def test_a_body_slower_than_the_rate_is_a_408(tmp_path: Path):
    # 1,000 bytes every 0.2 s (5 kB/s): after n chunks the deadline is 0.3 + 0.05 n s, and
    # the next chunk comes at 0.2 n s: late from the second on
    answer, took = _check_posted_slowly(tmp_path, 1_000, 0.2)
    assert took < 3
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"under 20000 bytes/s after a grace of 0.3 s" in answer
    assert b"connection: close" in answer.lower()
