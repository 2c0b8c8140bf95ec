"""The service as a real process: `uvicorn app.main:app` on a loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve(database_url: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Run the service on `database_url`; yields its base URL and process, stops it after."""
    port = free_port()
    env = os.environ | {"DATABASE_URL": database_url}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--timeout-graceful-shutdown",
            "20",
        ],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the service exited at start-up"
            assert time.monotonic() < deadline, "the service did not start"
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        yield base, process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)
