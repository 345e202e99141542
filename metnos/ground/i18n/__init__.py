"""Layer 3 of the languages: user-facing messages (SPEC §9.3).

`get(key, lang=None, **vars)` returns the message `key` (`SCOPE_DOMAIN_DETAIL`) in `lang`
(a BCP-47 tag; the process language `METNOS_LANG` when None) with `{name}` placeholders filled.

Where messages come from:
- with a store set by `use_store(store)` (the gateway and the CLI do it at boot, after seeding
  it from the files): the i18n database only. Each language is read once into a dict and
  reloaded when `store.generation()` changed (checked at most once a second), so a
  `metnos-prompts mark-synced` in another process shows up within seconds. The files are not
  consulted: the store was seeded from them. Only when the database cannot be read does `get`
  fall back to the files (logged once), so a broken database never breaks a reply.
- without a store: the catalog files `<resources_root>/i18n/<lang>/*.toml`, read once per
  process and per resources folder (a broken file is skipped with a logged error).

Resolution: the tag is matched to an active language (`it-CH` → `it`; an unknown tag → the
process language); a key missing there comes from English (`i18n.lang_fallback`), a key missing
everywhere renders as the key itself (`i18n.missing_key`). A plural table picks its CLDR form
from the `count` variable (Babel, with the region of the tag: `pt-PT` 0 is `other`, `pt` 0 is
`one`), `other` when `count` is missing, and `{count}` is formatted as a number of that locale.
"""

from __future__ import annotations

import logging
import sqlite3
import string
import threading
import time
from collections.abc import Mapping
from datetime import date as _date
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metnos.ground.i18n import formatting
from metnos.ground.i18n.catalogs import Value, language_folders, read_language
from metnos.ground.i18n.tags import LanguageTagError, base_language, match_language
from metnos.ground.settings import get_settings

if TYPE_CHECKING:
    from metnos.ground.errors import MetnosError
    from metnos.ground.i18n.store import MessageStore

__all__ = ["FALLBACK_LANG", "Value", "catalog", "date", "display_name", "generation", "get",
           "languages",
           "lookup", "normalise_lang", "number", "use_store"]

log = logging.getLogger(__name__)

FALLBACK_LANG = "en"
REFRESH_S = 1.0  # how often the store's generation is checked


class _StoreView:
    """The active store with its per-language caches."""

    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self.lock = threading.Lock()
        self.cache: dict[str, dict[str, Value]] = {}
        self.generation = store.generation()
        self.checked_at = time.monotonic()
        self.warned = False

    def messages(self, lang: str) -> dict[str, Value]:
        now = time.monotonic()
        if now - self.checked_at >= REFRESH_S:
            with self.lock:
                self.checked_at = now
                current = self.store.generation()
                if current != self.generation:
                    self.generation, self.cache = current, {}
        found = self.cache.get(lang)
        if found is None:
            found = self.cache[lang] = self.store.catalog(lang)
        return found


_view: _StoreView | None = None
_files_by_dir: dict[Path, _FileCatalogs] = {}
_norm_cache: dict[tuple[str | None, tuple[str, ...], str], str] = {}


def use_store(store: MessageStore | None) -> None:
    """Serve messages from `store` (None: from the files again)."""
    global _view
    _view = None if store is None else _StoreView(store)


def generation() -> int:
    """The active store's generation as last checked (0 without a store): a cache keyed on
    it sees what `metnos-prompts mark-synced` changed, within `REFRESH_S`."""
    view = _view
    if view is None:
        return 0
    view.messages("en")  # refreshes the generation when it is due
    return view.generation


def get(key: str, lang: str | None = None, /, **vars: Any) -> str:
    """The message `key` in `lang`, with `{name}` placeholders filled from `vars`."""
    tag = lang or _process_tag()
    code = normalise_lang(tag)
    value = _messages(code).get(key)
    served = code
    if value is None:
        value, served = _messages(FALLBACK_LANG).get(key), FALLBACK_LANG
        if value is None:
            log.warning("i18n.missing_key key=%s lang=%s", key, code)
            return key
        log.info("i18n.lang_fallback key=%s lang=%s served=%s", key, code, served)
    locale_tag = tag if served == code and _base(tag) == code else served
    if isinstance(value, dict):
        text, vars = _plural(value, vars, locale_tag)
    else:
        text = value
    return _fill(text, vars, key, served)


def message(error: MetnosError, lang: str | None = None) -> str:
    """What `error` says to the person, in `lang` (the process language when None): its own
    words when it carries them (`text`), else its key's message with its variables."""
    return error.text if error.text is not None else get(error.key, lang, **error.vars)


def lookup(key: str, lang: str) -> Value | None:
    """The message `key` in exactly `lang`'s language (no fallback), None when missing."""
    code = _base(lang)
    return _messages(code).get(key) if code else None


def catalog(lang: str) -> dict[str, Value]:
    """All messages of one language (values: text or plural table); empty when none."""
    return dict(_messages(lang))


def languages() -> tuple[str, ...]:
    """Languages that have messages (in the active store, else in the files)."""
    view = _view
    if view is not None:
        try:
            return view.store.languages(pending=False)
        except sqlite3.Error as exc:
            _store_failed(view, exc)
    return tuple(sorted(_files().folders))


