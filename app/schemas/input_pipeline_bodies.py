"""The input pipeline that feeds a step: an `input_pipeline` workload of its own, or a
training step's `input_pipeline` (docs/formulas.md#input-pipeline), and what the answer says
of it."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.engine.input_pipeline import PRESETS, InputPipeline, Limit, Storage, StoragePreset
from app.schemas.request_base import Request

_STORAGE = ("read_bytes_per_s", "iops", "block_bytes")


class InputPipelineFields(Request):
    """What one chip's data loader reads, decodes and copies per step."""

    sample_bytes: float = Field(ge=1, le=1e12, description="Stored bytes of one sample.")
    samples_per_step: int | None = Field(
        None,
        ge=1,
        le=10**9,
        description="Samples one chip's loader delivers per step (in training, default the "
        "replica's batch: batch / dp).",
    )
    storage: StoragePreset | None = Field(
        None,
        description="local_nvme (a PCIe Gen4 NVMe SSD), network_fs (Amazon EFS) or "
        "object_store (Amazon S3): its read rate, IOPS and block size, each overridable.",
    )
    read_bytes_per_s: float | None = Field(
        None, gt=0, le=1e13, description="The storage's read rate, bytes/s."
    )
    iops: float | None = Field(None, gt=0, le=1e10, description="Reads the storage serves per s.")
    block_bytes: float | None = Field(
        None, ge=1, le=1e10, description="Bytes one read fetches; a sample takes whole reads."
    )
    decode_s_per_sample: float = Field(
        0.0, ge=0, le=1e4, description="Seconds of one host core to decode one sample."
    )
    workers: int = Field(1, ge=1, le=4096, description="DataLoader workers (num_workers).")
    device_bytes_per_sample: float | None = Field(
        None,
        ge=1,
        le=1e12,
        description="Bytes of one decoded sample copied to the device; default sample_bytes.",
    )
    pinned: bool = Field(
        False, description="DataLoader(pin_memory=True): the batch's copy overlaps compute."
    )

    @model_validator(mode="after")
    def _storage_known(self) -> Self:
        if self.storage is None:
            missing = [name for name in _STORAGE if getattr(self, name) is None]
            if missing:
                raise ValueError(
                    f"{missing[0]}: give a storage preset (local_nvme, network_fs, "
                    f"object_store) or all of {', '.join(_STORAGE)} (missing: "
                    f"{', '.join(missing)})"
                )
        return self

    def pipeline(self, samples: int) -> InputPipeline:
        """The engine's pipeline, `samples` per step where none was given: the preset's
        storage figures, those given in their place."""
        preset = PRESETS[self.storage] if self.storage is not None else None
        given: dict[str, Any] = {name: getattr(self, name) for name in _STORAGE}
        figures = {
            name: value if value is not None else getattr(preset, name)
            for name, value in given.items()
        }
        per_worker = preset is not None and preset.per_worker and self.read_bytes_per_s is None
        return InputPipeline(
            sample_bytes=self.sample_bytes,
            samples_per_step=self.samples_per_step or samples,
            storage=Storage(**figures, per_worker=per_worker),
            decode_s_per_sample=self.decode_s_per_sample,
            workers=self.workers,
            device_bytes_per_sample=self.device_bytes_per_sample,
            pinned=self.pinned,
        )


class InputPipelineWorkload(InputPipelineFields):
    """An input pipeline on its own: the time per step it needs and what limits it."""

    kind: Literal["input_pipeline"]
    samples_per_step: int = Field(  # required on its own
        ge=1, le=10**9, description="Samples one chip's loader delivers per step."
    )


# a transformer workload's `input_pipeline` (training only)
PipelineField = Annotated[
    InputPipelineFields | None,
    Field(
        description="Training: the input pipeline that feeds each chip's step "
        "(docs/api.md#input-pipeline); the step takes max(its own time, the pipeline's)."
    ),
]


class InputPipelineOut(BaseModel):
    """The input pipeline's time per step, stage by stage (seconds)."""

    model_config = ConfigDict(allow_inf_nan=False)

    time_per_step_s: float = Field(description="Realistic: the slowest stage.")
    expected_time_per_step_s: float = Field(description="Ideal: the copy at the link's rate.")
    limit: Limit = Field(description="storage_bandwidth, storage_iops, decode or host_copy.")
    samples_per_step: int
    bytes_read: float
    reads: int = Field(description="samples x ceil(sample_bytes / block_bytes).")
    storage_bandwidth_s: float
    storage_iops_s: float
    decode_s: float
    host_copy_s: float = Field(description="Realistic, from pinned or pageable memory.")
    device_bytes: float = Field(description="Bytes copied to the device per step.")
    read_bytes_per_s: float = Field(description="The read rate used (per worker x workers).")
    iops: float
    block_bytes: float
