"""The web chat's vendored libraries are the files their README names (sha256), each with its
licence beside it, and the page loads every script from the gateway itself."""

from __future__ import annotations

import hashlib
import re

from metnos.faces.gateway.routes.web import STATIC_FILES, WEBCHAT

STATIC = WEBCHAT / "static"
ROW = re.compile(r"^\| `(?P<file>[\w.-]+\.js)` \|.*\((?P<licence>`LICENSE\.[\w.-]+`)\) \| "
                 r"`(?P<sha>[0-9a-f]{64})` \|$", re.MULTILINE)


def test_vendored_files_match_their_recorded_sha256_and_ship_their_licences() -> None:
    rows = list(ROW.finditer((STATIC / "README.md").read_text()))
    assert {r["file"] for r in rows} == {"markdown-it.min.js", "purify.min.js"}
    for row in rows:
        body = (STATIC / row["file"]).read_bytes()
        assert hashlib.sha256(body).hexdigest() == row["sha"], row["file"]
        assert (STATIC / row["licence"].strip("`")).stat().st_size > 1000
        assert row["file"] in STATIC_FILES  # served by the gateway


def test_the_page_loads_scripts_only_from_the_gateway() -> None:
    page = (WEBCHAT / "templates" / "chat.html.j2").read_text()
    sources = re.findall(r'<script[^>]* src="([^"]+)"', page)
    assert sources == ["/static/markdown-it.min.js", "/static/purify.min.js",
                       "/static/render.js", "/static/chat.js"]
    assert all(src.removeprefix("/static/") in STATIC_FILES for src in sources)
