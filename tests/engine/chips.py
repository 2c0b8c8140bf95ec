"""Chips for engine tests, built from datasheet figures (independent of chip_catalog.json).

A100 SXM4 80GB: 312 TFLOP/s bf16 dense, 19.5 fp32, 2,039 GB/s, 80 GiB (NVIDIA A100 datasheet).
A100 40GB: same peaks, 1,555 GB/s (NVIDIA Ampere architecture blog, Table 3).
H100 SXM5: 989.4 TFLOP/s bf16 dense, 66.9 fp32, 3.35 TB/s, NVLink 900 GB/s (H100 whitepaper).
"""

from app.engine import Chip, Dtype

A100 = Chip(
    id="a100-sxm4-80gb",
    name="A100 SXM4 80GB",
    memory_bytes=80 * 2**30,
    memory_bandwidth=2.039e12,
    matrix_peaks={Dtype.BF16: 312e12, Dtype.FP16: 312e12, Dtype.TF32: 156e12, Dtype.INT8: 624e12},
    vector_peaks={Dtype.FP32: 19.5e12, Dtype.FP64: 9.7e12},
    sustained_matrix=0.869,
    sustained_memory=0.9,
    scale_up_bandwidth=600e9,
)

A100_40GB = Chip(
    id="a100-sxm4-40gb",
    name="A100 SXM4 40GB",
    memory_bytes=42_405_855_232,
    memory_bandwidth=1.555e12,
    matrix_peaks={Dtype.BF16: 312e12, Dtype.TF32: 156e12},
    vector_peaks={Dtype.FP32: 19.5e12},
    sustained_matrix=0.869,
    sustained_memory=0.9,
    scale_up_bandwidth=600e9,
)

H100 = Chip(
    id="h100-sxm5-80gb",
    name="H100 SXM5 80GB",
    memory_bytes=80 * 2**30,
    memory_bandwidth=3.35e12,
    matrix_peaks={Dtype.BF16: 989.4e12, Dtype.FP8: 1978.9e12},
    vector_peaks={Dtype.FP32: 66.9e12},
    sustained_matrix=0.803,
    sustained_memory=0.9,
    scale_up_bandwidth=900e9,
)

# A made-up chip with round figures: 1e12 FLOP/s (bf16 matrix) and 1e9 bytes/s, reached in
# full, so that times come out as whole seconds.
ROUND = Chip(
    id="round",
    name="round numbers",
    memory_bytes=1e12,
    memory_bandwidth=1e9,
    matrix_peaks={Dtype.BF16: 1e12},
    vector_peaks={Dtype.FP32: 1e12},
    sustained_matrix=1.0,
    sustained_memory=1.0,
)
