"""What the stored columns hold, shared by the tables (app/db) and the bodies validated before
anything is stored or listed (app/schemas), so that neither imports the other: field lengths,
so that the database never truncates, the largest id, and where a list of measurements
stopped and how its total is counted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

ID_LENGTH = 100
LABEL_LENGTH = 200
COMMIT_LENGTH = 64
HOST_LENGTH = 255
WRITER_LENGTH = 64  # written_by: the owner of the write token
KEY_LENGTH = 200  # an Idempotency-Key header
SCOPED_KEY_LENGTH = 264  # idempotency_key: "<owner>:<Idempotency-Key>"
# the longest owner name both columns hold, with a key of KEY_LENGTH: 63
OWNER_LENGTH = min(WRITER_LENGTH, SCOPED_KEY_LENGTH - len(":") - KEY_LENGTH)
MAX_ID = 2**31 - 1  # the largest id an Integer column holds (PostgreSQL's INTEGER)


@dataclass(frozen=True, slots=True)
class Position:
    """Where a list stopped: its last row's sort key. Lists are newest first, by
    (created_at, id): unique and never altered, so the rows after a position stay the same
    rows however many are stored meanwhile (those are newer)."""

    created_at: datetime
    id: int


# A list's total is counted exactly up to this many matching rows (reading at most one more
# index entry); beyond it, estimated (the whole table) or bounded below (a filtered list).
COUNT_CAP = 1_000
TotalKind = Literal["exact", "estimate", "more_than"]
