"""The web chat's docs pages (issue 14): the index in the UI language, a page with its
headings anchored as the Tutor's citations link them, an executor's contract, the chat's
menu link, login as for /mnestoma, and no way out of docs/<lang>/."""

from __future__ import annotations

import re

import httpx
import pytest

from metnos.faces.gateway.routes.docs import listing, render_markdown
from metnos.features.tutor.sections import doc_sections
from metnos.ground.paths import resources_path
from tests.support.home import MakeHome, gateway_client
from tests.web.support import browser

EN = {"Accept-Language": "en"}
IT = {"Accept-Language": "it"}


def _ids(html: str) -> set[str]:
    return set(re.findall(r'id="([^"]+)"', html))


async def _pages(make_home: MakeHome, *asked: tuple[str, dict[str, str]]) -> list[httpx.Response]:
    """GET each (path, headers) from the gateway of a new home, as the owner."""
    async with gateway_client(make_home(lang="en"), prefect=False) as client:
        return [await client.get(path, headers=headers) for path, headers in asked]


async def test_index_page_and_anchors_in_the_request_language(make_home: MakeHome) -> None:
    en, it, page, twin, chat = await _pages(make_home, ("/docs", EN), ("/docs", IT),
                                            ("/docs/en/memory", EN), ("/docs/it/memoria", IT),
                                            ("/", IT))
    assert en.status_code == 200 and 'href="/docs/en/memory"' in en.text
    assert "Guide to Metnos" in en.text and "/docs/it/" not in en.text
    assert it.status_code == 200 and 'href="/docs/it/memoria"' in it.text
    assert "Guida a Metnos" in it.text and 'href="/docs/executors/fs_read"' in it.text
    assert page.status_code == 200 and 'id="what-it-remembers-the-mnestoma"' in page.text
    assert 'id="cosa-ricorda-il-mnestoma"' in twin.text and "Torna alla chat" in twin.text
    assert chat.status_code == 200 and 'href="/docs" id="show-docs"' in chat.text
    assert ">Guida</a>" in chat.text


def test_every_cited_anchor_is_an_id_of_its_page() -> None:
    """Each doc section's url (what an answer links) lands on an id of the rendered page."""
    pages = listing(resources_path("docs"))
    rendered: dict[str, set[str]] = {}
    sections = list(doc_sections(resources_path("docs")))
    assert len(sections) > 20
    for s in sections:
        path, _, anchor = s.url.partition("#")
        lang, name = path.split("/")[2], path.split("/", 3)[3]
        page = pages[lang][name]
        if path not in rendered:
            rendered[path] = _ids(render_markdown(page.path.read_text(encoding="utf-8")))
        assert not anchor or anchor in rendered[path], (s.id, s.url)


def test_raw_html_in_markdown_is_escaped() -> None:
    html = render_markdown("# T\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n")
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "href=\"javascript" not in html
    assert 'id="t"' in html


async def test_executor_contract_page(make_home: MakeHome) -> None:
    en, it, missing = await _pages(make_home, ("/docs/executors/fs_read", EN),
                                   ("/docs/executors/fs_read", IT),
                                   ("/docs/executors/no_such_tool", IT))
    assert en.status_code == 200 and 'id="contract"' in en.text and 'id="arg-path"' in en.text
    assert "The tool fs_read" in en.text and "Lo strumento fs_read" in it.text
    assert missing.status_code == 404 and "Pagina non trovata" in missing.text


@pytest.mark.attack
@pytest.mark.parametrize("path", [
    "/docs/en/../../pyproject", "/docs/en/..%2F..%2Fpyproject", "/docs/en/%2e%2e/it/memoria",
    "/docs/en/%2Fetc%2Fpasswd", "/docs/en//etc/passwd", "/docs/..%2Fmetnos/settings",
    "/docs/en/memory.md", "/docs/en/nope", "/docs/xx/memory", "/docs/en/memory%00",
    "/docs/executors/..%2Ffs_read", "/docs/en/..\\..\\pyproject",
])
async def test_traversal_and_unknown_pages_are_404(make_home: MakeHome, path: str) -> None:
    [resp] = await _pages(make_home, (path, IT))
    assert resp.status_code == 404, (path, resp.status_code)
    assert "[project]" not in resp.text and "root:" not in resp.text
    # a client may normalise `..` away before sending: then no docs route is reached at all
    assert "Pagina non trovata" in resp.text or resp.json()["error"]["key"] == "ERR_HTTP_404"


@pytest.mark.parametrize("path", ["/docs", "/docs/en/memory", "/docs/executors/fs_read"])
async def test_without_login_the_login_page_as_for_mnestoma(make_home: MakeHome,
                                                            path: str) -> None:
    home = make_home(lang="en")
    async with browser(home) as client:
        client.cookies.set("metnos_session", "forged")
        resp = await client.get(path, headers=EN)
        same = await client.get("/mnestoma", headers=EN)
    assert resp.status_code == same.status_code == 401
    assert "metnos login" in resp.text and "Guide to Metnos" not in resp.text
    assert 'metnos_session=""' in resp.headers.get("set-cookie", "")
