"""Settings of reminders and of the outbound delivery (`METNOS_REMINDERS_*`)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class ReminderSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_REMINDERS_")

    deployment: str = Field("reminder/at", description="The served Prefect deployment that "
                            "runs a reminder at its time (deployments/serve.py).")
    delivery_poll_s: float = Field(
        2.0, gt=0, le=60, description="How often the gateway looks for due messages to "
        "deliver (and cancelled reminders whose Prefect run is still scheduled).")
    time_scale: float = Field(
        1.0, gt=0, le=1, description="TEST ONLY: the wait until a reminder's time is "
        "multiplied by this, so 'in two minutes' arrives in seconds. Leave it at 1.")
