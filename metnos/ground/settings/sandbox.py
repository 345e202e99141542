"""The `[sandbox]` settings group (`METNOS_SANDBOX_*`): the limits of an executor's sandbox."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class SandboxSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_SANDBOX_")

    max_output_bytes: int = Field(1_000_000, ge=1024, description="Cap on an executor's stdout.")
    max_processes: int = Field(64, ge=1, description="Process limit inside the sandbox.")
    web_allow_private: bool = Field(
        False, description="Let network executors reach loopback and private addresses "
                           "(off: the gateway, Prefect and the database stay out of reach).")
