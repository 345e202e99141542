"""The web login's settings: the `[web]` group of `metnos.settings` (env `METNOS_WEB_*`)."""

from __future__ import annotations

from metnos.settings import Settings, WebSettings

__all__ = ["WebSettings", "web_settings"]


def web_settings(settings: Settings) -> WebSettings:
    """The `[web]` settings of an instance."""
    return settings.web
