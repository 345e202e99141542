"""The channels' settings groups: `[web]` (the web chat's login) and `[telegram]` (SPEC §11).

Kept beside `metnos.ground.settings` (which re-exports them) so the root stays readable.
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from metnos.ground.settings._group import _Group


class WebSettings(_Group):
    """The web chat's login (SPEC §3): one-time links from `metnos login`, cookie sessions."""

    model_config = SettingsConfigDict(env_prefix="METNOS_WEB_")

    login_token_ttl_s: int = Field(600, ge=30, description="Life of a login link (used once).")
    session_ttl_s: int = Field(30 * 86400, ge=300, description="Life of a web session (fixed).")
    login_max_failures: int = Field(
        10, ge=1, description="Failed logins of one client within login_window_s before a 429.")
    login_window_s: int = Field(900, ge=1, description="Window of the login rate limit.")


class TelegramSettings(_Group):
    """The Telegram channel (SPEC §11): on when a bot token is set here or in
    `METNOS_HOME/secrets/telegram.token` (mode 0600)."""

    model_config = SettingsConfigDict(env_prefix="METNOS_TELEGRAM_")

    bot_token: SecretStr | None = Field(None, description="The bot's token (from @BotFather).")
    api_base: str = Field("https://api.telegram.org", description="Bot API server.")
    poll_timeout_s: int = Field(25, ge=1, le=50, description="Long-polling wait.")
    public_url: str = Field(
        "", description="The gateway's address as the family's phones reach it (https://...): "
        "set, the guide's pages are linked there in Telegram replies; empty, named only.")
