"""The input pipeline: storage reads, decoding on the host, the copy of the batch to the
device, and a step fed by it (docs/formulas.md#input-pipeline)."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine import Bound, Dtype, InvalidInput, Roofline, Unit, Unsupported, Work, place
from app.engine.copies import link_fraction
from app.engine.input_pipeline import (
    MIB,
    PRESETS,
    InputPipeline,
    Limit,
    Storage,
    StoragePreset,
    fed,
    pipeline_time,
)
from tests.engine.chips import A100

# the A100's host link: PCIe Gen4 x16, 64 GB/s bidirectional, 32 GB/s each way
A100_PCIE4 = replace(A100, host_bandwidth=64e9)
NVME = PRESETS[StoragePreset.LOCAL_NVME]
EFS = PRESETS[StoragePreset.NETWORK_FS]
S3 = PRESETS[StoragePreset.OBJECT_STORE]
IMAGE = 224 * 224 * 3  # one decoded 224 x 224 RGB image in uint8: 150,528 bytes


def test_the_presets_are_their_sources_figures():
    # Samsung PM9A3: 6,500 MB/s, 900K IOPS at 4 KiB; EFS Elastic: 1,500 MiB/s per client,
    # 250K read IOPS, rsize 1 MiB; S3: 87.5 MB/s per connection, 5,500 GET/s per prefix, 8 MiB
    assert Storage(6.5e9, 900_000, 4096) == NVME
    assert Storage(1_572_864_000, 250_000, 1_048_576) == EFS
    assert Storage(87.5e6, 5_500, 8_388_608, per_worker=True) == S3


def test_imagenet_jpegs_from_nvme_are_decode_bound():
    # 256 JPEGs of 110 kB: 28.16 MB / 6.5 GB/s = 4.3323 ms; each ceil(110,000 / 4,096) = 27
    # blocks, 6,912 reads / 900,000 IOPS = 7.68 ms: storage 7.68 ms (IOPS).
    # decode 256 x 5 ms / 8 workers = 160 ms. copy 256 x 150,528 B = 38.535 MB pinned over
    # 32 GB/s: 1.2042 ms ideal, / 0.75 = 1.6056 ms realistic. Pipeline: 160 ms, decode.
    pipe = pipeline_time(
        InputPipeline(110_000, 256, NVME, 5e-3, 8, device_bytes_per_sample=IMAGE, pinned=True),
        A100_PCIE4,
    )
    assert pipe.bandwidth_time == pytest.approx(4.3323e-3, rel=1e-4)
    assert pipe.blocks == 6912
    assert pipe.iops_time == pytest.approx(7.68e-3)
    assert pipe.storage_time == pipe.iops_time
    assert pipe.decode_time == pytest.approx(0.16)
    assert pipe.copy.expected_time == pytest.approx(1.2042e-3, rel=1e-4)
    assert pipe.copy.realistic_time == pytest.approx(1.6056e-3, rel=1e-4)
    assert pipe.expected_time == pipe.realistic_time == pytest.approx(0.16)
    assert pipe.limit is Limit.DECODE


def test_small_files_on_a_network_file_system_are_iops_bound():
    # 1,024 samples of 2 kB: 2.048 MB / 1,572.864 MB/s = 1.3021 ms; a sample smaller than
    # the 1 MiB block still takes one read: 1,024 / 250,000 = 4.096 ms: IOPS-bound
    pipe = pipeline_time(InputPipeline(2_000, 1024, EFS), A100_PCIE4)
    assert pipe.bandwidth_time == pytest.approx(1.3021e-3, rel=1e-4)
    assert pipe.blocks == 1024
    assert pipe.iops_time == pytest.approx(4.096e-3)
    assert pipe.realistic_time == pytest.approx(4.096e-3)
    assert pipe.limit is Limit.STORAGE_IOPS


def test_an_object_store_reads_one_connection_per_worker():
    # 64 samples of 8 MB: 512 MB; 4 workers x 87.5 MB/s = 350 MB/s: 1.46286 s; 8 workers,
    # 700 MB/s: 0.73143 s. Reads: ceil(8e6 / 8,388,608) = 1 each, 64 / 5,500 = 11.636 ms
    four = pipeline_time(InputPipeline(8e6, 64, S3, workers=4), A100_PCIE4)
    eight = pipeline_time(InputPipeline(8e6, 64, S3, workers=8), A100_PCIE4)
    assert four.bandwidth_time == pytest.approx(1.46286, rel=1e-5)
    assert eight.bandwidth_time == pytest.approx(0.73143, rel=1e-5)
    assert four.iops_time == pytest.approx(11.636e-3, rel=1e-4)
    assert four.limit is eight.limit is Limit.STORAGE_BANDWIDTH


def test_a_large_batch_from_pageable_memory_is_copy_bound():
    # 32 samples of 1 MB from NVMe: 32 MB / 6.5 GB/s = 4.923 ms; ceil(1e6 / 4,096) = 245
    # reads each, 7,840 / 900,000 = 8.711 ms. Each becomes 24 MB on the device: 768 MB over
    # 32 GB/s = 24 ms ideal; pageable at 0.75 x 5.5 / 11.5 = 0.35870 of the link: 66.909 ms
    pipe = pipeline_time(InputPipeline(1e6, 32, NVME, device_bytes_per_sample=24e6), A100_PCIE4)
    assert pipe.iops_time == pytest.approx(8.711e-3, rel=1e-4)
    assert pipe.expected_time == pytest.approx(24e-3)
    assert pipe.realistic_time == pytest.approx(24e-3 / link_fraction(pinned=False))
    assert pipe.realistic_time == pytest.approx(66.909e-3, rel=1e-4)
    assert pipe.limit is Limit.HOST_COPY
    low, high = pipe.range()
    # pageable copies reach 5-6 GB/s of 16: 24 ms x 16 / 6 = 64 ms to 24 x 16 / 5 = 76.8 ms
    assert low == pytest.approx(64e-3)
    assert high == pytest.approx(76.8e-3)


def _step(expected: float, realistic: float) -> Roofline:
    roof = place(Work(1e12, 1e9, Dtype.BF16, Unit.MATRIX), A100_PCIE4)
    return replace(
        roof,
        expected_time=expected,
        realistic_time=realistic,
        sustained_time=realistic,
        realistic_low=realistic,
        realistic_high=realistic,
    )


def test_a_step_fed_by_a_slower_pipeline_is_input_bound():
    # the ImageNet pipeline above (160 ms, decode) beside a step of 50 ms ideal, 100 ms
    # realistic: the step takes max(50, 160) = 160 ms ideal, max(100, 160) realistic: input
    pipe = pipeline_time(
        InputPipeline(110_000, 256, NVME, 5e-3, 8, device_bytes_per_sample=IMAGE, pinned=True),
        A100_PCIE4,
    )
    step = fed(_step(0.05, 0.1), pipe)
    assert step.expected_time == pytest.approx(0.16)
    assert step.realistic_time == pytest.approx(0.16)
    assert step.input_time == pytest.approx(0.16)
    assert step.bound is Bound.INPUT
    # with 32 workers the decode takes 256 x 5 ms / 32 = 40 ms: the chip's 100 ms is longer,
    # so the step is its own (compute-bound), though its ideal 50 ms still waits: 50 ms
    faster = pipeline_time(replace(pipe.pipeline, workers=32), A100_PCIE4)
    own = fed(_step(0.05, 0.1), faster)
    assert own.realistic_time == pytest.approx(0.1)
    assert own.expected_time == pytest.approx(0.05)
    assert own.input_time == 0
    assert own.bound is Bound.COMPUTE


def test_a_copy_from_pageable_memory_adds_to_the_step():
    # the copy-bound pipeline above (pageable, 24 ms ideal, 66.909 ms realistic; storage
    # 8.711 ms) beside a 50 ms / 100 ms step: 50 + 24 = 74 ms ideal, 100 + 66.909 = 166.909 ms
    # realistic; the pipeline's 66.9 ms per step is shorter than the step: not input-bound
    pipe = pipeline_time(InputPipeline(1e6, 32, NVME, device_bytes_per_sample=24e6), A100_PCIE4)
    step = fed(_step(0.05, 0.1), pipe)
    assert step.expected_time == pytest.approx(74e-3)
    assert step.realistic_time == pytest.approx(166.909e-3, rel=1e-5)
    assert step.bound is Bound.COMPUTE
    # pinned, the copy runs beside the step: max(100, 24 / 0.75 = 32) = 100 ms
    pinned = fed(_step(0.05, 0.1), pipeline_time(replace(pipe.pipeline, pinned=True), A100_PCIE4))
    assert pinned.realistic_time == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("sample_bytes", {"sample_bytes": 0}),
        ("samples_per_step", {"samples_per_step": 0}),
        ("workers", {"workers": 0}),
        ("decode_s_per_sample", {"decode_s_per_sample": -1.0}),
        ("iops", {"storage": Storage(1e9, 0, 4096)}),
        ("block_bytes", {"storage": Storage(1e9, 1e5, float("nan"))}),
    ],
)
def test_out_of_range_inputs_name_their_field(field, change):
    with pytest.raises(InvalidInput) as error:
        pipeline_time(replace(InputPipeline(1e5, 8, NVME), **change), A100_PCIE4)
    assert error.value.field == field


def test_a_chip_without_a_host_link_cannot_price_the_copy():
    with pytest.raises(Unsupported) as error:
        pipeline_time(InputPipeline(1e5, 8, NVME), replace(A100, host_bandwidth=None))
    assert error.value.field == "chip"


_SIZES = st.floats(1, 1e8)
_COUNTS = st.integers(1, 10_000)


@given(
    st.tuples(_SIZES, _SIZES),
    st.tuples(_COUNTS, _COUNTS),
    st.floats(0, 0.1),
    st.integers(1, 128),
)
def test_time_grows_with_the_bytes_and_never_with_the_workers(sizes, counts, decode, workers):
    # more bytes per sample or more samples never take less time; more workers never more
    (size, more), (samples, extra) = sizes, counts
    base = InputPipeline(size, samples, S3, decode, workers)
    time = pipeline_time(base, A100_PCIE4).realistic_time
    bigger = pipeline_time(replace(base, sample_bytes=size + more), A100_PCIE4)
    longer = pipeline_time(replace(base, samples_per_step=samples + extra), A100_PCIE4)
    wider = pipeline_time(replace(base, workers=workers + 1), A100_PCIE4)
    assert bigger.realistic_time >= time
    assert longer.realistic_time >= time
    assert wider.realistic_time <= time
    # the pipeline is never faster than any of its stages, ideal or realistic
    assert time >= max(pipeline_time(base, A100_PCIE4).stages(0.0).values())
    assert pipeline_time(base, A100_PCIE4).expected_time <= time


def test_block_size_rounds_each_sample_up_to_whole_reads():
    # a sample of 1 MiB + 1 byte takes 2 reads of 1 MiB; of exactly 1 MiB, one
    assert pipeline_time(InputPipeline(MIB + 1, 1, EFS), A100_PCIE4).blocks == 2
    assert pipeline_time(InputPipeline(MIB, 1, EFS), A100_PCIE4).blocks == 1
