"""Layer-3 messages: every key in Italian and English, no duplicates, placeholders aligned."""

from __future__ import annotations

import re
import string
import tomllib
from pathlib import Path

import pytest

from metnos import errors, i18n
from metnos.paths import repo_path

KEY = re.compile(r"^[A-Z]+(_[A-Za-z0-9]+)+$")


def _files(lang: str) -> list[Path]:
    return sorted(repo_path("i18n", lang).glob("*.toml"))


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


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
