"""Layer-3 catalog files: `<resources_root>/i18n/<lang>/<domain>.toml` (SPEC §9.3).

A value is a string (`KEY = "text {name}"`) or a plural table with CLDR categories
(`KEY = { one = "{count} file", other = "{count} files" }`; `other` required). Only the TOML
files directly inside a language folder are catalogs: subfolders (`i18n/<lang>/workspace/`,
markdown templates) and files at the top (`i18n/lang_state.json`) are not.
"""

from __future__ import annotations

import functools
import logging
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metnos.ground.errors import ConfigError

log = logging.getLogger(__name__)

Value = str | dict[str, str]
PLURAL_CATEGORIES = ("zero", "one", "two", "few", "many", "other")


@dataclass(frozen=True)
class CatalogEntry:
    """One message of one language: its value and the stem of the file it lives in."""

    value: Value
    domain: str


Catalogs = dict[str, dict[str, CatalogEntry]]


class CatalogError(ConfigError):
    """A catalog file that does not parse, or a value that is neither text nor plural table."""

    key = "ERR_I18N_CATALOG_INVALID"


def check_value(value: Any, where: str = "") -> Value:
    """`value` when it is a string or a valid plural table; ValueError saying why otherwise."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{where}: a message is a string or a table of plural forms")
    unknown = sorted(set(value) - set(PLURAL_CATEGORIES))
    if unknown:
        raise ValueError(f"{where}: {', '.join(unknown)} not CLDR plural categories "
                         f"({', '.join(PLURAL_CATEGORIES)})")
    if "other" not in value:
        raise ValueError(f"{where}: a plural table needs an `other` form")
    if not all(isinstance(form, str) for form in value.values()):
        raise ValueError(f"{where}: every plural form is a string")
    return {cat: value[cat] for cat in PLURAL_CATEGORIES if cat in value}


def read_catalog_file(path: Path) -> dict[str, Value]:
    """The messages of one file; CatalogError naming the file when it is broken."""
    try:
        values = _parsed(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as exc:
        raise CatalogError(path=str(path), detail=str(exc)) from None
    return {key: dict(value) if isinstance(value, dict) else value
            for key, value in values.items()}


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> dict[str, Value]:
    """The checked messages of a file's text, parsed once per process for the same text
    (every start, every language tool reads the same files); callers get copies."""
    data = tomllib.loads(text)
    return {str(key): check_value(value, str(key)) for key, value in data.items()}


def read_catalogs(i18n_dir: Path, *, strict: bool = True) -> Catalogs:
    """Every language folder under `i18n_dir` → {key: CatalogEntry}.

    A broken file (or a key defined in two files of one language) raises CatalogError; with
    `strict=False` the file is skipped with a logged error instead, so rendering a message
    never fails because another file is broken.
    """
    catalogs: Catalogs = {}
    for folder in language_folders(i18n_dir):
        entries = read_language(folder, strict=strict)
        if entries:
            catalogs[folder.name] = entries
    return catalogs


def language_folders(i18n_dir: Path) -> list[Path]:
    """The language folders under `i18n_dir` (`en/`, `it/`, …), sorted; none when missing."""
    if not i18n_dir.is_dir():
        return []
    return sorted(p for p in i18n_dir.iterdir() if _is_language_folder(p))


def read_language(folder: Path, *, strict: bool = True) -> dict[str, CatalogEntry]:
    """The messages of one language folder (`strict` as in `read_catalogs`)."""
    entries: dict[str, CatalogEntry] = {}
    for path in sorted(folder.glob("*.toml")):
        try:
            _merge(entries, path, read_catalog_file(path))
        except CatalogError as exc:
            if strict:
                raise
            log.error("i18n.catalog_invalid path=%s detail=%s", path, exc.vars.get("detail"))
    return entries


def _merge(entries: dict[str, CatalogEntry], path: Path, values: dict[str, Value]) -> None:
    clashes = sorted(key for key in values if key in entries)
    if clashes:
        raise CatalogError(path=str(path), detail=f"{', '.join(clashes)} already defined in "
                                                  f"{entries[clashes[0]].domain}.toml")
    entries.update((key, CatalogEntry(value, path.stem)) for key, value in values.items())


def _is_language_folder(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith((".", "_"))
