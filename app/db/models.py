"""Tables: the chip-catalog versions the service has loaded, and stored measurements."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from app.columns import (
    COMMIT_LENGTH,
    HOST_LENGTH,
    ID_LENGTH,
    LABEL_LENGTH,
    SCOPED_KEY_LENGTH,
    WRITER_LENGTH,
)
from app.db.base import Base, UTCDateTime, utc_now

# the columns a list of measurements may be filtered on (besides workload_key and dates)
FILTERS = ("chip_id", "model_id", "phase", "label", "branch")


class CatalogVersionRow(Base):
    """A chip-catalog version, as loaded: its content and hash, frozen once recorded."""

    __tablename__ = "catalog_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[str] = mapped_column(String(64), unique=True)
    content_sha256: Mapped[str] = mapped_column(String(64))
    loaded_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    content: Mapped[dict[str, Any]] = mapped_column(JSON)


class MeasurementRow(Base):
    """A measured runtime with the expectation and verdict it was judged against when stored."""

    __tablename__ = "measurements"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    catalog_version: Mapped[str] = mapped_column(String(64), ForeignKey("catalog_versions.version"))
    # what ran
    chip_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    kind: Mapped[str] = mapped_column(String(20))
    model_id: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    phase: Mapped[str | None] = mapped_column(String(20))
    workload: Mapped[dict[str, Any]] = mapped_column(JSON)
    workload_key: Mapped[str] = mapped_column(String(64))
    family_key: Mapped[str] = mapped_column(String(64))
    # what was measured, as given, and its mean in seconds
    measured_values: Mapped[list[float]] = mapped_column(JSON)
    measured_unit: Mapped[str] = mapped_column(String(2))
    measured_time_s: Mapped[float] = mapped_column(Float)
    # the judgement at the time
    expected_time_s: Mapped[float] = mapped_column(Float)
    ratio: Mapped[float] = mapped_column(Float)
    verdict: Mapped[str] = mapped_column(String(40))
    expectation: Mapped[dict[str, Any]] = mapped_column(JSON)
    # expectation["tokens_per_s"] (transformers), a column so that histories need not parse
    # every row's expectation
    expected_tokens_per_s: Mapped[float | None] = mapped_column(Float)
    # context
    label: Mapped[str | None] = mapped_column(String(LABEL_LENGTH))
    git_commit: Mapped[str | None] = mapped_column(String(COMMIT_LENGTH))
    branch: Mapped[str | None] = mapped_column(String(LABEL_LENGTH))
    hostname: Mapped[str | None] = mapped_column(String(HOST_LENGTH))
    software: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    notes: Mapped[str | None] = mapped_column(Text)
    # who wrote it (the owner of its write token) and the key that makes a retried post
    # store once: "<owner>:<Idempotency-Key>", so one writer cannot replay another's
    written_by: Mapped[str | None] = mapped_column(String(WRITER_LENGTH))
    idempotency_key: Mapped[str | None] = mapped_column(String(SCOPED_KEY_LENGTH))

    # For the real queries (their plans: docs/performance.md). Lists order by (created_at, id):
    # each filter that narrows a list leads an index in that order which carries the other
    # filters, so counting and filtering read the index alone; a workload's history, previous
    # run, baseline on a branch and family each have theirs.
    __table_args__ = (
        Index("ix_measurements_created_at_id", "created_at", "id", *FILTERS),
        *(
            Index(f"ix_measurements_{lead}_list", lead, "created_at", "id", *others)
            for lead, others in (
                (lead, [c for c in FILTERS if c != lead])
                for lead in ("chip_id", "model_id", "label", "branch")
            )
        ),
        Index("ix_measurements_workload_key_created_at_id", "workload_key", "created_at", "id"),
        Index("ix_measurements_workload_key_id", "workload_key", "id"),
        Index("ix_measurements_workload_key_branch_id", "workload_key", "branch", "id"),
        Index("ix_measurements_family_key_id", "family_key", "id"),
        Index("ix_measurements_idempotency_key", "idempotency_key", unique=True),
    )


class EmpiricalProfileRow(Base):
    """Ceilings measured on a chip by `roofcheck probe`: copy bandwidth and matmul rates."""

    __tablename__ = "empirical_profiles"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    chip_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    device: Mapped[str] = mapped_column(String(HOST_LENGTH))
    backend: Mapped[str] = mapped_column(String(20))
    measured_on: Mapped[str] = mapped_column(String(10))  # ISO date the probe ran
    copy_bytes_per_s: Mapped[float] = mapped_column(Float)
    matmul_flops_per_s: Mapped[dict[str, float]] = mapped_column(JSON)
    software: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    hostname: Mapped[str | None] = mapped_column(String(HOST_LENGTH))
    # stored although its device is not the chip (the writer insisted): shown as such
    forced: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    written_by: Mapped[str | None] = mapped_column(String(WRITER_LENGTH))  # may delete it

    __table_args__ = (Index("ix_empirical_profiles_chip_id_created_at", "chip_id", "created_at"),)


class GateAlarmRow(Base):
    """An alarm the regression gate raised on a stored run (a regression, or a suspected one),
    what decided it (a confirming run) and whether someone marked it false. Kept beside the
    measurement, which an alarm's decision or mark never alters (docs/formulas.md,
    "Confirming, and false alarms")."""

    __tablename__ = "gate_alarms"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    measurement_id: Mapped[int] = mapped_column(Integer, ForeignKey("measurements.id"), unique=True)
    workload_key: Mapped[str] = mapped_column(String(64))
    raised: Mapped[str] = mapped_column(String(12))  # regression | suspected
    repeats_needed: Mapped[int | None] = mapped_column(Integer)  # of a suspected one
    # a suspected alarm decided by a confirming run: confirmed | cleared (None: open, or raised
    # as a regression outright)
    decided: Mapped[str | None] = mapped_column(String(12))
    decided_by: Mapped[int | None] = mapped_column(Integer, ForeignKey("measurements.id"))
    # the false-alarm mark: when, by whom (the owner of the write token), why
    marked_false_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    marked_false_by: Mapped[str | None] = mapped_column(String(WRITER_LENGTH))
    marked_false_note: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (Index("ix_gate_alarms_workload_key_id", "workload_key", "id"),)
