"""Service settings, read from the environment."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    """Catalog files (ROOFCHECK_CHIP_CATALOG, ROOFCHECK_MODEL_CATALOG) and the database.

    DATABASE_URL defaults to an embedded SQLite file, roofcheck.db in the working directory;
    `postgresql://user@host/db` selects PostgreSQL through psycopg 3.
    ROOFCHECK_WRITE_TOKENS, ROOFCHECK_ALLOWED_HOSTS, ROOFCHECK_MAX_BODY_BYTES and
    ROOFCHECK_MAX_TRACE_BYTES, ROOFCHECK_MAX_TABLE_BYTES, ROOFCHECK_MAX_OPS_BYTES: see
    app/security.py;
    ROOFCHECK_CALCULATION_BUDGET_S and ROOFCHECK_TABLE_ROW_BUDGET_S: see app/http/budget.py;
    ROOFCHECK_BODY_TIMEOUT_S and ROOFCHECK_BODY_MIN_RATE: app/http/request_text.py;
    ROOFCHECK_TRACE_BUDGET_S, ROOFCHECK_TRACE_MEMORY_BYTES and ROOFCHECK_TRACE_SLOTS:
    app/http/isolated.py.
    """

    model_config = SettingsConfigDict(env_prefix="ROOFCHECK_", populate_by_name=True)

    chip_catalog: Path = ROOT / "chip_catalog.json"
    model_catalog: Path = Path(__file__).resolve().parent / "catalog" / "models.json"
    database_url: str = Field(
        "sqlite:///roofcheck.db",
        validation_alias=AliasChoices("DATABASE_URL", "ROOFCHECK_DATABASE_URL", "database_url"),
    )

    write_tokens: str = Field("", repr=False)
    """"owner:token,..." restricts writes to these bearer tokens (SECURITY.md); empty: open."""
    max_body_bytes: int = Field(64 * 1024, ge=1024)
    max_trace_bytes: int = Field(32 * 1024 * 1024, ge=1024)
    """A torch.profiler trace's cap (POST /check/trace, the /trace page's upload)."""
    max_table_bytes: int = Field(2 * 2**20, ge=1024)
    """A benchmark table's cap (POST /check/table): 10,000 rows of 200 bytes, with room."""
    max_ops_bytes: int = Field(2 * 2**20, ge=1024)
    """The cap of POST /check's and /expected-time's bodies, which may list a model step's
    operators: 4,096 (the most an operator list holds) of about 270 bytes, with room."""
    allowed_hosts: str = "localhost,127.0.0.1"
    """Comma-separated names the service answers for in the Host header (`*.example.com`
    for subdomains, `*` for any); other hosts get 400, which stops DNS rebinding (SECURITY.md).
    """
    body_timeout_s: float = Field(10.0, gt=0, le=300)
    """The grace a request body has to arrive, beyond one second per `body_min_rate` bytes
    received, before a 408 (app/http/request_text.py); a client slower than that would hold
    its connection for as long as it likes."""
    body_min_rate: int = Field(100_000, ge=1)
    """The slowest a request body may arrive, after its grace, in bytes per second: 0.8
    Mbit/s, a slow uplink's; a 32 MiB trace may take 10 + 336 s."""
    trace_budget_s: float = Field(10.0, gt=0, le=600)
    """How long a trace's analysis may run, in a process of its own (app/http/isolated.py),
    before it is stopped and answered 503: the densest trace the caps admit (32 MiB of
    300,000 small cpu_op events) takes about 5 s of one core of the development machine."""
    trace_memory_bytes: int = Field(512 * 2**20, ge=64 * 2**20)
    """How much memory a trace's analysis process may add to what it starts with before a
    413: that trace takes about 100 MB besides its text (twice the body) and its events'."""
    trace_slots: int = Field(2, ge=1, le=64)
    """How many traces a service process analyses at once; the others wait within their
    budget. Its memory for traces is at most trace_slots x trace_memory_bytes."""
    calculation_budget_s: float = Field(1.0, gt=0, le=60)
    """How long a request waits for a calculation before answering 503 (app/http/budget.py):
    a second, a hundred times what the slowest calculation takes."""
    table_row_budget_s: float = Field(0.0005, gt=0, le=0.1)
    """What a benchmark table's wait adds to calculation_budget_s per row (POST /check/table,
    the /table page): a table is one small calculation a row (a single kernel placed and
    judged), so its wait grows with its rows, up to 6 s for the 10,000 a table may hold; a
    request of one row still waits about one calculation's budget."""

    @property
    def hosts(self) -> list[str]:
        """`allowed_hosts` as a list (ValueError when it names none)."""
        names = [name.strip() for name in self.allowed_hosts.split(",") if name.strip()]
        if not names:
            raise ValueError("ROOFCHECK_ALLOWED_HOSTS names no host")
        return names

    @field_validator("database_url")
    @classmethod
    def _psycopg3(cls, url: str) -> str:
        """postgres:// and postgresql:// use the psycopg 3 driver."""
        for scheme in ("postgres://", "postgresql://"):
            if url.startswith(scheme):
                return "postgresql+psycopg://" + url.removeprefix(scheme)
        return url


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process's settings, read once."""
    return Settings()
