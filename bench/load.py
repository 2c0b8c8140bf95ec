"""HTTP benchmark: the real service under uvicorn on loopback, driven by concurrent clients.

    .venv/bin/python -m bench.load [--seconds 3] [--concurrency 16] [--database-url URL]
                                   [--clients wrk|httpx] [--only REGEX] [--rounds N]

Each endpoint is measured right after the trivial GET /health of the same server, so that the
ratio of their throughputs holds on a noisy machine; the server's CPU time per request (from
/proc) gives the same ratio where the clients, not the server, are the bottleneck. With
--rounds N every row is measured N times in turns and reported at its median CPU ratio. A row sends
one question over and over, as a CI job does (answered from the cache after the first time:
app/api/stored_answers.py), or, marked "distinct", a new question each time (computed every time).
Then the engine alone, in-process, and its share of the server CPU time of the distinct
request that computes it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from bench.server import Server, free_port, uvicorn_server

TRIVIAL = "/health"
MEASUREMENT = {
    "chip": "a100",
    "workload": {"kind": "transformer", "model": "llama-8b", "batch": 8},
    "measured_ms": [9.8, 10.1, 10.0],
    "label": "bench",
    "branch": "main",
}


@dataclass(frozen=True, slots=True)
class Target:
    """One request to drive: its row name, method, path and JSON body.

    A `distinct` target sends a different question each time (the integer field it names,
    a query parameter or a workload field, counts up), so that no answer comes from the cache
    (app/api/stored_answers.py): the cost of a calculation asked for the first time."""

    name: str
    method: str
    path: str
    body: dict[str, Any] | None = None
    # the least server-CPU ratio to /health the row must reach (None: not held to one): 0.8x
    # for a repeated calculation, 0.4x for a distinct one, 0.07x for a stored measurement
    target: float | None = 0.8
    distinct: str | None = None

    def request(self, n: int) -> tuple[str, dict[str, Any] | None]:
        """The path and body of the n-th request."""
        if self.distinct is None:
            return self.path, self.body
        if self.body is None:
            return f"{self.path}&{self.distinct}={n}", None
        return self.path, {**self.body, "workload": {**self.body["workload"], self.distinct: n}}


BATCH = "/optimal-batch?model=llama-8b"
TARGETS = (
    Target("GET /optimal-batch", "GET", "/optimal-batch?chip=a100&model=llama-8b"),
    Target("GET /optimal-batch batch=1e7", "GET", f"{BATCH}&chip=a100&batch=10000000"),
    Target("GET /optimal-batch seq_len=1e7", "GET", f"{BATCH}&chip=h100&seq_len=10000000"),
    Target("GET /expected-time", "GET", "/expected-time?chip=h100&model=llama-70b&tp=4&batch=16"),
    Target("GET /check", "GET", "/check?chip=a100&model=llama-8b&batch=8&measured_ms=5"),
    Target("POST /check (matmul)", "POST", "/check", {
        "chip": "a100", "measured_ms": 0.6,
        "workload": {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
    }),
    # decode at 2,048 tokens never reads gen_len, but the search's cache keys on it: each
    # request is a new search of the same size as the engine row's
    Target("GET /optimal-batch, distinct", "GET", BATCH + "&chip=a100", target=0.4,
           distinct="gen_len"),
    Target("GET /expected-time, distinct", "GET", "/expected-time?chip=h100&model=llama-70b&tp=4",
           target=0.4, distinct="batch"),
    Target("GET /check, distinct", "GET", "/check?chip=a100&model=llama-8b&measured_ms=5",
           target=0.4, distinct="batch"),
    # a CI job's question at each commit: the same workload, a new measured time
    Target("GET /check, new measured time", "GET", "/check?chip=a100&model=llama-8b&batch=8",
           target=0.4, distinct="measured_ms"),
    Target("GET /memory-fit, distinct", "GET", "/memory-fit?chip=a100&model=llama-8b",
           target=0.4, distinct="batch"),
    # the sequence length changes every term of the training step at every chip count
    Target("GET /scaling, distinct", "GET", "/scaling?chip=h100&model=llama-8b&batch=1024",
           target=0.4, distinct="seq_len"),
    Target("POST /check (matmul), distinct", "POST", "/check", {
        "chip": "a100", "measured_ms": 0.6,
        "workload": {"kind": "matmul", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"},
    }, target=0.4, distinct="m"),
    Target("POST /measurements", "POST", "/measurements", MEASUREMENT, target=0.07),
    Target("GET / (home page)", "GET", "/", target=None),
)  # fmt: skip


_MARK = 987654321  # where the counter goes in a distinct target's path or body
_RUNS = itertools.count()  # each run's counter starts past every earlier run's


def _first_number() -> int:
    return next(_RUNS) * 10**5 + 1


@dataclass(frozen=True, slots=True)
class Load:
    """Requests/s and latency percentiles of one target."""

    requests_per_s: float
    p50_ms: float
    p99_ms: float
    server_cpu_us: float  # the server process's CPU time per request


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (/proc/PID/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(
    client: httpx.AsyncClient, target: Target, seconds: float, users: int, server_pid: int
) -> Load:
    """`users` concurrent clients send `target` back to back for `seconds`."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    numbers = itertools.count(_first_number())

    async def user() -> None:
        while (start := time.perf_counter()) < deadline:
            path, body = target.request(next(numbers))
            response = await client.request(target.method, path, json=body)
            if response.status_code >= 400:
                raise RuntimeError(f"{target.name}: HTTP {response.status_code} {response.text}")
            latencies.append(time.perf_counter() - start)

    began, cpu = time.perf_counter(), cpu_seconds(server_pid)
    await asyncio.gather(*(user() for _ in range(users)))
    elapsed, cpu = time.perf_counter() - began, cpu_seconds(server_pid) - cpu
    cuts = statistics.quantiles(latencies, n=100)
    count = len(latencies)
    return Load(count / elapsed, cuts[49] * 1e3, cuts[98] * 1e3, cpu / count * 1e6)


