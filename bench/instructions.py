"""Instructions per request, counted by valgrind's callgrind: a CPU cost that a shared machine's
noise does not move.

    .venv/bin/python -m bench.instructions [--requests 60] [--only REGEX] [--jobs 2]

On a shared 2-core machine the same code's CPU time per request moves by a third from one
minute to the next (docs/performance.md), which hides any change under about 20%. The
number of instructions the interpreter executes does not move: callgrind counts them to
within 0.5% from run to run, whatever else the machine does, so two versions of the code
can be compared in minutes, and a gain of 2% shows.

Each row is `/health`, one of bench/load.py's distinct calculation rows (a new question
every request, never answered from the cache) or its stored measurement (a write each request,
committed on its own). It runs in a child process under callgrind,
in-process through the ASGI app (no server, no socket, no kernel: the service's own work):
30 requests to warm up, then instructions are counted over `--requests` more. The table
gives instructions per request and the row's cost in /health's (a row at 3.0x costs three
/health requests); bench/load.py's HTTP ratios add the server's and the kernel's per-request
work, the same for every row, to both sides. Needs valgrind (Debian's `valgrind`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.load import TARGETS, TRIVIAL_TARGET, Target, machine

WARM_UP = 30
# /health, the distinct calculation rows and the stored measurement (a write a request)
ROWS = (TRIVIAL_TARGET, *(t for t in TARGETS if t.target is not None and t.target < 0.8))
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


async def ask(app: Any, target: Target, n: int) -> int:
    """Send the n-th request of `target` to the ASGI `app`; its status code."""
    path, body = target.request(n)
    path, _, query = path.partition("?")
    sent = b"" if body is None else json.dumps(body).encode()
    headers = [(b"host", b"localhost")]
    if body is not None:
        headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(sent))]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": target.method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("localhost", 80),
    }
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": sent, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await app(scope, receive, send)
    return int(messages[0]["status"])


async def run_requests(
    target: Target, count: int, counting: Callable[[bool], None], warm_up: int = WARM_UP
) -> None:
    """Warm up, then send `count` requests of `target` between counting(True) and
    counting(False), each a new question for a distinct row; raises on an error status."""
    from app.main import create_app  # noqa: PLC0415  (after the child's environment is set)

    app = create_app()
    async with app.router.lifespan_context(app):
        numbers = iter(range(1, warm_up + count + 1))
        for n in [next(numbers) for _ in range(warm_up)]:
            await _ok(app, target, n)
        counting(True)
        for n in numbers:
            await _ok(app, target, n)
        counting(False)


async def _ok(app: Any, target: Target, n: int) -> None:
    status = await ask(app, target, n)
    if status >= 400:
        raise RuntimeError(f"{target.name}: HTTP {status} for request {n}")


def _callgrind(on: bool) -> None:
    """Turn callgrind's counting on or off in this process (valgrind's callgrind_control)."""
    state = "on" if on else "off"
    subprocess.run(
        ["callgrind_control", "--instr=" + state, str(os.getpid())],
        check=True,
        capture_output=True,
    )


def count_instructions(target: Target, requests: int) -> float:
    """Instructions per request of `target`, from a child process under callgrind."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "ROOFCHECK_DATABASE_URL": f"sqlite:///{folder}/bench.db"}
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={folder}/callgrind.out",
            sys.executable,
            "-m",
            "bench.instructions",
            "--child",
            target.name,
            str(requests),
        ]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = _COLLECTED.findall(done.stderr)
    if done.returncode or not found:
        raise RuntimeError(f"{target.name}: callgrind failed\n{done.stderr[-2000:]}")
    return int(found[-1]) / requests


def main(argv: list[str] | None = None) -> None:
    """Print instructions per request of /health and of each distinct row, as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60, help="counted per row")
    parser.add_argument("--only", help="only the rows whose name matches this regex")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="rows at once")
    parser.add_argument("--child", nargs=2, metavar=("ROW", "REQUESTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, count = args.child
        target = next(t for t in ROWS if t.name == name)
        asyncio.run(run_requests(target, int(count), _callgrind))
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("bench.instructions needs valgrind (Debian: apt-get install valgrind)")
    rows = [t for t in ROWS if not args.only or re.search(args.only, t.name) or t is ROWS[0]]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        counts = list(pool.map(lambda t: count_instructions(t, args.requests), rows))
    health = counts[0]
    print(f"Machine: {machine()}; in-process, {args.requests} requests a row\n")
    print("| request | instructions/request | cost in /health's |")
    print("|---|---:|---:|")
    for target, instructions in zip(rows, counts, strict=True):
        print(f"| {target.name} | {instructions / 1e3:,.0f} k | {instructions / health:.2f}x |")


if __name__ == "__main__":
    main()
