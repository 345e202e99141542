"""`metnos.ground.i18n`: lookups from files or the store, plurals, CLDR formatting, tag matching."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.ground.i18n.store import MessageStore, open_store, seed_executor_texts
from metnos.ground.paths import resources_path
from metnos.ground.settings import get_settings
from metnos.mechanisms.executors.manifest import MANIFEST_FILE, parse_manifest
from metnos.mechanisms.executors.registry import ExecutorSpec, Registry

CORE_EN = '''
MSG_HELLO = "Hello {name}"
MSG_ONLY_EN = "only in English"
MSG_FILES = { one = "{count} file", other = "{count} files" }
MSG_DELETED = { one = "The file was deleted.", other = "The files were deleted." }
MSG_ATTR = "bad {name.__class__}"
'''
CORE_IT = '''
MSG_HELLO = "Ciao {name}"
MSG_FILES = { one = "{count} file", many = "{count} di file", other = "{count} file" }
MSG_DELETED = { one = "Il file è stato cancellato.", other = "I file sono stati cancellati." }
'''
CORE_PT = '''
MSG_FILES = { one = "{count} arquivo", other = "{count} arquivos" }
'''


@pytest.fixture
def resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A resources folder with it/en/pt catalogs; active languages it, en, pt; METNOS_LANG=it."""
    for lang, text in (("en", CORE_EN), ("it", CORE_IT), ("pt", CORE_PT)):
        (tmp_path / "res" / "i18n" / lang).mkdir(parents=True)
        (tmp_path / "res" / "i18n" / lang / "core.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("METNOS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("METNOS_LANG", "it")
    monkeypatch.setenv("METNOS_I18N_RESOURCES_DIR", str(tmp_path / "res"))
    monkeypatch.setenv("METNOS_I18N_LANGUAGES", '["en", "pt"]')
    get_settings.cache_clear()
    try:
        yield tmp_path / "res" / "i18n"
    finally:
        i18n.use_store(None)
        get_settings.cache_clear()


@pytest.fixture
def store(resources: Path, tmp_path: Path) -> Iterator[MessageStore]:
    opened = open_store(tmp_path / "home" / "i18n.sqlite", resources)
    i18n.use_store(opened)
    try:
        yield opened
    finally:
        i18n.use_store(None)
        opened.close()


def test_tags_match_active_languages(resources: Path) -> None:
    assert i18n.normalise_lang("it-CH") == "it"
    assert i18n.normalise_lang("pt_BR") == "pt"
    assert i18n.normalise_lang("de") == "it"          # valid, not active → process language
    assert i18n.normalise_lang("no such tag!") == "it"
    assert i18n.normalise_lang(None) == "it"
    assert i18n.get("MSG_HELLO", "it-CH", name="Ada") == "Ciao Ada"
    assert i18n.get("MSG_HELLO", "xx-invalid-!!", name="Ada") == "Ciao Ada"
    assert i18n.languages() == ("en", "it", "pt")


def test_broken_settings_speak_the_asked_language_else_english(
        resources: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken settings are said in the language asked for when it has messages (issue 27:
    a misspelled key, in the person's language), else in English."""
    monkeypatch.setenv("METNOS_LANG", "not a tag!")
    get_settings.cache_clear()
    assert i18n.normalise_lang("it") == "it" and i18n.normalise_lang("it-CH") == "it"
    assert i18n.normalise_lang("xx") == "en" and i18n.normalise_lang(None) == "en"
    assert i18n.get("ERR_TURN_NOT_FOUND", "xx", turn_id="7") == "There is no turn 7."


def test_fallbacks_and_placeholders(resources: Path) -> None:
    assert i18n.get("MSG_ONLY_EN", "it") == "only in English"
    assert i18n.lookup("MSG_ONLY_EN", "it") is None    # lookup never falls back
    assert i18n.lookup("MSG_ONLY_EN", "en-GB") == "only in English"
    assert i18n.lookup("MSG_ONLY_EN", "!!") is None
    assert i18n.get("MSG_NOWHERE", "it") == "MSG_NOWHERE"
    assert i18n.get("MSG_HELLO", "en") == "Hello {name}"   # missing var: readable, no raise
    assert i18n.get("MSG_ATTR", "en", name="x") == "bad {name.__class__}"  # no attribute access


@pytest.mark.parametrize(("lang", "count", "expected"), [
    ("it", 1, "1 file"),
    ("it", 0, "0 file"),
    ("it", 2, "2 file"),
    ("it", 1_000_000, "1.000.000 di file"),      # CLDR `many` in Italian
    ("it-CH", 1234, "1'234 file"),             # Swiss digit grouping
    ("en", 1, "1 file"),
    ("en", 0, "0 files"),
    ("en", 1_000_000, "1,000,000 files"),       # English has no `many`
    ("pt-BR", 0, "0 arquivo"),                  # pt (= pt-BR): 0 is `one`
    ("pt-PT", 0, "0 arquivos"),                 # pt-PT: 0 is `other`
    ("pt-PT", 1, "1 arquivo"),
])
def test_plural_forms(resources: Path, lang: str, count: int, expected: str) -> None:
    assert i18n.get("MSG_FILES", lang, count=count) == expected


def test_plural_edge_cases(resources: Path) -> None:
    assert i18n.get("MSG_FILES", "en") == "{count} files"         # no count → other
    assert i18n.get("MSG_FILES", "en", count="many") == "many files"
    assert i18n.get("MSG_DELETED", "it", count=1) == "Il file è stato cancellato."
    assert i18n.get("MSG_DELETED", "it", count=3) == "I file sono stati cancellati."
    assert i18n.get("MSG_FILES", "de", count=1_000_000) == "1.000.000 di file"  # → it


def test_numbers_dates_and_language_names(resources: Path) -> None:
    assert i18n.number(1234.5, "it") == "1.234,5"
    assert i18n.number(1234.5, "en") == "1,234.5"
    assert i18n.number(1234.5) == "1.234,5"                   # process language
    assert i18n.number(1234.5, "de") == "1.234,5"             # inactive → it
    assert i18n.date(dt.date(2026, 3, 1), "it") == "1 mar 2026"
    assert i18n.date(dt.date(2026, 3, 1), "en", format="long") == "March 1, 2026"
    assert i18n.date(dt.datetime(2026, 3, 1, 14, 5), "en", format="short") == "3/1/26, 2:05\u202fPM"
    assert i18n.date(dt.datetime(2026, 3, 1, 14, 5), "it", format="short") == "01/03/26, 14:05"
    assert i18n.display_name("pt-BR", "it") == "portoghese (Brasile)"
    assert i18n.display_name("fr", "en") == "French"
    assert i18n.display_name("qqq-invalid!", "it") == "qqq-invalid!"


def test_store_serves_and_reloads_on_generation_change(
        store: MessageStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert i18n.get("MSG_HELLO", "it", name="Ada") == "Ciao Ada"
    monkeypatch.setattr(i18n, "REFRESH_S", 3600.0)
    other = MessageStore(store.path)        # e.g. `metnos-prompts mark-synced` elsewhere
    try:
        other.set_text("MSG_HELLO", "it", "Salve {name}")
    finally:
        other.close()
    assert i18n.get("MSG_HELLO", "it", name="Ada") == "Ciao Ada"   # not checked yet
    monkeypatch.setattr(i18n, "REFRESH_S", 0.0)
    assert i18n.get("MSG_HELLO", "it", name="Ada") == "Salve Ada"


def test_store_is_the_only_source_while_readable(store: MessageStore, resources: Path) -> None:
    """Decision: with a store the files are not read (the store was seeded from them); a
    key added to the files after seeding shows after the next seed, and an unreadable store
    falls back to the files."""
    (resources / "en" / "late.toml").write_text('MSG_LATE = "late"\n', encoding="utf-8")
    assert i18n.get("MSG_LATE", "en") == "MSG_LATE"
    store.bootstrap_language("pt", "en")
    assert i18n.get("MSG_HELLO", "pt", name="Ada") == "Hello Ada"  # placeholder not served
    store.close()                                                   # unreadable from now on
    assert i18n.get("MSG_HELLO", "it", name="Ada") == "Ciao Ada"    # from the files
    assert i18n.languages() == ("en", "it", "pt")


def test_catalog_holds_text_and_plural_tables(store: MessageStore) -> None:
    catalog = i18n.catalog("it")
    assert catalog["MSG_HELLO"] == "Ciao {name}"
    assert catalog["MSG_FILES"] == {"one": "{count} file", "many": "{count} di file",
                                    "other": "{count} file"}
    catalog["MSG_HELLO"] = "mutated"
    assert i18n.catalog("it")["MSG_HELLO"] == "Ciao {name}"  # a copy


def test_tool_description_comes_from_layer_3_when_the_manifest_lacks_the_language(
        store: MessageStore) -> None:
    folder = resources_path("executors", "fs_read")
    manifest = parse_manifest(folder / MANIFEST_FILE)
    registry = Registry([ExecutorSpec(manifest, folder, "0" * 64)])
    seed_executor_texts(store, [("fs_read", "fr", "Lit un fichier.", ["lire"]),
                                ("fs_read", "it", "Testo diverso dal manifest.", ["x"])])
    assert registry.tool_specs("fr-CA")[0].description == "Lit un fichier."
    assert registry.tool_specs("it")[0].description == manifest.description["it"]
    assert registry.tool_specs("de")[0].description == manifest.description["en"]
