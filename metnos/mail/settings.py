"""The `[mail]` settings group: the IMAP account the digest watches (SPEC §12).

Environment variables are `METNOS_MAIL_<FIELD>`; the table in `metnos.toml` is `[mail]`. The
password is never a setting: `metnos mail add` keeps it in `secrets/`.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class MailSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="METNOS_MAIL_", extra="forbid",
                                      validate_default=True)

    host: str | None = Field(None, description="The IMAP server's host name; none: no mail.")
    port: int = Field(993, ge=1, le=65535, description="The IMAP server's port.")
    digest_cron: str = Field(
        "30 7 * * *", description="When the morning digest looks at the mailbox (cron, in the "
        "instance's time zone).")