TRIVIAL_TARGET = Target("GET /health", "GET", TRIVIAL)


Pair = tuple[Load, Load]  # a target's load and the trivial load measured just before it


def table(
    run: Callable[[Target, float], Load],
    seconds: float,
    targets: tuple[Target, ...] = TARGETS,
    rounds: int = 1,
) -> list[tuple[Target, list[Pair]]]:
    """Each target's pairs (its load, the trivial load just before), one per round, each
    driven by `run(target, seconds)` after one short run of every path to warm it. The rounds
    go over every target in turn, so that a burst of other work on the machine skews one
    round of a row, not all of them."""
    for target in (TRIVIAL_TARGET, *targets):
        run(target, 1.0)
    pairs: list[list[Pair]] = [[] for _ in targets]
    for _ in range(rounds):
        for target, measured in zip(targets, pairs, strict=True):
            base_load = run(TRIVIAL_TARGET, seconds)
            measured.append((run(target, seconds), base_load))
    return list(zip(targets, pairs, strict=True))


def cpu_ratio(pair: Pair) -> float:
    """The issue's measure: the trivial request's server CPU over the target's."""
    load, trivial = pair
    return trivial.server_cpu_us / load.server_cpu_us


def median_pair(pairs: list[Pair]) -> Pair:
    """The pair of the median CPU ratio (the lower of the two middle ones for an even count)."""
    return sorted(pairs, key=cpu_ratio)[(len(pairs) - 1) // 2]


def http_table(
    server: Server, seconds: float, users: int, targets: tuple[Target, ...], rounds: int
) -> list[tuple[Target, list[Pair]]]:
    """`table` with httpx as the clients, on one event loop."""
    limits = httpx.Limits(max_connections=users, max_keepalive_connections=users)
    with asyncio.Runner() as runner:
        client = httpx.AsyncClient(base_url=server.base, limits=limits, timeout=30)
        try:
            return table(
                lambda target, s: runner.run(drive(client, target, s, users, server.pid)),
                seconds,
                targets,
                rounds,
            )
        finally:
            runner.run(client.aclose())


_WRK_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _wrk_ms(output: str, percent: int) -> float:
    match = re.search(rf"^\s*{percent}%\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no {percent}% latency in wrk's output:\n{output}")
    return float(match[1]) * _WRK_UNITS[match[2]]


def wrk_drive(server: Server, target: Target, seconds: float, users: int) -> Load:
    """`target` under wrk (Debian's `wrk`, one thread): a C load generator that the server,
    not the client, keeps waiting."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(_wrk_script(target))
        script.flush()
        duration = f"-d{max(1, round(seconds))}s"  # wrk takes whole seconds
        command = ["wrk", "-t1", f"-c{users}", duration, "--latency", "-s", script.name]
        cpu = cpu_seconds(server.pid)
        output = subprocess.run(
            [*command, server.base + target.path], capture_output=True, text=True, check=True
        ).stdout
        cpu = cpu_seconds(server.pid) - cpu
    if "Non-2xx" in output:
        raise RuntimeError(f"{target.name}: errors under wrk:\n{output}")
    count = int(re.search(r"(\d+) requests in", output)[1])  # type: ignore[index]
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output)[1])  # type: ignore[index]
    return Load(rate, _wrk_ms(output, 50), _wrk_ms(output, 99), cpu / count * 1e6)


def _wrk_script(target: Target) -> str:
    """wrk's Lua: the method and body, and for a distinct target a counter in each request.
    A JSON string literal is a Lua one for ASCII text."""
    lines = [f'wrk.method = "{target.method}"']
    if target.body is not None:
        lines.append('wrk.headers["Content-Type"] = "application/json"')
    if target.distinct is None:
        if target.body is not None:
            lines.append(f"wrk.body = {json.dumps(json.dumps(target.body))}")
        return "\n".join(lines) + "\n"

    def counted(text: str) -> str:
        return " .. counter .. ".join(json.dumps(part) for part in text.split(str(_MARK)))

    path, body = target.request(_MARK)
    lua_body = "nil" if body is None else counted(json.dumps(body))
    lines += [
        f"counter = {_first_number() - 1}",
        "request = function()",
        "  counter = counter + 1",
        f"  return wrk.format(nil, {counted(path)}, nil, {lua_body})",
        "end",
    ]
    return "\n".join(lines) + "\n"


def wrk_table(
    server: Server, seconds: float, users: int, targets: tuple[Target, ...], rounds: int
) -> list[tuple[Target, list[Pair]]]:
    """`table` with wrk as the clients."""
    return table(lambda target, s: wrk_drive(server, target, s, users), seconds, targets, rounds)


def per_call(function: Callable[[], object], seconds: float = 0.5) -> float:
    """Seconds per call of `function`, best of three runs of about `seconds` each."""
    timer = timeit.Timer(function)
    number, _ = timer.autorange()
    repeats = max(1, int(seconds / max(timer.timeit(number) / number, 1e-9) / number))
    return min(timer.repeat(3, number * repeats)) / (number * repeats)


def engine_calls() -> dict[str, Callable[[], object]]:
    """The engine's calculations behind each endpoint, on the catalogs' real records.

    A repeated request never reaches the engine (its answer is served from the cache), so
    each call is named after the distinct row of the HTTP table that computes it."""
    from app.catalog.loader import load_chip_catalog, load_model_catalog  # noqa: PLC0415
    from app.engine import (  # noqa: PLC0415
        Dtype,
        Phase,
        Precision,
        TransformerSpec,
        estimate,
        judge,
        matmul,
        memory_fit,
        place,
    )
    from app.engine.batch import search  # noqa: PLC0415
    from app.settings import Settings  # noqa: PLC0415

    settings = Settings()
    chips, models = (
        load_chip_catalog(settings.chip_catalog),
        load_model_catalog(settings.model_catalog),
    )
    a100, h100 = chips.resolve("a100").chip, chips.resolve("h100").chip
    llama8, llama70 = models.resolve("llama-8b").arch, models.resolve("llama-70b").arch

    bf16 = Precision(Dtype.BF16, Dtype.BF16, Dtype.BF16)

    def spec(**fields: Any) -> TransformerSpec:
        return TransformerSpec(
            phase=Phase.DECODE, batch=fields.get("batch", 1), seq_len=fields.get("seq_len", 2048),
            gen_len=256, precision=bf16, tp=fields.get("tp", 1),
            reserve_fraction=0.1, flash_attention=True, recompute=False,
        )  # fmt: skip

    first_call = search
    return {
        # what a first-time request computes, beside the HTTP row that asks it
        "GET /optimal-batch, distinct": lambda: first_call(llama8, a100, spec()),
        "GET /expected-time, distinct": lambda: estimate(llama70, h100, spec(batch=16, tp=4)),
        "GET /check, distinct": lambda: judge(estimate(llama8, a100, spec(batch=8)).roofline, 5e-3),
        "POST /check (matmul), distinct": lambda: judge(
            place(matmul(4096, 4096, 4096, Dtype.BF16), a100), 0.6e-3
        ),
        "POST /measurements": lambda: judge(estimate(llama8, a100, spec(batch=8)).roofline, 1e-2),
        # the search's cost does not grow with the batch or the context
        "optimal batch, batch=1e7, first call": lambda: first_call(llama8, a100, spec(batch=10**7)),
        "optimal batch, seq_len=1e7, first call": lambda: first_call(
            llama8, h100, spec(seq_len=10**7)
        ),
        "memory fit (GET /memory-fit)": lambda: memory_fit(llama8, a100, spec()),
    }


def machine() -> str:
    """CPU model, cores and Python: where the numbers came from."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next(line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line)
    except (OSError, StopIteration):
        pass
    return f"{model}, nproc {os.cpu_count()}, Python {platform.python_version()}"


@contextmanager
def database(url: str | None) -> Iterator[str]:
    """`url`, or a fresh SQLite file in a temporary folder."""
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{folder}/bench.db"


def main(argv: list[str] | None = None) -> None:
    """Run the HTTP table, then the engine table, and print both as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent clients")
    parser.add_argument("--database-url", help="default: a temporary SQLite file")
    parser.add_argument(
        "--clients",
        choices=("wrk", "httpx"),
        default="wrk" if shutil.which("wrk") else "httpx",
        help="the load generator: wrk (apt-get install wrk; the default where installed) "
        "saturates the server, httpx (Python) is often the bottleneck itself",
    )
    parser.add_argument(
        "--only", metavar="REGEX", help="drive only the rows whose name matches (re.search)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure every row this many times, in turns, and report the round of its "
        "median CPU ratio (and every round's ratio)",
    )
    parser.add_argument("--no-engine", action="store_true", help="skip the in-process table")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    clients = args.clients
    targets = tuple(t for t in TARGETS if args.only is None or re.search(args.only, t.name))
    print(
        f"Machine: {machine()}; uvicorn, 1 worker, {args.concurrency} concurrent {clients} clients"
    )
    with (
        database(args.database_url) as url,
        uvicorn_server(url, free_port(), workers=1) as server,
    ):
        if clients == "wrk":
            rows = wrk_table(server, args.seconds, args.concurrency, targets, args.rounds)
        else:
            rows = http_table(server, args.seconds, args.concurrency, targets, args.rounds)
    rounds = " | CPU ratio, each round" if args.rounds > 1 else ""
    print(
        "\n| endpoint | req/s | p50 ms | p99 ms | server CPU µs/req "
        f"| /health req/s | p50 ms | p99 ms | server CPU µs/req | ratio | CPU ratio{rounds} |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---|" * bool(rounds))
    failed = []
    medians = [median_pair(pairs) for _, pairs in rows]
    for (target, pairs), (load, trivial) in zip(rows, medians, strict=True):
        ratio = load.requests_per_s / trivial.requests_per_s
        cpu = cpu_ratio((load, trivial))
        if target.target is not None and cpu < target.target:
            failed.append(f"{target.name} ({cpu:.2f}x < {target.target}x)")
        each = f" | {', '.join(f'{cpu_ratio(pair):.2f}x' for pair in pairs)}" * bool(rounds)
        print(
            f"| {target.name} | {load.requests_per_s:.0f} | {load.p50_ms:.1f} | {load.p99_ms:.1f} "
            f"| {load.server_cpu_us:.0f} | {trivial.requests_per_s:.0f} | {trivial.p50_ms:.1f} "
            f"| {trivial.p99_ms:.1f} | {trivial.server_cpu_us:.0f} | {ratio:.2f}x "
            f"| {cpu:.2f}x{each} |"
        )
    spent = {
        target.name: load.server_cpu_us * 1e-6
        for (target, _), (load, _) in zip(rows, medians, strict=True)
    }
    if not args.no_engine:
        engine_table(spent)
    if failed:
        print(f"\nbelow their target CPU ratio to /health: {', '.join(failed)}")
        sys.exit(1)


def engine_table(cpu: dict[str, float]) -> None:
    """The engine's calls in-process, and their share of their HTTP rows' server CPU time."""
    print("\n| engine call | calls/s | µs/call | share of its request's server CPU time |")
    print("|---|---:|---:|---:|")
    for name, call in engine_calls().items():
        seconds = per_call(call)
        share = f"{seconds / cpu[name]:.1%}" if name in cpu else "-"
        print(f"| {name} | {1 / seconds:,.0f} | {seconds * 1e6:.1f} | {share} |")


if __name__ == "__main__":
    main()
