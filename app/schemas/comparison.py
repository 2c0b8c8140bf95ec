"""GET /compare and POST /compare: one transformer workload over several chips."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator

from app.engine import Bound, Dtype, Software
from app.schemas.answers import ChipRef, ModelRef, _Out
from app.schemas.echo import EchoedWorkload
from app.schemas.queries import reading_order
from app.schemas.request_base import Request
from app.schemas.requests import (
    NAME,
    STACK_DEFAULT,
    CatalogVersionName,
    ChipName,
    StackName,
    TransformerFields,
    TransformerWorkload,
)

MAX_CHIPS = 16
MAX_PRICE = 1e6  # USD per chip-hour: far above any rental or amortised price

Price = Annotated[float, Field(gt=0, le=MAX_PRICE, description="USD per chip-hour.")]

_NAME = r"[A-Za-z0-9._/-]{1,200}"
_NUMBER = r"[0-9][0-9.eE+-]{0,30}"
_CHIPS = rf"^\s*{_NAME}(\s*,\s*{_NAME})*\s*$"
_PRICES = rf"^\s*{_NAME}\s*:\s*{_NUMBER}(\s*,\s*{_NAME}\s*:\s*{_NUMBER})*\s*$"


class CompareRequest(Request):
    """A transformer workload on each of several chips, with optional prices."""

    chips: list[ChipName] = Field(
        min_length=1,
        max_length=MAX_CHIPS,
        description=f"1 to {MAX_CHIPS} catalog ids or aliases, each a different chip.",
    )
    catalog_version: CatalogVersionName = None
    stack: StackName = STACK_DEFAULT
    workload: TransformerWorkload
    price_per_hour: Price | None = Field(
        None, description="USD per chip-hour, for every chip without its own price."
    )
    prices: dict[ChipName, Price] | None = Field(
        None,
        max_length=MAX_CHIPS,
        description="USD per chip-hour by chip (a name from `chips`, or any name of the chip).",
    )


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",")]


def _prices(value: str) -> dict[str, float]:
    pairs = [part.split(":") for part in _split(value)]
    return {name.strip(): float(price) for name, price in pairs}


class CompareQuery(TransformerFields):
    """GET query parameters of /compare (the POST body's fields, flat)."""

    model_config = ConfigDict(json_schema_extra=reading_order)

    chips: str = Field(
        max_length=4000,
        pattern=_CHIPS,
        description=f"Comma-separated catalog ids or aliases, 1 to {MAX_CHIPS}, e.g. a100,h100.",
    )
    model: Annotated[str, NAME] = Field(description="Catalog id or alias, e.g. llama-8b.")
    catalog_version: CatalogVersionName = None
    stack: StackName = STACK_DEFAULT
    price_per_hour: Price | None = Field(
        None, description="USD per chip-hour, for every chip without its own price."
    )
    prices: str | None = Field(
        None,
        max_length=4000,
        pattern=_PRICES,
        description="USD per chip-hour by chip, e.g. a100:1.8,h100:3.2.",
    )

    @field_validator("chips")
    @classmethod
    def _chip_count(cls, value: str) -> str:
        if len(_split(value)) > MAX_CHIPS:
            raise ValueError(f"give 1 to {MAX_CHIPS} chips")
        return value

    @field_validator("prices")
    @classmethod
    def _price_values(cls, value: str | None) -> str | None:
        if value is None:
            return None
        for name, price in _prices(value).items():
            if not 0 < price <= MAX_PRICE:  # float() took care of the syntax
                raise ValueError(f"{name}: a price is a number in (0, {MAX_PRICE:g}] USD/hour")
        return value

    def to_body(self) -> CompareRequest:
        """The equivalent POST body."""
        fields = self.__dict__
        workload = TransformerWorkload.model_validate(
            {name: fields[name] for name in _WORKLOAD_FIELDS}
        )
        return CompareRequest(
            chips=_split(self.chips),
            catalog_version=self.catalog_version,
            stack=self.stack,
            workload=workload,
            price_per_hour=self.price_per_hour,
            prices=None if self.prices is None else _prices(self.prices),
        )


_WORKLOAD_FIELDS = set(TransformerFields.model_fields) | {"model"}


class ChipRow(_Out):
    """The workload on one chip. Times, rates and energy are those of the whole workload (all
    its chips: tp for inference, tp x dp x pp for training)."""

    chip: ChipRef
    rank: int | None = Field(
        description="1 = most realistic tokens/s among the chips it fits on; chips it does not "
        "fit on rank after those; null on a row with an error."
    )
    error: str | None = Field(
        None, description="Why this chip has no figures (e.g. it lacks the dtype asked for)."
    )
    dtype: Dtype | None = Field(None, description="The compute dtype used on this chip.")
    chips: int | None = Field(None, description="Chips the workload runs on (tp, or training's).")
    expected_time_s: float | None = Field(None, description="Ideal roofline time of one step.")
    realistic_time_s: float | None = Field(None, description="Realistic time of one step.")
    realistic_tokens_per_s: float | None = None
    fits: bool | None = None
    memory_required_bytes: float | None = None
    memory_available_bytes: float | None = None
    bound: Bound | None = None
    board_power_w: float | None = Field(
        None, description="The catalog's maximum board power per chip; null: not sourced."
    )
    energy_per_token_j: float | None = Field(
        None,
        description="board power x chips / realistic tokens/s: an upper bound (full board "
        "power throughout); null where the board power is unknown.",
    )
    price_per_hour: float | None = Field(None, description="USD per chip-hour used.")
    cost_per_million_tokens_usd: float | None = Field(
        None, description="price / 3600 x chips / realistic tokens/s x 10^6; null without price."
    )
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(
        default_factory=list, description="Defaults this chip needed (e.g. fp16 for bf16)."
    )


class Comparison(_Out):
    """A transformer workload on each chip, ranked by realistic tokens/s."""

    catalog_version: str
    model: ModelRef
    workload: EchoedWorkload = Field(description="The fields that apply to its phase.")
    stack: Software
    ranked_by: Literal["realistic_tokens_per_s"] = "realistic_tokens_per_s"
    rows: list[ChipRow]
    assumptions: list[str]
