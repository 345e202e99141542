"""The `[schedules]` settings group: the owner's scheduled tasks (SPEC §12).

Environment variables are `METNOS_SCHEDULES_<FIELD>`; the table in `metnos.toml` is
`[schedules]`.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class ScheduleSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_SCHEDULES_")

    max_tasks: int = Field(50, ge=1, le=1000, description="Scheduled tasks the owner may keep.")
    max_text: int = Field(500, ge=10, le=4000,
                          description="Longest message a scheduled task may carry.")
    deployment: str = Field("owner-task/scheduled",
                            description="The served deployment that fires the owner's tasks.")
    poll_s: float = Field(1.0, gt=0, le=60,
                          description="How often the gateway looks for tasks made due.")
    run_timeout_s: float = Field(600.0, gt=0, le=86400,
                                 description="How long a fired task's run waits for its turn "
                                 "to end before it fails (and is retried).")
    missed_grace_s: float = Field(300.0, ge=0, le=86400,
                                  description="A run later than this when the runner starts "
                                  "was missed: it is reported once.")
