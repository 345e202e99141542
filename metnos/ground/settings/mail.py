"""The `[mail]` settings group: the IMAP account the digest watches (SPEC §12).

Environment variables are `METNOS_MAIL_<FIELD>`; the table in `metnos.toml` is `[mail]`. The
password is never a setting: `metnos mail add` keeps it in `secrets/mail.password` (0600),
where the secret scanner finds it like every file under `secrets/`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


class MailSettings(_Group):
    model_config = SettingsConfigDict(env_prefix="METNOS_MAIL_")

    host: str | None = Field(None, description="The IMAP server's host name; none: no mail.")
    port: int = Field(993, ge=1, le=65535, description="The IMAP server's port.")
    security: Literal["tls", "starttls", "plain"] = Field(
        "tls", description="tls (implicit, port 993), starttls (port 143), or plain: no "
        "encryption, allowed only for a loopback host (a bridge on this machine, the tests).")
    username: str | None = Field(None, description="The IMAP login name.")
    timeout_s: float = Field(20.0, gt=0, le=300, description="How long an executor waits "
                             "for the IMAP server (connect and each reply).")
    digest_cron: str = Field(
        "30 7 * * *", description="When the morning digest looks at the mailbox (cron, in the "
        "instance's time zone).")
    # the digest's own fields (metnos.features.mail.digest)
    digest_folders: list[str] = Field(
        default_factory=lambda: ["INBOX"], description="The folders the digest watches.")
    digest_max_per_day: int = Field(
        3, ge=0, le=48, description="Most digest messages a day (the scheduled runs' own "
        "quota, apart from the proposals' bother budget); past it, new mail waits for "
        "tomorrow's digest.")

    family: list[str] = Field(
        default_factory=list, description="The family's own mail addresses: their mail is "
        "always worth the digest (besides senders named as family, e.g. \"Mamma\").")

    @model_validator(mode="after")
    def _plain_only_on_loopback(self) -> MailSettings:
        if self.security == "plain" and self.host is not None and (
                self.host.lower() not in LOOPBACK_HOSTS):
            raise ValueError("security 'plain' is allowed only for a loopback host "
                             "(127.0.0.1, ::1, localhost): use tls or starttls")
        return self
