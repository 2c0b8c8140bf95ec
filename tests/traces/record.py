"""Record the torch.profiler traces beside this script (the fixtures of tests/api/test_trace_api.py,
tests/engine/test_trace.py and tests/web/test_trace_page.py), on the CPU:

    python3 -m venv /tmp/torchrec && /tmp/torchrec/bin/pip install torch numpy
    /tmp/torchrec/bin/python tests/traces/record.py

Each is a small program, run once to warm up and then profiled with record_shapes=True and
written by export_chrome_trace, untouched. The service never imports torch: only this script.

The gpu_*.json traces were recorded the same way on an NVIDIA H100 80GB HBM3 (torch's CUDA
tensors, three warm-up calls, then ten profiled and a synchronisation), untouched:
gpu_linear.json, the README's torch.nn.Linear(4096, 4096) on a (64, 4096) input, and
gpu_cos.json, x.cos().cos() on 10^7 fp32, both with activities=[CPU, CUDA]; gpu_no_kernels.json,
the Linear with activities=[CPU] only (CUDA calls, no kernel events). The gpu_*_h200.json
traces were recorded on an NVIDIA H200 by record_gpu.py beside this script.

gpu_step.json was not recorded: no GPU was at hand. It is built by hand from the events
Kineto documents and writes (pytorch/kineto, libkineto/src/CuptiActivity.cpp and the traces
above): one `ProfilerStep#1` of 100 us; `cpu_op` events with shapes; the host's
`cuda_runtime` calls (cudaMemcpyAsync, cudaLaunchKernel, cudaStreamSynchronize), each with
its `correlation`; the device's `gpu_memcpy` ("Memcpy HtoD (Pinned -> Device)", with its
`bytes`) and `kernel` events on stream 7, each with the correlation of the call that queued
it and the External id of its operator; and the `ac2g` flow events that link the two. Its
times are chosen so that each part of the step is worked by hand in
tests/engine/test_trace_breakdown.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch  # type: ignore[import-not-found, unused-ignore]
from torch.profiler import ProfilerActivity, profile  # type: ignore[import-not-found, unused-ignore]

HERE = Path(__file__).resolve().parent
REPEATS = 3


def _record(name: str, step: Callable[[], object]) -> None:
    step()  # warm-up: allocations and lazy initialisation stay out of the trace
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(REPEATS):
            step()
    path = HERE / f"{name}.json"
    prof.export_chrome_trace(str(path))
    print(f"{path.relative_to(HERE.parent.parent)}: {path.stat().st_size} bytes")


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with torch.no_grad():
        a, b = torch.randn(256, 512), torch.randn(512, 128)
        _record("matmul", lambda: a @ b)
        a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
        _record("matmul_bf16", lambda: a16 @ b16)
        mlp = torch.nn.Sequential(
            torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512)
        )
        x = torch.randn(64, 512)
        _record("mlp", lambda: mlp(x))
        s = torch.randn(128, 1000)
        _record("softmax", lambda: torch.softmax(s, dim=-1))
        v = torch.randn(1_000_000)
        _record("cos_cos", lambda: v.cos().cos())
        # a cast (aten::to calls aten::_to_copy), then an op the engine does not model
        _record("mixed", lambda: v.to(torch.float64).cumsum(0).cos())


if __name__ == "__main__":
    main()
