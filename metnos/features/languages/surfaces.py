"""No English on a French surface (issue 16): every surface rendered in one language, linted.

`surface_texts(lang)` renders what a person of that language reads, from the same code and
files the product serves: the web chat's pages (the chat, the docs index, the login and
missing-page screens, as visible text and the labels of their controls), the chat channels'
templates (Telegram's approval card in each of its outcomes, the pairing message, a reply),
and every message of layer 3 as it is served to that language (the CLI's outputs and errors,
approval cards, the embedded planner's replies, the web chat's script strings), each with its
placeholders filled by neutral values. A message the language lacks is served in English, as
the product would, and is caught here.

`check_surfaces(lang)` runs `i18n_lint_text` on each text and returns those that `warn`:
`metnos-prompts check --surfaces LANG` fails on any. Text an element marks as being in
another language (`lang="en"`, such as the list of documents that exist only in English) is
left out: it says what it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jinja2

from metnos.ground import i18n
from metnos.ground.i18n.catalogs import read_catalogs
from metnos.ground.i18n.lint import i18n_lint_text

_FIELD = re.compile(r"\{([^{}]*)\}")
# which surface a message belongs to, by the start of its key (the rest: "messages")
_SURFACES = (("WEB_", "web chat"), ("CARD_", "approval card"), ("UNDO_", "approval card"),
             ("TG_", "telegram"), ("TELEGRAM_", "telegram"), ("CLI_", "cli"), ("ERR_", "cli"),
             ("MSG_", "cli"), ("EX_", "planner reply"), ("HOUSEHOLD_", "planner reply"),
             ("PLAN_", "planner reply"))
_LABELS = ("title", "aria-label", "placeholder", "alt")
# the web pages of a language as the gateway serves them, each (template name, HTML); the face
# that serves them hands them in (`metnos.faces.cli.prompts.served_pages`)
WebPages = Callable[[str], Iterable[tuple[str, str]]]


@dataclass(frozen=True)
class SurfaceText:
    surface: str  # "web chat", "telegram", "cli", ...
    name: str  # the message key, template or page
    text: str


@dataclass(frozen=True)
class SurfaceProblem:
    surface: str
    name: str
    detected: str | None
    share: float | None
    excerpt: str


def check_surfaces(lang: str, root: Path, pages: WebPages) -> list[SurfaceProblem]:
    """The surfaces of `lang` (an active language) that do not read as `lang`."""
    problems = []
    for item in surface_texts(lang, root, pages):
        found = i18n_lint_text(item.text, lang)
        if found.decision == "warn":
            excerpt = found.spans[0].text if found.spans else item.text[:80]
            problems.append(SurfaceProblem(item.surface, item.name, found.detected,
                                           found.share, excerpt))
    return problems


def surface_texts(lang: str, root: Path, pages: WebPages) -> list[SurfaceText]:
    return [*_messages(lang, root), *_channel_texts(lang, root), *_pages(lang, pages)]


# -- messages ---------------------------------------------------------------------------------
def _messages(lang: str, root: Path) -> Iterator[SurfaceText]:
    """Every message as it is served to `lang` (its own text, else the English one)."""
    catalogs = read_catalogs(root / "i18n", strict=False)
    own, fallback = catalogs.get(lang, {}), catalogs.get(i18n.FALLBACK_LANG, {})
    for key in sorted(set(own) | set(fallback)):
        entry = own.get(key) or fallback.get(key)
        if entry is None:
            continue
        values = entry.value.values() if isinstance(entry.value, dict) else [entry.value]
        for value in values:
            yield SurfaceText(_surface(key), key, _filled(str(value)))


def _surface(key: str) -> str:
    return next((name for prefix, name in _SURFACES if key.startswith(prefix)), "messages")


def _filled(text: str) -> str:
    """Placeholders replaced by a neutral value: a number (which no language owns)."""
    return _FIELD.sub("7", text)


# -- channel templates ----------------------------------------------------------------------
class _Blank(jinja2.Undefined):
    """A value a template was not given: empty, iterable, comparable."""

    def __str__(self) -> str:
        return ""

    def __iter__(self) -> Iterator[Any]:
        return iter(())


def _channel_texts(lang: str, root: Path) -> Iterator[SurfaceText]:
    folder = root / "channels"
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), autoescape=True,
                                     undefined=_Blank, trim_blocks=True, lstrip_blocks=True)
    english = folder / i18n.FALLBACK_LANG
    names = sorted(p.relative_to(english).as_posix() for p in english.rglob("*.j2")
                   if "_pending" not in p.parts)
    for name in names:
        path = f"{lang}/{name}" if (folder / lang / name).is_file() else \
            f"{i18n.FALLBACK_LANG}/{name}"
        source = (folder / path).read_text(encoding="utf-8")
        template = environment.get_template(path)
        for variant in _variants(source):
            yield SurfaceText(f"{name.split('/')[0]}", name,
                              _visible(template.render(**variant)))


def _variants(source: str) -> list[dict[str, Any]]:
    """One rendering per value a template compares a variable with (`outcome == "denied"`),
    and one with none of them."""
    return [{}] + [{var: value} for var, value in
                   re.findall(r"(\w+)\s*==\s*[\"']([^\"']+)[\"']", source)]


# -- web pages --------------------------------------------------------------------------------
def _pages(lang: str, pages: WebPages) -> Iterator[SurfaceText]:
    for page, html in pages(lang):
        yield SurfaceText("web chat" if page == "chat.html.j2" else "web pages", page,
                          _visible(html, lang))


class _Text(HTMLParser):
    """The text a person sees (and hears, from labels), outside scripts, styles and
    elements marked as another language."""

    def __init__(self, lang: str | None) -> None:
        super().__init__()
        self.lang = lang
        self.parts: list[str] = []
        self.skipping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        other = self.lang and values.get("lang") not in (None, self.lang) and tag != "html"
        if tag in ("script", "style") or other or self.skipping:
            if tag not in ("br", "meta", "link", "input", "img"):
                self.skipping.append(tag)
            return
        self.parts += [str(values[a]) for a in _LABELS if values.get(a)]

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and self.skipping[-1] == tag:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.parts.append(data.strip())


def _visible(html: str, lang: str | None = None) -> str:
    parser = _Text(lang)
    parser.feed(html)
    return "\n".join(parser.parts)
