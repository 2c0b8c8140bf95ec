"""Work whose cost grows with a request's body (a profiler trace's analysis), run in a process
of its own within a time and a memory budget.

A process rather than the thread pool of app/http/budget.py, for three reasons:
- a thread cannot be stopped: past its budget it would run on, holding a core and its memory;
  a process is killed at the budget, and its memory returned;
- a thread's memory cannot be bounded; a process's address space is (RLIMIT_AS, on Linux):
  past the bound its work gets a MemoryError, and the service's own memory is untouched;
- a thread parsing JSON holds the GIL, which the event loop then waits for; a process shares
  nothing with the loop, so /health and every other request go on being answered.
The processes fork from multiprocessing's fork server, a process started once that imported the
work's module: each starts in milliseconds, without the service's threads and sockets. At most
`Limits.slots` run at once in a service process; a request waits for a slot within its budget.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")
_CONTEXT = multiprocessing.get_context("forkserver")


@dataclass(frozen=True, slots=True)
class Limits:
    """The time one piece of work may take (`budget_s`, from its process's start), the memory
    its process may add to what it starts with, and how many run at once."""

    budget_s: float
    memory_bytes: int
    slots: int


class OverTime(Exception):
    """The work ran past its time budget, or found no free slot within it (`busy`); the
    message says which, and what to do."""

    def __init__(self, message: str, *, busy: bool) -> None:
        super().__init__(message)
        self.busy = busy


class OverMemory(Exception):
    """The work needed more memory than its process may take; the message says what to do."""


class Isolated:
    """Runs work in processes of its own, within `limits` (one per app: its slots are shared
    by the app's requests). The fork server imports `module`, the work's, once; `what` names
    the work in the errors, and `advice` says how to ask for less of it."""

    def __init__(self, limits: Limits, module: str, what: str, advice: str) -> None:
        self.limits, self.module, self.what, self.advice = limits, module, what, advice
        self._slots = anyio.CapacityLimiter(limits.slots)

    async def run(self, work: Callable[[bytes], T], body: bytes) -> T:
        """`work(body)` in a process of its own: its answer, or the exception it raised;
        OverTime past the budget, OverMemory past the memory bound. `work` and what it
        answers or raises travel between processes pickled (a module's function, or a
        functools.partial of one)."""
        limits = self.limits
        try:
            with anyio.fail_after(limits.budget_s):
                await self._slots.acquire()
        except TimeoutError:
            busy = f"{limits.slots} at once, all busy for its {limits.budget_s:g} s budget"
            raise OverTime(
                f"{self.what} found no free slot ({busy}); retry later", busy=True
            ) from None
        try:
            outcome, value = await anyio.to_thread.run_sync(_run, work, body, limits, self.module)
        finally:
            self._slots.release()
        if outcome == "ok":
            answer: T = value
            return answer
        if outcome == "error":
            raise value
        if outcome == "memory":
            mib = limits.memory_bytes / 2**20
            raise OverMemory(
                f"{self.what} needs more than its {mib:g} MiB of memory: {self.advice}"
            )
        if outcome == "slow":
            budget = f"{limits.budget_s:g} s budget"
            raise OverTime(f"{self.what} took longer than its {budget}: {self.advice}", busy=False)
        raise RuntimeError(f"the work's process exited with code {value} and no answer")


def _run(work: Callable[[bytes], Any], body: bytes, limits: Limits, module: str) -> tuple[str, Any]:
    """In a worker thread: start the work's process, hand it the body, wait for its outcome
    within the budget, and kill it past the budget."""
    _CONTEXT.set_forkserver_preload([module])  # read when the fork server starts
    ours, theirs = _CONTEXT.Pipe()
    process = _CONTEXT.Process(target=_work, args=(theirs, work, limits.memory_bytes), daemon=True)
    try:
        process.start()
    finally:
        theirs.close()
    deadline = time.monotonic() + limits.budget_s
    try:
        ours.send_bytes(body)
        if not ours.poll(max(0.0, deadline - time.monotonic())):
            return "slow", None
        outcome: tuple[str, Any] = ours.recv()
        return outcome
    except (EOFError, OSError):  # the process died first: no outcome
        process.join()
        return "died", process.exitcode
    finally:
        ours.close()
        if process.is_alive():
            process.kill()
        process.join()
        process.close()


def _work(connection: Connection, work: Callable[[bytes], Any], memory_bytes: int) -> None:
    """In the work's process: bound its memory, run the work on the body it is sent, and send
    back its outcome."""
    _bound_memory(memory_bytes)
    outcome: tuple[str, Any]
    try:
        outcome = "ok", work(connection.recv_bytes())
    except MemoryError:
        outcome = "memory", None
    except Exception as error:  # the work's own errors are answered by the service
        outcome = "error", error
    connection.send(outcome)
    connection.close()


def _bound_memory(memory_bytes: int) -> None:
    """Let this process's address space grow by at most `memory_bytes` (Linux: its current
    size is in /proc; elsewhere it is left unbounded)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[0])
    except OSError:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = pages * os.sysconf("SC_PAGE_SIZE") + memory_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
