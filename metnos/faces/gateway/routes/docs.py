"""The published docs in the web chat (issue 14): `GET /docs` (the pages in the UI language,
else English, and the admitted executors), `GET /docs/{lang}/{name}` (one `docs/<lang>/` page
rendered, its headings anchored with the GitHub slugs the Tutor's citations link to) and
`GET /docs/executors/{name}` (an admitted executor's contract, from its manifest).

Authenticated as the chat is (an unauthenticated request gets the login page, 401). A page is
served only when its name is one listed from `docs/<lang>/`: the request's path is a key into
that listing, never joined to a directory. Markdown is rendered with raw HTML escaped.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from markdown_it import MarkdownIt
from markdown_it.token import Token

from metnos.faces.gateway.deps import SESSION_COOKIE, ServiceDep, authenticate
from metnos.faces.gateway.routes.web import _render, page_locale
from metnos.features.tutor.sections import _contract, front_matter, slug
from metnos.ground import i18n
from metnos.ground.paths import resources_path

router = APIRouter(tags=["docs"])

_EMPHASIS = re.compile(r"[*`_]{1,2}(.+?)[*`_]{1,2}")


@dataclass(frozen=True)
class Page:
    lang: str
    name: str   # "memory", "owner/keys": the path under docs/<lang>/ without ".md"
    path: Path
    title: str
    url: str


def docs_dir() -> Path:
    return resources_path("docs")


def listing(root: Path) -> dict[str, dict[str, Page]]:
    """lang → name → page, for every `docs/<lang>/**/*.md` (symbolic links left out)."""
    out: dict[str, dict[str, Page]] = {}
    if not root.is_dir():
        return out
    for lang_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        pages: dict[str, Page] = {}
        for path in sorted(lang_dir.rglob("*.md")):
            if path.is_symlink() or not path.is_file():
                continue
            name = path.relative_to(lang_dir).as_posix().removesuffix(".md")
            pages[name] = Page(lang_dir.name, name, path, _title(path) or name,
                               f"/docs/{lang_dir.name}/{name}")
        out[lang_dir.name] = pages
    return out


def _title(path: Path) -> str:
    _, body = front_matter(path.read_text(encoding="utf-8").lstrip("\ufeff"))
    for line in body.splitlines():
        if line.startswith("# "):
            return _EMPHASIS.sub(r"\1", line[2:].strip().rstrip("#").strip())
    return ""


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def render_markdown(text: str) -> str:
    """HTML of `text` (raw HTML escaped); every heading gets the GitHub slug as its id, with
    `-1`, `-2` for repeats, as the catalog's section anchors are made."""
    _, body = front_matter(text.replace("\r\n", "\n").lstrip("\ufeff"))
    md = _markdown()
    tokens = md.parse(body)
    seen: dict[str, int] = {}
    for n, token in enumerate(tokens):
        if token.type == "heading_open" and n + 1 < len(tokens):
            _anchor(token, tokens[n + 1], seen)
    return str(md.renderer.render(tokens, md.options, {}))


def _anchor(token: Token, inline: Token, seen: dict[str, int]) -> None:
    base = slug(_EMPHASIS.sub(r"\1", inline.content.strip()))
    count = seen.get(base, 0)
    seen[base] = count + 1
    token.attrSet("id", base if count == 0 else f"{base}-{count}")


def _login_needed(request: Request, locale: str) -> HTMLResponse:
    response = HTMLResponse(_render("login_needed.html.j2", locale), status_code=401)
    if request.cookies.get(SESSION_COOKIE) is not None:
        response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def _missing(locale: str) -> HTMLResponse:
    return HTMLResponse(_render("docs_missing.html.j2", locale), status_code=404)


async def _gate(request: Request, service: ServiceDep) -> tuple[str, HTMLResponse | None]:
    locale = page_locale(request, service.settings)
    auth = await asyncio.to_thread(authenticate, request)
    return locale, (_login_needed(request, locale) if auth.user is None else None)


@router.get("/docs", response_class=HTMLResponse, include_in_schema=False)
async def docs_index(request: Request, service: ServiceDep) -> HTMLResponse:
    locale, refused = await _gate(request, service)
    if refused is not None:
        return refused
    context = await asyncio.to_thread(index_context, locale)
    executors = sorted(spec.name for spec in service.registry.admitted)
    return HTMLResponse(_render("docs_index.html.j2", locale, executors=executors, **context))


def index_context(locale: str) -> dict[str, Any]:
    """The documents the index lists for `locale`: its own, else the English ones, marked
    with their language and announced (a language added later has no documents of its own)."""
    pages = listing(docs_dir())
    lang = locale if pages.get(locale) else i18n.FALLBACK_LANG
    return {"pages": list(pages.get(lang, {}).values()), "pages_lang": lang,
            "pages_language": i18n.display_name(lang, locale)}


@router.get("/docs/executors/{name}", response_class=HTMLResponse, include_in_schema=False)
async def executor_page(name: str, request: Request, service: ServiceDep) -> HTMLResponse:
    locale, refused = await _gate(request, service)
    if refused is not None:
        return refused
    spec = next((s for s in service.registry.admitted if s.name == name), None)
    if spec is None:
        return _missing(locale)
    langs = spec.manifest.languages()
    lang = locale if locale in langs else i18n.FALLBACK_LANG
    parts = [(s.url.partition("#")[2] or "contract", s.title, s.text.splitlines())
             for s in _contract(spec.manifest, lang)]
    return HTMLResponse(_render("docs_executor.html.j2", locale, tool=spec.name,
                                version=spec.manifest.version, parts=parts))


@router.get("/docs/{lang}/{name:path}", response_class=HTMLResponse, include_in_schema=False)
async def doc_page(lang: str, name: str, request: Request, service: ServiceDep) -> HTMLResponse:
    locale, refused = await _gate(request, service)
    if refused is not None:
        return refused
    pages = await asyncio.to_thread(listing, docs_dir())
    page = pages.get(lang, {}).get(name)
    if page is None:
        return _missing(locale)
    text = await asyncio.to_thread(page.path.read_text, encoding="utf-8")
    return HTMLResponse(_render("docs_page.html.j2", locale, page=page,
                                body=render_markdown(text)))
