"""The i18n database (SPEC §1, §9.3): layer-3 messages, seeded from `i18n/<lang>/*.toml`.

`METNOS_HOME/i18n.sqlite`, stdlib sqlite3 in WAL mode, one connection guarded by a lock (the
gateway's threads share it; other processes open their own). Every write is one
`BEGIN IMMEDIATE` transaction, so a crash halfway leaves the database as it was, and every
write that changed something bumps `generation()` (readers reload their caches on a change).

Rows: `messages(key, lang, domain, value JSON, version_hash, file_hash, needs_translation,
source_lang, updated_at)`. `file_hash` is the hash of the file text last seeded into the row
(NULL for rows the files never held: executor texts, `set_text` of a language without files,
`bootstrap_language` placeholders). `seed` writes a row only when its file text changed since
the last seed, so a `set_text` on a file language survives reseeding until the file is edited.
A placeholder row (`needs_translation=1`, value NULL) is never served. Executor texts are rows
`EX_DESCRIPTION_<name>` (the text) and `EX_AFFINITY_<name>` (the words joined by ", "; read
them back with `affinity_words`), domain `executors`. Languages are stored by base code.

A database that is not a database, is damaged or has another schema is renamed aside
(`i18n.sqlite.broken-<ts>`) and rebuilt empty, with a logged warning: `open_store` then seeds it
from the files, so nothing user-facing breaks.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from metnos.ground.i18n import _store_sql as sql
from metnos.ground.i18n.catalogs import CatalogEntry, Value, check_value, read_catalogs
from metnos.ground.i18n.tags import base_language

__all__ = ["CandidateRow", "CatalogEntry", "MessageStore", "SeedReport", "affinity_text",
           "affinity_words", "open_store", "read_catalogs", "seed_executor_texts"]

log = logging.getLogger(__name__)

EXECUTORS_DOMAIN = "executors"


@dataclass(frozen=True)
class SeedReport:
    """What a seed changed, as sorted `(lang, key)` pairs."""

    added: list[tuple[str, str]] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)


@dataclass(frozen=True)
class CandidateRow:
    """A machine translation waiting for review (never served)."""

    key: str
    lang: str
    value: Value
    source_lang: str
    source_hash: str
    translated_by: str
    problems: list[str]
    created_at: str


class MessageStore:
    """Layer-3 messages in SQLite. Languages are stored by base code (`pt-BR` → `pt`)."""

    def __init__(self, path: Path, *, busy_timeout_s: float = 5.0) -> None:
        self.path = path
        self.recovered_from: Path | None = None  # where a broken database was moved
        self._timeout = busy_timeout_s
        self._lock = threading.RLock()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if not sql.is_corrupt(exc):
                raise
            self.recovered_from = self._move_aside(exc)
            self._conn = self._open()

    # -- reading ---------------------------------------------------------------------------
    def lookup(self, key: str, lang: str) -> Value | None:
        """The text of `key` in `lang`, None when missing or still waiting for translation."""
        row = self._one("SELECT value FROM messages WHERE key=? AND lang=? AND "
                        "needs_translation=0", (key, _base_or_self(lang)))
        return None if row is None or row[0] is None else sql.load(row[0])

    def catalog(self, lang: str) -> dict[str, Value]:
        """Every served message of `lang` (placeholders left out)."""
        rows = self._all("SELECT key, value FROM messages WHERE lang=? AND needs_translation=0 "
                         "AND value IS NOT NULL", (_base_or_self(lang),))
        return {key: sql.load(value) for key, value in rows}

    def languages(self, *, pending: bool = True) -> tuple[str, ...]:
        """Languages with rows; `pending=False`: only those with at least one served text."""
        where = "" if pending else " WHERE needs_translation=0"
        return tuple(r[0] for r in self._all(f"SELECT DISTINCT lang FROM messages{where} "
                                             "ORDER BY lang", ()))

    def pending(self, lang: str) -> list[str]:
        """Keys of `lang` still waiting for a translation."""
        rows = self._all("SELECT key FROM messages WHERE lang=? AND needs_translation=1 "
                         "ORDER BY key", (_base_or_self(lang),))
        return [r[0] for r in rows]

    def domain(self, key: str) -> str | None:
        row = self._one("SELECT domain FROM messages WHERE key=? ORDER BY needs_translation "
                        "LIMIT 1", (key,))
        return None if row is None else str(row[0])

    def candidates(self, lang: str | None = None) -> list[CandidateRow]:
        query = ("SELECT key, lang, value, source_lang, source_hash, translated_by, problems, "
                 "created_at FROM candidates")
        rows = (self._all(query + " ORDER BY lang, key", ()) if lang is None else
                self._all(query + " WHERE lang=? ORDER BY key", (_base_or_self(lang),)))
        return [CandidateRow(k, lg, sql.load(v), sl, sh, tb, list(json.loads(p)), ca)
                for k, lg, v, sl, sh, tb, p, ca in rows]

    def generation(self) -> int:
        """A counter bumped by every write that changed something (in any process)."""
        row = self._one("SELECT value FROM meta WHERE name='generation'", ())
        return 0 if row is None else int(row[0])

    # -- writing ---------------------------------------------------------------------------
    def seed(self, catalogs: Mapping[str, Mapping[str, CatalogEntry]]) -> SeedReport:
        """Bring the file-backed rows in line with `catalogs` (one transaction; idempotent)."""
        report = SeedReport()
        with self._write() as conn:
            known = {(lg, k): (fh, dom) for k, lg, fh, dom in conn.execute(
                "SELECT key, lang, file_hash, domain FROM messages")}
            for lang, entries in catalogs.items():
                for key, entry in entries.items():
                    done = sql.seed_one(conn, known.get((lang, key)), lang, key, entry)
                    if done is not None:
                        getattr(report, done).append((lang, key))
            wanted = {(lang, key) for lang, entries in catalogs.items() for key in entries}
            gone = [(lg, k) for (lg, k), (fh, _) in known.items()
                    if fh is not None and (lg, k) not in wanted]
            conn.executemany("DELETE FROM messages WHERE lang=? AND key=?", gone)
            report.removed.extend(gone)
            report.removed.extend(sql.drop_orphans(conn))
        for part in (report.added, report.changed, report.removed):
            part.sort()
        return report

    def set_text(self, key: str, lang: str, value: Value, domain: str | None = None) -> None:
        """Store a reviewed text (clears `needs_translation`)."""
        self.set_texts([(key, lang, value)], domain)

    def set_texts(self, items: Iterable[tuple[str, str, Value]], domain: str | None = None) -> int:
        """`set_text` for many rows in one transaction; returns how many rows changed."""
        rows = [(key, base_language(lang), check_value(value, key)) for key, lang, value in items]
        changed = 0
        with self._write() as conn:
            for key, lang, value in rows:
                changed += sql.upsert_text(conn, key, lang, value, domain)
        return changed

    def bootstrap_language(self, lang: str, source_lang: str) -> int:
        """A placeholder row (`needs_translation=1`) for every key `lang` lacks; idempotent."""
        lang, source = base_language(lang), base_language(source_lang)
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO messages (key, lang, domain, value, needs_translation, source_lang,"
                " updated_at) SELECT key, ?, MIN(domain), NULL, 1, ?, ? FROM messages "
                "WHERE needs_translation=0 AND key NOT IN (SELECT key FROM messages WHERE "
                "lang=?) GROUP BY key", (lang, source, sql.now(), lang))
            return max(cur.rowcount, 0)

    def put_candidate(self, key: str, lang: str, value: Value, source_lang: str,
                      source_hash: str, translated_by: str, problems: Iterable[str] = ()) -> None:
        """Store (or replace) the candidate translation of `key` in `lang`."""
        row = (key, base_language(lang), json.dumps(check_value(value, key), ensure_ascii=False),
               source_lang, source_hash, translated_by,
               json.dumps([str(p) for p in problems], ensure_ascii=False), sql.now())
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO candidates VALUES (?,?,?,?,?,?,?,?)", row)

    def drop_candidate(self, key: str, lang: str) -> bool:
        with self._write() as conn:
            cur = conn.execute("DELETE FROM candidates WHERE key=? AND lang=?",
                               (key, base_language(lang)))
            return cur.rowcount > 0

    def get_meta(self, name: str) -> str | None:
        """A free-form setting kept with the messages (e.g. `lang_source:fr`)."""
        row = self._one("SELECT value FROM meta WHERE name=?", (name,))
        return None if row is None else str(row[0])

    def set_meta(self, name: str, value: str) -> None:
        if name in sql.RESERVED_META:
            raise ValueError(f"meta {name!r} belongs to the store")
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> MessageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing --------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None,
                               check_same_thread=False)
        try:
            sql.prepare(conn, int(self._timeout * 1000))
        except BaseException:
            conn.close()
            raise
        return conn

    def _move_aside(self, exc: sqlite3.DatabaseError) -> Path:
        aside = self.path.with_name(f"{self.path.name}.broken-{time.strftime('%Y%m%d%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{self.path}{suffix}")
            if part.exists():
                part.replace(Path(f"{aside}{suffix}"))
        log.warning("i18n.store_rebuilt path=%s aside=%s reason=%s", self.path, aside, exc)
        return aside

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                before = conn.total_changes
                yield conn
                if conn.total_changes != before:
                    conn.execute("UPDATE meta SET value=CAST(value AS INTEGER)+1 "
                                 "WHERE name='generation'")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _one(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._conn.execute(sql, args).fetchone()
            return row

    def _all(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._conn.execute(sql, args).fetchall())


def open_store(path: Path, i18n_dir: Path) -> MessageStore:
    """The store at `path`, seeded from the catalog files of `i18n_dir` (what boot calls)."""
    store = MessageStore(path)
    report = store.seed(read_catalogs(i18n_dir))
    if report.total:
        log.info("i18n.store_seeded added=%d changed=%d removed=%d",
                 len(report.added), len(report.changed), len(report.removed))
    return store


def seed_executor_texts(store: MessageStore,
                        items: Iterable[tuple[str, str, str, Iterable[str]]]) -> int:
    """Executor texts as layer-3 rows: `(name, lang, description, affinity)` →
    `EX_DESCRIPTION_<name>` (the text) and `EX_AFFINITY_<name>` (the words joined by ", ",
    see `affinity_text`), domain `executors`. Returns how many rows changed."""
    rows: list[tuple[str, str, Value]] = []
    for name, lang, description, affinity in items:
        rows.append((f"EX_DESCRIPTION_{name}", lang, description))
        rows.append((f"EX_AFFINITY_{name}", lang, affinity_text(affinity)))
    return store.set_texts(rows, EXECUTORS_DOMAIN)


def affinity_text(words: Iterable[str]) -> str:
    """How an affinity list is stored: the words joined by ", " (commas inside words dropped)."""
    return ", ".join(w.replace(",", " ").strip() for w in words if w.strip())


def affinity_words(text: str) -> list[str]:
    """The affinity list back from its stored text."""
    return [w.strip() for w in text.split(",") if w.strip()]


@lru_cache(maxsize=256)
def _base_or_self(lang: str) -> str:
    try:
        return base_language(lang)
    except ValueError:
        return lang


