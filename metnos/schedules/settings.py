"""The `[schedules]` settings group: the owner's scheduled tasks (SPEC §12).

Environment variables are `METNOS_SCHEDULES_<FIELD>`; the table in `metnos.toml` is
`[schedules]`.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ScheduleSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="METNOS_SCHEDULES_", extra="forbid",
                                      validate_default=True)

    max_tasks: int = Field(50, ge=1, le=1000, description="Scheduled tasks the owner may keep.")
