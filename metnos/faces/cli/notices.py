"""Messages Metnos sent while no `metnos chat` was open (a reminder set from the CLI): shown
when the next one starts, then marked delivered (`GET /api/notices`, SPEC §11)."""

from __future__ import annotations

from metnos.faces.cli._client import api_call
from metnos.faces.cli._out import echo
from metnos.ground.settings import Settings


def show_pending(settings: Settings, lang: str | None) -> int:
    """Print the CLI's due notices, oldest first; how many there were. Marked delivered only
    after they were printed."""
    found = api_call(settings, "GET", "/api/notices", params={"channel": "cli"}, lang=lang)
    notices = [n for n in found.get("notices", []) if isinstance(n, dict)]
    for item in notices:
        echo(str(item.get("text", "")))
    if notices:
        api_call(settings, "POST", "/api/notices/delivered", lang=lang,
                 body={"ids": [str(n.get("id")) for n in notices]})
    return len(notices)
