"""Record the traces of a GPU run beside this script (fixtures of tests/api/test_trace_h200.py),
on the GPU PyTorch sees: `python3 tests/traces/record_gpu.py` on a machine with one. Each is
written by export_chrome_trace, untouched, and named after the GPU (gpu_linear_h200.json on
an NVIDIA H200, recorded with PyTorch 2.11 and CUDA 13.0).

- gpu_linear_<gpu>.json: the README's example, torch.nn.Linear(4096, 4096) on a (64, 4096)
  fp32 input, three warm-up calls, then ten profiled and a synchronisation.
- gpu_decode_<gpu>.json: three eager decode steps of 4 layers shaped like Llama 3 8B's
  (hidden 4096, 32 query and 8 key-value heads of 128, gate-up 2 x 14336, the 128,256-token
  head) on random bf16 weights, batch 1, the new token's key and value written at position
  1,023 of a 1,024-token cache; three warm-up steps first. Each layer: RMSNorm, one fused QKV
  matmul, the cache writes, scaled_dot_product_attention over the cache, the output matmul,
  RMSNorm, one fused gate-up matmul, SiLU times up, the down matmul.

Both with activities=[CPU, CUDA] and record_shapes=True, so that the kernels are the
measured times and the operators carry their shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch  # type: ignore[import-not-found, unused-ignore]
import torch.nn.functional as F  # type: ignore[import-not-found, unused-ignore]
from torch.profiler import ProfilerActivity, profile  # type: ignore[import-not-found, unused-ignore]

HERE = Path(__file__).resolve().parent
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 4096, 32, 8, 128, 14336, 128256
LAYERS, CONTEXT = 4, 1024


def _record(name: str, step: Callable[[], object], calls: int) -> None:
    for _ in range(3):
        step()  # warm-up: cuBLAS's initialisation stays out of the trace
    torch.cuda.synchronize()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True
    ) as prof:
        for _ in range(calls):
            step()
        torch.cuda.synchronize()
    gpu = torch.cuda.get_device_name().split()[-1].lower()
    path = HERE / f"{name}_{gpu}.json"
    prof.export_chrome_trace(str(path))
    print(f"{path.relative_to(HERE.parent.parent)}: {path.stat().st_size} bytes")


def _weight(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * 0.02


def _decode_step() -> Callable[[], torch.Tensor]:
    """One decode step of the layers above, batch 1, on a cache of CONTEXT positions."""
    ones = torch.ones(HIDDEN, device="cuda", dtype=torch.bfloat16)
    qkv_width = (HEADS + 2 * KV_HEADS) * HEAD_DIM
    layers = [
        (
            _weight(HIDDEN, qkv_width),
            _weight(HEADS * HEAD_DIM, HIDDEN),
            _weight(HIDDEN, 2 * FFN),
            _weight(FFN, HIDDEN),
        )
        for _ in range(LAYERS)
    ]
    caches = [
        (
            torch.zeros(1, KV_HEADS, CONTEXT, HEAD_DIM, device="cuda", dtype=torch.bfloat16),
            torch.zeros(1, KV_HEADS, CONTEXT, HEAD_DIM, device="cuda", dtype=torch.bfloat16),
        )
        for _ in range(LAYERS)
    ]
    head = _weight(HIDDEN, VOCAB)
    x = torch.randn(1, HIDDEN, device="cuda", dtype=torch.bfloat16)
    position = CONTEXT - 1

    def step() -> torch.Tensor:
        h = x
        for (qkv, out, gate_up, down), (keys, values) in zip(layers, caches, strict=True):
            q, k, v = (F.rms_norm(h, (HIDDEN,), ones) @ qkv).split(
                [HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1
            )
            keys[:, :, position] = k.view(1, KV_HEADS, HEAD_DIM)
            values[:, :, position] = v.view(1, KV_HEADS, HEAD_DIM)
            attended = F.scaled_dot_product_attention(
                q.view(1, HEADS, 1, HEAD_DIM), keys, values, enable_gqa=True
            )
            h = h + attended.reshape(1, HEADS * HEAD_DIM) @ out
            gate, up = (F.rms_norm(h, (HIDDEN,), ones) @ gate_up).chunk(2, dim=-1)
            h = h + (F.silu(gate) * up) @ down
        return F.rms_norm(h, (HIDDEN,), ones) @ head

    return step


def main() -> None:
    torch.manual_seed(0)
    with torch.no_grad():
        model = torch.nn.Linear(4096, 4096).cuda()
        x = torch.randn(64, 4096, device="cuda")
        _record("gpu_linear", lambda: model(x), calls=10)
        _record("gpu_decode", _decode_step(), calls=3)


if __name__ == "__main__":
    main()