def normalise_lang(tag: str | None) -> str:
    """A BCP-47 tag reduced to an active language (`it-CH` → `it`); an unknown tag gives the
    process language; with broken settings, a language with messages, else English. Never
    raises."""
    try:
        settings = get_settings()
        active, process = settings.active_languages, settings.lang
    except Exception:  # settings broken: still speak, in `tag` when it has messages
        return (match_language(tag, languages()) if tag else None) or FALLBACK_LANG
    memo = (tag, active, process)
    found = _norm_cache.get(memo)
    if found is None:
        found = (match_language(tag, active) if tag else None) or _base(process) or FALLBACK_LANG
        if len(_norm_cache) > 4096:
            _norm_cache.clear()
        _norm_cache[memo] = found
    return found


def number(value: Any, lang: str | None = None) -> str:
    """`value` formatted for the language of `lang` (`1234.5` → `1.234,5` in Italian)."""
    return formatting.number(value, _locale_tag(lang))


def date(value: _date, lang: str | None = None, format: formatting.DateFormat = "medium") -> str:
    """A date or datetime in the CLDR format of `lang` (`full`, `long`, `medium`, `short`)."""
    return formatting.date(value, _locale_tag(lang), format)


def display_name(tag: str, in_lang: str | None = None) -> str:
    """The name of the language `tag` in `in_lang` (`pt-BR`, `it` → `portoghese (Brasile)`)."""
    return formatting.display_name(tag, _locale_tag(in_lang))


# -- internals ----------------------------------------------------------------------------
def _messages(lang: str) -> Mapping[str, Value]:
    view = _view
    if view is not None:
        try:
            return view.messages(lang)
        except sqlite3.Error as exc:
            _store_failed(view, exc)
    return _files().messages(lang)


def _store_failed(view: _StoreView, exc: Exception) -> None:
    if not view.warned:
        view.warned = True
        log.warning("i18n.store_unreadable path=%s error=%s (serving the files)",
                    view.store.path, exc)


class _FileCatalogs:
    """The catalog files of one resources folder, each language read when first asked for
    (the CLI speaks one language: it reads that one, and English only for a missing key),
    all of them read again when `metnos-prompts` changed them (its record,
    `lang_state.json`, is rewritten)."""

    def __init__(self, folder: Path, stamp: int) -> None:
        self.folder, self.stamp = folder, stamp
        self.folders = {f.name: f for f in language_folders(folder) if any(f.glob("*.toml"))}
        self.read: dict[str, dict[str, Value]] = {}

    def messages(self, lang: str) -> dict[str, Value]:
        found = self.read.get(lang)
        if found is None:
            where = self.folders.get(lang)
            entries = read_language(where, strict=False) if where is not None else {}
            found = self.read[lang] = {key: entry.value for key, entry in entries.items()}
        return found


def _files() -> _FileCatalogs:
    from metnos.ground.i18n.lexicon import resources_root

    folder = resources_root() / "i18n"  # the shipped catalogs when the settings are broken
    try:
        stamp = (folder / "lang_state.json").stat().st_mtime_ns
    except OSError:
        stamp = 0
    found = _files_by_dir.get(folder)
    if found is None or found.stamp != stamp:
        found = _files_by_dir[folder] = _FileCatalogs(folder, stamp)
    return found


def _plural(table: dict[str, str], vars: dict[str, Any], tag: str) -> tuple[str, dict[str, Any]]:
    if "count" not in vars:
        return table["other"], vars
    count = vars["count"]
    text = table.get(formatting.plural_category(count, tag)) or table["other"]
    return text, {**vars, "count": formatting.number(count, tag)}


def _fill(text: str, vars: dict[str, Any], key: str, lang: str) -> str:
    if "{" not in text and "}" not in text:
        return text
    if not _safe_fields(text):
        log.warning("i18n.bad_placeholder key=%s lang=%s", key, lang)
        return text
    if "{action}" in text and "action" not in vars and isinstance(vars.get("executor"), str):
        # a message about a step names what it does in plain words, never the tool's name
        from metnos.ground.i18n.phrases import action

        vars = {**vars, "action": action(vars["executor"], lang)}
    try:
        return text.format_map(vars)
    except (KeyError, IndexError, ValueError, TypeError):
        log.warning("i18n.bad_vars key=%s lang=%s vars=%s", key, lang, sorted(vars))
        return text


@lru_cache(maxsize=4096)
def _safe_fields(text: str) -> bool:
    """Only `{name}` fields (with an optional format spec): no attribute or index access,
    no positional fields, no nested fields."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError:
        return False
    return all(name is None or (name.isidentifier() and "{" not in (spec or ""))
               for _, name, spec, _ in parsed)


@lru_cache(maxsize=512)
def _base(tag: str | None) -> str | None:
    if not tag:
        return None
    try:
        return base_language(tag)
    except LanguageTagError:
        return None


def _process_tag() -> str:
    try:
        return get_settings().lang
    except Exception:
        return FALLBACK_LANG


def _locale_tag(lang: str | None) -> str:
    """The tag whose CLDR data formats text for `lang`: the tag itself when its language is
    the one served (`it-CH` keeps Swiss digit grouping), else the served language."""
    tag = lang or _process_tag()
    code = normalise_lang(tag)
    return tag if _base(tag) == code else code
