"""The base of every request body: unknown fields and non-finite numbers are refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Request(BaseModel):
    """A request body: extra fields forbidden, NaN and infinity refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, protected_namespaces=())
