"""Named lists (shopping, to-do, notes...) on the host side: which list a name is, and where
its file lives.

The `lists` executor keeps each list as `lists/<id>.md` in the workspace. The host derives
that path from the list's name before the step runs (the `list_name` host check), so the
before-record and `metnos undo` cover exactly that file, as for fs_write. (The embedded
planner splits "milk, eggs and bread" into items: `metnos.mechanisms.llm.household.items_of`.)

One household, one list: a usual list has one id whatever language names it. The names
live in the lexicon layer, `[lists]` of `lexicon/<lang>/household.toml` (`shopping = ["spesa",
"lista della spesa", ...]`): every language's file is read, so "spesa", "groceries" and a
third language's "courses" are all `lists/shopping.md`, and a new language adds its names with
no code. The words that only frame a name ("the ... list", "lista della ...") are
`[words] list_frame` there. A name the lexicon does not know is its own list ("gifts").
Items are never translated: they keep the person's words.
"""

from __future__ import annotations

import logging
import re
import tomllib
import unicodedata
from functools import lru_cache
from pathlib import Path

from metnos.ground.i18n.lexicon import LEXICON_DIR, lexicon_key, resources_root

log = logging.getLogger(__name__)

LISTS_DIR = "lists"
MAX_SLUG = 60
_NOT_WORD = re.compile(r"[\W_]+")
_LexiconKey = tuple[tuple[str, tuple[str, int] | None], ...]


def list_slug(name: str) -> str:
    """`Lista della Spesa` → `lista-della-spesa`, `Città` → `citta` ('' when nothing is left)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return _NOT_WORD.sub("-", bare.casefold()).strip("-")[:MAX_SLUG].strip("-")


def list_id(name: str) -> str:
    """The list `name` is: a usual list's id (`spesa`, `the shopping list` → `shopping`), else
    the name without its frame words, as a slug (`gift list` → `gift`); '' for no letters."""
    known, frame = _tables(_lexicon_keys())
    words = list_slug(name).split("-")
    if (whole := "-".join(words)) in known:
        return known[whole]
    while words and words[0] in frame:
        words = words[1:]
    while words and words[-1] in frame:
        words = words[:-1]
    bare = "-".join(words)
    return known.get(bare, bare) if bare else whole


def list_path(name: str) -> str | None:
    """The workspace-relative file of the list `name`, or None for a name with no letters."""
    found = list_id(name)
    return f"{LISTS_DIR}/{found}.md" if found else None


def list_title(name: str, lang: str) -> str:
    """The heading of a new list's file: a usual list's first name in `lang` (`Spesa`), else
    the name as said."""
    found = list_id(name)
    names = usual_lists(lang).get(found)
    title = names[0] if names else " ".join(name.split())
    return title[:1].upper() + title[1:]


def usual_lists(lang: str) -> dict[str, tuple[str, ...]]:
    """The usual lists' ids and their names in `lang` (its lexicon's `[lists]`)."""
    return _read(lexicon_key("household", lang.split("-")[0].lower()))[0]


def aliases() -> dict[str, str]:
    """Every slug a usual list has been given a file under (`spesa`, `groceries`...) → its
    id: the files an older home may have, merged by `metnos.features.lists_merge`."""
    known, _ = _tables(_lexicon_keys())
    return {slug: found for slug, found in known.items() if slug != found}


def usual(list_id_: str) -> bool:
    """Whether `list_id_` is a usual list's id (one the lexicon names in some language)."""
    known, _ = _tables(_lexicon_keys())
    return known.get(list_id_) == list_id_


def _lexicon_keys() -> _LexiconKey:
    folder = resources_root() / LEXICON_DIR
    try:
        langs = sorted(p.name for p in folder.iterdir() if p.is_dir())
    except OSError:
        langs = []
    return tuple((lang, lexicon_key("household", lang)) for lang in langs)


@lru_cache(maxsize=8)
def _tables(keys: _LexiconKey) -> tuple[dict[str, str], frozenset[str]]:
    """(slug of every name → its list's id, the frame words' slugs) over every language."""
    known: dict[str, str] = {}
    frame: set[str] = set()
    for _, key in keys:
        lists, words = _read(key)
        for found, names in lists.items():
            known.setdefault(found, found)
            for name in names:
                known.setdefault(list_slug(name), found)
        frame.update(list_slug(w) for w in words)
    return known, frozenset(frame - {""})


@lru_cache(maxsize=16)
def _read(key: tuple[str, int] | None) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """(`[lists]`: id → names, `[words] list_frame`) of one language's household file."""
    if key is None:
        return {}, ()
    try:
        table = tomllib.loads(Path(key[0]).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.error("lists.bad_lexicon path=%s error=%s", key[0], exc)
        return {}, ()
    lists = {list_slug(str(k)): tuple(str(n) for n in v if str(n).strip())
             for k, v in table.get("lists", {}).items()
             if isinstance(v, list) and list_slug(str(k))}
    return lists, tuple(str(w) for w in table.get("words", {}).get("list_frame", ()))
