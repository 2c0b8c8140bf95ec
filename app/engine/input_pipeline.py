"""The input pipeline that feeds a step: storage reads, decoding on the host, and the copy of
the batch to the device (docs/formulas.md#input-pipeline).

Each stage runs on its own resource: the storage device, the host's cores (DataLoader
workers, each a process that decodes one sample at a time), the host link (the copy). With
prefetching (DataLoader's `prefetch_factor` batches per worker in flight) they work on
different batches at once, so a batch is ready every max(storage, decode, copy) seconds, and
the chip, working beside them, waits only for what is longer than its own step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from app.engine.copies import Direction, place_copy
from app.engine.errors import InvalidInput, Unsupported
from app.engine.hardware import Chip
from app.engine.roofline import Roofline
from app.engine.workload import TransformerEstimate

MIB = 2**20


@dataclass(frozen=True, slots=True)
class Storage:
    """Where the samples are read from: its read rate (bytes/s), the reads it serves per
    second, and the bytes one read fetches. `per_worker`: the read rate is one connection's
    and each worker holds one (an object store, read one request at a time per worker)."""

    read_bytes_per_s: float
    iops: float
    block_bytes: float
    per_worker: bool = False


class StoragePreset(StrEnum):
    """Storage presets, each sourced below (docs/formulas.md#input-pipeline)."""

    LOCAL_NVME = "local_nvme"
    NETWORK_FS = "network_fs"
    OBJECT_STORE = "object_store"


PRESETS = {
    # A PCIe Gen4 x4 data-centre NVMe SSD, Samsung PM9A3 (U.2 and E1.S): "up to 6,500 MB/s"
    # sequential read and 900,000 random-read IOPS, the IOPS at 4 KiB reads, the datasheet's
    # random-read size (https://semiconductor.samsung.com/ssd/datacenter-ssd/pm9a3/; the M.2
    # model reads 4,500 MB/s and 550,000 IOPS:
    # https://www.computerbase.de/2020-05/samsung-pm9a3-e1.s-pcie-4.0-ssd/).
    StoragePreset.LOCAL_NVME: Storage(6.5e9, 900_000, 4096),
    # Amazon EFS, Regional, Elastic throughput: 1,500 MiB/s read per client and 250,000 read
    # IOPS for frequently accessed data by default (90,000 for infrequently accessed, up to
    # 2,500,000 on request; https://docs.aws.amazon.com/efs/latest/ug/performance.html); each
    # NFS READ fetches at most rsize = 1 MiB, the mount helper's setting
    # (https://docs.aws.amazon.com/efs/latest/ug/mount-helper-setting.html).
    StoragePreset.NETWORK_FS: Storage(1500 * MIB, 250_000, MIB),
    # Amazon S3: 5,500 GET requests per second per partitioned prefix, one concurrent request
    # per 85-90 MB/s of throughput (87.5 MB/s, the midpoint, per connection), byte-range GETs
    # of 8 MB or 16 MB typical (8 MiB here, the AWS CLI's part size)
    # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html,
    # https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance-guidelines.html).
    StoragePreset.OBJECT_STORE: Storage(87.5e6, 5_500, 8 * MIB, per_worker=True),
}


@dataclass(frozen=True, slots=True)
class InputPipeline:
    """What one chip's data loader delivers per step: `samples_per_step` samples of
    `sample_bytes` stored bytes, read from `storage`, each decoded in `decode_s_per_sample`
    seconds of one host core by one of `workers` processes, then copied to the device as
    `device_bytes_per_sample` bytes (default `sample_bytes`) from pinned or pageable memory."""

    sample_bytes: float
    samples_per_step: int
    storage: Storage
    decode_s_per_sample: float = 0.0
    workers: int = 1
    device_bytes_per_sample: float | None = None
    pinned: bool = False

    def checked(self) -> InputPipeline:
        """This pipeline, or InvalidInput naming the field out of its range."""
        positive = {
            "sample_bytes": self.sample_bytes,
            "samples_per_step": self.samples_per_step,
            "read_bytes_per_s": self.storage.read_bytes_per_s,
            "iops": self.storage.iops,
            "block_bytes": self.storage.block_bytes,
            "workers": self.workers,
            "device_bytes_per_sample": self.device_bytes_per_sample or self.sample_bytes,
        }
        for field, value in positive.items():
            if not (math.isfinite(value) and value > 0):
                raise InvalidInput(field, f"must be a finite number > 0, got {value}")
        if not (math.isfinite(self.decode_s_per_sample) and self.decode_s_per_sample >= 0):
            raise InvalidInput("decode_s_per_sample", "must be a finite number >= 0")
        return self


class Limit(StrEnum):
    """The stage that sets the pipeline's time per step."""

    STORAGE_BANDWIDTH = "storage_bandwidth"
    STORAGE_IOPS = "storage_iops"
    DECODE = "decode"
    HOST_COPY = "host_copy"


@dataclass(frozen=True, slots=True)
class PipelineTime:
    """The time per step of each stage of an input pipeline, in seconds."""

    pipeline: InputPipeline
    bytes_read: float  # samples x sample_bytes
    blocks: int  # reads: samples x ceil(sample_bytes / block_bytes)
    bandwidth_time: float  # bytes_read / the read rate
    iops_time: float  # blocks / iops
    decode_time: float  # samples x decode_s_per_sample / workers
    copy: Roofline  # the batch's host-to-device copy (app/engine/copies.py)

    @property
    def storage_time(self) -> float:
        """The storage's time: the longer of its read rate's and its reads per second's."""
        return max(self.bandwidth_time, self.iops_time)

    def stages(self, copy_time: float) -> dict[Limit, float]:
        """Each stage's seconds per step, the copy taking `copy_time`."""
        return {
            Limit.STORAGE_BANDWIDTH: self.bandwidth_time,
            Limit.STORAGE_IOPS: self.iops_time,
            Limit.DECODE: self.decode_time,
            Limit.HOST_COPY: copy_time,
        }

    @property
    def expected_time(self) -> float:
        """The ideal time per step: the slowest stage, the copy at the link's full rate."""
        return max(self.stages(self.copy.expected_time).values())

    @property
    def realistic_time(self) -> float:
        """The time per step with the copy at the rate pinned or pageable copies reach."""
        return max(self.stages(self.copy.realistic_time).values())

    @property
    def limit(self) -> Limit:
        """The slowest stage at the realistic copy (the first listed on a tie)."""
        stages = self.stages(self.copy.realistic_time)
        return max(stages, key=stages.__getitem__)

    def range(self) -> tuple[float, float]:
        """The realistic time per step at the low and high ends of the copy's range."""
        low = max(self.stages(self.copy.realistic_low).values())
        return low, max(self.stages(self.copy.realistic_high).values())


def read_rate(pipeline: InputPipeline) -> float:
    """The storage's read rate in bytes/s: per connection x workers where it is per worker."""
    storage = pipeline.storage
    return storage.read_bytes_per_s * (pipeline.workers if storage.per_worker else 1)


def pipeline_time(pipeline: InputPipeline, chip: Chip) -> PipelineTime:
    """The time per step each stage of `pipeline` takes feeding `chip`.

    storage = max(bytes / read rate, blocks / iops), where each sample is read on its own
    and takes ceil(sample_bytes / block_bytes) reads (a 100 kB sample in 4 KiB blocks: 25; a
    sample smaller than a block still takes a whole read); decode = samples x seconds per
    sample / workers (each worker decodes one sample at a time); the copy is the batch's
    decoded bytes host to device (`place_copy`).
    """
    pipeline.checked()
    if chip.host_bandwidth is None:
        raise Unsupported(
            "chip",
            f"{chip.id} has no host link figure in the catalog: the copy of the batch to the "
            "device cannot be priced",
        )
    samples = pipeline.samples_per_step
    bytes_read = samples * pipeline.sample_bytes
    blocks = samples * math.ceil(pipeline.sample_bytes / pipeline.storage.block_bytes)
    device_bytes = samples * (pipeline.device_bytes_per_sample or pipeline.sample_bytes)
    return PipelineTime(
        pipeline=pipeline,
        bytes_read=bytes_read,
        blocks=blocks,
        bandwidth_time=bytes_read / read_rate(pipeline),
        iops_time=blocks / pipeline.storage.iops,
        decode_time=samples * pipeline.decode_s_per_sample / pipeline.workers,
        copy=place_copy(device_bytes, Direction.H2D, chip, pinned=pipeline.pinned),
    )


def fed(step: Roofline, pipe: PipelineTime) -> Roofline:
    """`step` fed by the input pipeline `pipe`, with prefetching.

    The storage and the workers run beside the chip; so does a copy from pinned memory (an
    asynchronous copy on its own stream). A copy from pageable memory cannot overlap compute
    (CUDA copies asynchronously only from pinned memory): it adds to the step. The step takes
    max(its own time [+ the pageable copy], the stages beside it), ideal and realistic alike;
    it is input-bound when the pipeline's realistic time per step is longer than the step's
    own.
    """
    copy, pinned = pipe.copy, pipe.pipeline.pinned

    def at(own: float, copy_time: float) -> float:
        stages = pipe.stages(copy_time)
        if not pinned:  # the copy is on the step's critical path
            return max(own + stages.pop(Limit.HOST_COPY), *stages.values())
        return max(own, *stages.values())

    return replace(
        step,
        expected_time=at(step.expected_time, copy.expected_time),
        realistic_time=at(step.realistic_time, copy.realistic_time),
        sustained_time=at(step.sustained_time, copy.sustained_time),
        realistic_low=at(step.realistic_low, copy.realistic_low),
        realistic_high=at(step.realistic_high, copy.realistic_high),
        input_time=pipe.realistic_time if pipe.realistic_time > step.realistic_time else 0.0,
    )


def fed_estimate(result: TransformerEstimate, pipe: PipelineTime) -> TransformerEstimate:
    """A training step's estimate fed by `pipe` (`fed`): its step, MFU and rates with it."""
    roof = fed(result.roofline, pipe)
    training = None if result.training is None else replace(result.training, roofline=roof)
    return replace(result, roofline=roof, training=training)


ADVICE = {
    Limit.STORAGE_BANDWIDTH: (
        "The storage's read rate limits the pipeline: cache the data set on local NVMe or in "
        "host memory (the page cache, or a cached dataset after the first epoch), store "
        "samples in fewer bytes (compressed, or at the resolution trained on), or read from "
        "faster or striped storage; from an object store, more workers (each holds a "
        "connection) or concurrent range GETs."
    ),
    Limit.STORAGE_IOPS: (
        "The storage's reads per second limit the pipeline: each sample is read on its own "
        "in small blocks. Pack samples into large shards read sequentially (WebDataset tar "
        "shards, TFRecord, FFCV, MosaicML streaming) so that each read fetches a larger "
        "block, or cache the data set locally."
    ),
    Limit.DECODE: (
        "Decoding on the host limits the pipeline: more DataLoader workers (num_workers, up "
        "to the host's cores per chip), decode on the device (NVIDIA DALI, "
        "torchvision.io.decode_jpeg on the GPU), or cache decoded samples."
    ),
    Limit.HOST_COPY: (
        "The copy of the batch to the device limits the pipeline: copy from pinned memory "
        "(DataLoader(pin_memory=True)) with non_blocking=True, prefetching the next batch on "
        "a side stream, and copy compact dtypes (uint8 images, int32 tokens) converted on "
        "the device."
    ),
}
PREFETCH = (
    "Keep the stages overlapped with the chip: persistent_workers=True and a prefetch_factor "
    "of 2 or more batches per worker, so that each step's data is read while the step before "
    "it runs."
)
