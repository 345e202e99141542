"""Layer-3 messages: every key in Italian and English, no duplicates, placeholders aligned.

A value is a string or a plural table (`{ one = "...", other = "..." }`): the placeholders of
a table are those of all its forms together (a form may leave `{count}` out: "un file"), and
a table only uses the CLDR categories its language has (Babel), plus `other`.
"""

from __future__ import annotations

import re
import string
import tomllib
from pathlib import Path

import pytest
from babel import Locale

from metnos.ground import errors, i18n
from metnos.ground.paths import resources_path

KEY = re.compile(r"^[A-Z]+(_[A-Za-z0-9]+)+$")


def _files(lang: str) -> list[Path]:
    return sorted(resources_path("i18n", lang).glob("*.toml"))


def _placeholders(value: str | dict[str, str]) -> set[str]:
    forms = value.values() if isinstance(value, dict) else [value]
    return {name for text in forms for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("lang", ["it", "en"])
def test_no_key_is_defined_twice(lang: str) -> None:
    seen: dict[str, str] = {}
    for path in _files(lang):
        for key in tomllib.loads(path.read_text(encoding="utf-8")):
            assert key not in seen, f"{key} in both {seen[key]} and {path.name}"
            seen[key] = path.name


def test_italian_and_english_have_the_same_keys_and_placeholders() -> None:
    it, en = i18n.catalog("it"), i18n.catalog("en")
    assert sorted(set(it) ^ set(en)) == []
    for key in it:
        assert KEY.match(key), f"{key} is not SCOPE_DOMAIN_DETAIL"
        assert _placeholders(it[key]) == _placeholders(en[key]), key
        assert isinstance(it[key], dict) == isinstance(en[key], dict), f"{key}: plural in one only"


@pytest.mark.parametrize("lang", ["it", "en"])
def test_plural_tables_use_the_categories_of_their_language(lang: str) -> None:
    categories = set(Locale.parse(lang).plural_form.tags) | {"other"}
    tables = {k: v for k, v in i18n.catalog(lang).items() if isinstance(v, dict)}
    assert tables, "at least one plural table is shipped, so this check checks something"
    for key, table in tables.items():
        assert "other" in table, key
        assert set(table) <= categories, f"{key} ({lang}): {sorted(set(table) - categories)}"


def test_every_error_class_default_key_has_text() -> None:
    classes = [c for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, errors.MetnosError)]
    for cls in classes:
        assert cls.key in i18n.catalog("en"), f"{cls.__name__}.key {cls.key} has no text"


def test_bcp47_tags_resolve_and_unknown_keys_do_not_crash() -> None:
    assert i18n.normalise_lang("it-CH") == "it"
    assert i18n.normalise_lang("en_GB") == "en"
    assert i18n.get("ERR_TURN_NOT_FOUND", "it-CH", turn_id="x") == "Non esiste il turno x."
    assert i18n.get("NO_SUCH_KEY_AT_ALL", "en") == "NO_SUCH_KEY_AT_ALL"
    # a missing variable leaves the text readable instead of raising
    assert "{turn_id}" in i18n.get("ERR_TURN_NOT_FOUND", "en")
