"""The `[attachments]` settings group: photos and documents sent in the chat (SPEC §4).

Environment variables are `METNOS_ATTACHMENTS_<FIELD>`; the table in `metnos.toml` is
`[attachments]`.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class AttachmentSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_ATTACHMENTS_")

    max_bytes: int = Field(
        20 << 20, ge=1024, le=200 << 20, description="The largest photo or document one "
        "may send; a larger one is refused before it is kept.")
    folder: str = Field(
        "inbox", min_length=1, max_length=64, pattern=r"^[^/\\.\x00-\x1f][^/\\\x00-\x1f]*$",
        description="The workspace folder a turn files what was sent into, one folder a "
        "day (inbox/2026-12-07/receipt.jpg).")
    keep_days: float = Field(
        7.0, gt=0, description="Days the bytes of a sent file are kept outside the workspace: "
        "then a file never used by a turn is forgotten (a filed one lives on in the "
        "workspace).")
