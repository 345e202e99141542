"""The household's time zone: the machine's by default (`METNOS_TIMEZONE` overrides it)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def system_timezone() -> str:
    """The machine's IANA time zone: `TZ`, else the `/etc/localtime` link, else
    `/etc/timezone`, else UTC."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        target = os.readlink("/etc/localtime")
        candidates.append(target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "")
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    for name in candidates:
        if name and known_zone(name):
            return name
    return "UTC"


def known_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True
