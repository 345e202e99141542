"""Where the Telegram channel's configuration comes from: `settings.telegram`.

The bot token: `METNOS_TELEGRAM_BOT_TOKEN` (or `[telegram] bot_token`), else
`METNOS_HOME/secrets/telegram.token` (which must be readable by its owner only, mode 0600).
No token: the channel stays off. `METNOS_TELEGRAM_API_BASE` points the bot at another Bot API
server (a local one, or the tests' fake); `METNOS_TELEGRAM_POLL_TIMEOUT_S` is the
long-polling wait.
"""

from __future__ import annotations

import logging
import stat
from dataclasses import dataclass, field

from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

TOKEN_FILE = "telegram.token"
DEFAULT_API_BASE = "https://api.telegram.org"
DEFAULT_POLL_TIMEOUT_S = 25  # the defaults of settings.telegram


@dataclass(frozen=True)
class TelegramConfig:
    token: str = field(repr=False)
    api_base: str = DEFAULT_API_BASE
    poll_timeout_s: int = DEFAULT_POLL_TIMEOUT_S


def load_config(settings: Settings) -> TelegramConfig | None:
    """The channel's configuration, or None when no bot token is set (the channel is off)."""
    group = settings.telegram
    configured = group.bot_token.get_secret_value().strip() if group.bot_token else ""
    token = configured or _token_file(settings)
    if not token:
        return None
    return TelegramConfig(token=token, api_base=group.api_base.strip().rstrip("/"),
                          poll_timeout_s=group.poll_timeout_s)


def _token_file(settings: Settings) -> str:
    path = settings.secrets_dir / TOKEN_FILE
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return ""
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.error("telegram.token_file_too_open path=%s mode=%o: chmod 600 it; channel off",
                  path, stat.S_IMODE(mode))
        return ""
    return path.read_text(encoding="utf-8").strip()
