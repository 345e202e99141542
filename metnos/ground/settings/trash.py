"""The `[trash]` settings group: how long the copies kept for undo live (SPEC §5).

Environment variables are `METNOS_TRASH_<FIELD>`; the table in `metnos.toml` is `[trash]`.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class TrashSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_TRASH_")

    max_age_days: float = Field(
        30.0, ge=0, description="Copies from before a change (and deleted files) older than "
        "this are cleared, oldest first; that change can then no longer be undone "
        "(0 = no age limit).")
    max_bytes: int = Field(
        1 << 30, ge=0, description="The most the kept copies may take together; beyond it the "
        "oldest are cleared first (0 = no size limit).")
    check_every_s: float = Field(
        3600.0, ge=60, description="How often the running instance applies the two limits "
        "(and once at start).")
