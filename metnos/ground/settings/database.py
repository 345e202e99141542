"""The `[database]` and `[prefect]` settings groups (`METNOS_DATABASE_*`, `METNOS_PREFECT_*`):
Metnos's database and the Prefect server's."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class DatabaseSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_DATABASE_")

    url: str | None = Field(
        None,
        description="External PostgreSQL URL for Metnos's tables (METNOS_DATABASE_URL); "
        "unset means the embedded PostgreSQL under METNOS_HOME/pg.",
    )
    port: int = Field(42619, ge=1, le=65535,
                      description="Loopback port of the embedded PostgreSQL.")
    name: str = Field("metnos", description="Database name for Metnos's tables.")
    prefect_name: str = Field("prefect", description="Database name for the Prefect server.")


class PrefectSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_PREFECT_")

    port: int = Field(4200, ge=1, le=65535, description="Port of the Prefect server and its UI.")
    startup_timeout_s: float = Field(120.0, gt=0,
                                     description="How long to wait for it to be healthy.")
