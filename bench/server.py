"""The real service in a child process: uvicorn on a free loopback port, stopped on exit."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True, slots=True)
class Server:
    """A running uvicorn: its base URL and the supervisor's process id."""

    base: str
    pid: int


@contextmanager
def uvicorn_server(
    database_url: str, port: int, *, workers: int = 1, startup_s: float = 60
) -> Iterator[Server]:
    """Run `uvicorn app.main:app --workers N` against `database_url`.

    The database is prepared first by `python -m app.prestart`, so workers never race on it.
    """
    env = {**os.environ, "DATABASE_URL": database_url}
    subprocess.run([sys.executable, "-m", "app.prestart"], cwd=ROOT, env=env, check=True)
    command = [
        sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1",
        "--port", str(port), "--workers", str(workers), "--no-access-log", "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(process, base, startup_s)
        yield Server(base, process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_healthy(process: subprocess.Popen[bytes], base: str, startup_s: float) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {process.returncode} during start-up")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"uvicorn did not answer {base}/health within {startup_s} s")
