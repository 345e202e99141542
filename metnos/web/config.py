"""The web login's settings, with their defaults.

They belong in `metnos/settings.py` as a `[web]` group (env `METNOS_WEB_*`); until that group
exists, `web_settings` reads whatever of these fields `settings.web` has and keeps the defaults
for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class WebSettings:
    login_token_ttl_s: int = 600  # a login link works for 10 minutes, once
    session_ttl_s: int = 30 * 86400  # a web session lasts 30 days (fixed, not sliding)
    login_max_failures: int = 10  # failed logins of one client within `login_window_s`...
    login_window_s: int = 900  # ...before its attempts get a 429 until the window frees up


def web_settings(settings: Any = None) -> WebSettings:
    """The web settings of `settings` (its `web` group when it has one), else the defaults."""
    group = getattr(settings, "web", None)
    if group is None:
        return WebSettings()
    values = {f.name: getattr(group, f.name) for f in fields(WebSettings) if hasattr(group, f.name)}
    return WebSettings(**values)
