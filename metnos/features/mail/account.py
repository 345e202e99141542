"""The IMAP account of `metnos mail add`: where it is kept, and the host-only block a mail
executor gets in its stdin envelope.

Host, port, security and user name live in `[mail]` of `metnos.toml`; the password alone in
`secrets/mail.password` (0600, written atomically), so the secret scanner knows its exact
value (it reads every file under `secrets/`) and redacts it from any executor result. The
password leaves this module only inside `Account.envelope()`, which the step checker puts in
`SandboxRequest.account` (kept out of its repr): never in arguments, a prompt, a log line, the
audit or an exception message (`Account`'s repr leaves it out too).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit

from metnos.features.mail import imap
from metnos.ground import durable
from metnos.ground.errors import AccountMissing, ConfigError
from metnos.ground.settings import Settings
from metnos.ground.settings.mail import MailSettings

PASSWORD_FILE = "mail.password"
TOML_FILE = "metnos.toml"
ACCOUNT_FIELDS = ("host", "port", "security", "username")


class MailNotConfigured(AccountMissing):
    key = "ERR_MAIL_NOT_CONFIGURED"


@dataclass(frozen=True)
class Account(imap.Account):
    """The configured account: the fields the mail executors read back from the envelope
    (`metnos.features.mail.imap.Account`; `egress` is the sandbox runner's to fill)."""

    def envelope(self) -> dict[str, Any]:
        """What a mail executor reads from its stdin envelope under `account`."""
        return {**self.public(), "password": self.password, "timeout_s": self.timeout_s}

    def public(self) -> dict[str, Any]:
        """The account without its password (`metnos mail show`, a before-record)."""
        return {name: getattr(self, name) for name in ACCOUNT_FIELDS}


def password_path(home: Path) -> Path:
    return home / "secrets" / PASSWORD_FILE


def load_account(settings: Settings) -> Account:
    """The configured account; MailNotConfigured (ERR_MAIL_NOT_CONFIGURED) when the host, the
    user name or the password is missing."""
    mail = settings.mail
    try:
        password = password_path(settings.home).read_text(encoding="utf-8").rstrip("\n")
    except OSError:
        password = ""
    if not mail.host or not mail.username or not password:
        raise MailNotConfigured()
    return Account(mail.host, mail.port, mail.security, mail.username, password,
                   timeout_s=mail.timeout_s)


def is_configured(settings: Settings) -> bool:
    try:
        load_account(settings)
    except MailNotConfigured:
        return False
    return True


def save_account(home: Path, *, host: str, port: int, security: str, username: str,
                 password: str) -> None:
    """Write the account: `[mail]` of `metnos.toml` (the rest of the file kept as it is) and
    the password file. The values are validated as `MailSettings` first (plain only on a
    loopback host); ConfigError with the reason, never the password, when they do not fit."""
    try:
        MailSettings(host=host, port=port, security=security, username=username)
    except ValueError as exc:
        raise ConfigError("ERR_MAIL_ACCOUNT_INVALID", detail=_brief(exc)) from exc
    if not password or "\n" in password or "\r" in password:
        raise ConfigError("ERR_MAIL_ACCOUNT_INVALID", detail="password: empty or multi-line")
    doc = _read_toml(home)
    table = doc.get("mail")
    if table is None:
        table = tomlkit.table()
        doc["mail"] = table
    for name, value in zip(ACCOUNT_FIELDS, (host, port, security, username), strict=True):
        table[name] = value
    secret = password_path(home)
    durable.make_dir(secret.parent, 0o700)
    durable.write_atomic(secret, (password + "\n").encode("utf-8"), mode=0o600)
    durable.write_atomic(home / TOML_FILE, tomlkit.dumps(doc).encode("utf-8"), mode=0o644)


def remove_account(home: Path) -> bool:
    """Forget the account (its `[mail]` fields and the password); True if there was one."""
    found = False
    secret = password_path(home)
    if secret.exists():
        secret.unlink()
        found = True
    doc = _read_toml(home)
    table = doc.get("mail")
    if table is not None:
        for name in ACCOUNT_FIELDS:
            if name in table:
                del table[name]
                found = True
        durable.write_atomic(home / TOML_FILE, tomlkit.dumps(doc).encode("utf-8"), mode=0o644)
    return found


def _read_toml(home: Path) -> tomlkit.TOMLDocument:
    path = home / TOML_FILE
    text = ""
    with contextlib.suppress(FileNotFoundError):
        text = path.read_text(encoding="utf-8")
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.TOMLKitError as exc:
        raise ConfigError("ERR_CONFIG_TOML_INVALID", path=str(path), detail=str(exc)) from exc


def _brief(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'mail'}: {e['msg']}"
                         for e in errors()[:3])
    return str(exc)
