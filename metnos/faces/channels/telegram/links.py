"""Links in a reply shown on Telegram (issue 27): Telegram cannot open a path relative to
the gateway (`/docs/en/undo`, the Tutor's sources), so a reply never carries one there.

A markdown link `[name](/docs/...)` becomes its name, or `name (<public URL>/docs/...)` when
`[telegram] public_url` (the gateway's address as the family's phones reach it) is set; a
full `http(s)` link becomes `name (url)`; a bare relative `/docs/...` path is completed the
same way or left out. The text is still escaped by the channel's template afterwards.
"""

from __future__ import annotations

import re

_MD_LINK = re.compile(r"\[([^\[\]\n]{1,200})\]\(\s*([^()\s]{1,500})\s*\)")
_BARE_DOCS = re.compile(r"(?<![\w/:.])/docs/[\w\-./#%]*")


def _full(path: str, public_url: str) -> str:
    return public_url.rstrip("/") + path if public_url else ""


def telegram_links(text: str, public_url: str) -> str:
    """`text` with its links as Telegram can show them (see the module)."""
    def link(m: re.Match[str]) -> str:
        name, target = m.group(1).strip(), m.group(2)
        if target.startswith(("http://", "https://")):
            return f"{name} ({target})"
        full = _full(target, public_url) if target.startswith("/") else ""
        return f"{name} ({full})" if full else name

    text = _MD_LINK.sub(link, text)
    if public_url:
        return _BARE_DOCS.sub(lambda m: _full(m.group(0), public_url), text)
    return re.sub(r"[ \t]{2,}", " ", _BARE_DOCS.sub("", text))
