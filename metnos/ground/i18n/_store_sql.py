"""The SQL of `metnos.ground.i18n.store`: schema, integrity check and the row-level writes.

Every function here runs inside a transaction opened by `MessageStore`; none commits.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any, Literal

from metnos.ground.i18n.catalogs import CatalogEntry, Value
from metnos.ground.i18n.textnorm import value_hash

SCHEMA_VERSION = 1
RESERVED_META = frozenset({"schema", "generation"})
_CORRUPT_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    key TEXT NOT NULL, lang TEXT NOT NULL, domain TEXT NOT NULL, value TEXT,
    version_hash TEXT, file_hash TEXT, needs_translation INTEGER NOT NULL DEFAULT 0,
    source_lang TEXT, updated_at TEXT NOT NULL, PRIMARY KEY (key, lang)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS messages_by_lang ON messages (lang, needs_translation);
CREATE TABLE IF NOT EXISTS candidates (
    key TEXT NOT NULL, lang TEXT NOT NULL, value TEXT NOT NULL, source_lang TEXT NOT NULL,
    source_hash TEXT NOT NULL, translated_by TEXT NOT NULL, problems TEXT NOT NULL,
    created_at TEXT NOT NULL, PRIMARY KEY (key, lang)) WITHOUT ROWID;
"""


class Corrupt(sqlite3.DatabaseError):
    """The file is a database, but a damaged one or one of another schema."""


def prepare(conn: sqlite3.Connection, busy_ms: int) -> None:
    """Pragmas, integrity check and schema of a fresh connection; Corrupt when damaged."""
    conn.execute(f"PRAGMA busy_timeout={busy_ms}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    check = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    if check != ["ok"]:
        raise Corrupt("; ".join(str(c) for c in check[:3]))
    conn.executescript(_SCHEMA)
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    conn.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
    found = conn.execute("SELECT value FROM meta WHERE name='schema'").fetchone()[0]
    if str(found) != str(SCHEMA_VERSION):
        raise Corrupt(f"schema {found}, expected {SCHEMA_VERSION}")


def is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """True for a damaged file (not for a locked or unopenable one)."""
    if isinstance(exc, Corrupt):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in _CORRUPT_CODES


def seed_one(conn: sqlite3.Connection, known: tuple[Any, Any] | None, lang: str, key: str,
             entry: CatalogEntry) -> Literal["added", "changed"] | None:
    """Write one file entry unless its file text is unchanged since the last seed."""
    digest = value_hash(entry.value)
    if known is not None and known[0] == digest:  # file unchanged since the last seed
        if known[1] == entry.domain:
            return None
        conn.execute("UPDATE messages SET domain=? WHERE key=? AND lang=?",
                     (entry.domain, key, lang))
        return "changed"
    conn.execute(
        "INSERT INTO messages (key, lang, domain, value, version_hash, file_hash, "
        "needs_translation, source_lang, updated_at) VALUES (?,?,?,?,?,?,0,NULL,?) "
        "ON CONFLICT (key, lang) DO UPDATE SET domain=excluded.domain, value=excluded.value, "
        "version_hash=excluded.version_hash, file_hash=excluded.file_hash, "
        "needs_translation=0, updated_at=excluded.updated_at",
        (key, lang, entry.domain, dump(entry.value), digest, digest, now()))
    return "added" if known is None else "changed"


def drop_orphans(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Delete the placeholders of keys no language has text for any more."""
    orphans = [(lg, k) for lg, k in conn.execute(
        "SELECT lang, key FROM messages WHERE needs_translation=1 AND key NOT IN "
        "(SELECT key FROM messages WHERE needs_translation=0)")]
    conn.executemany("DELETE FROM messages WHERE lang=? AND key=?", orphans)
    return orphans


def upsert_text(conn: sqlite3.Connection, key: str, lang: str, value: Value,
                domain: str | None) -> int:
    """Store a reviewed text (domain: given, else the key's, else `messages`); 1 if written."""
    digest = value_hash(value)
    row = conn.execute("SELECT domain, version_hash, needs_translation FROM messages "
                       "WHERE key=? AND lang=?", (key, lang)).fetchone()
    if domain is None:
        found = row[0] if row else conn.execute(
            "SELECT MIN(domain) FROM messages WHERE key=?", (key,)).fetchone()[0]
        domain = found or "messages"
    if row is not None and (row[0], row[1], row[2]) == (domain, digest, 0):
        return 0
    conn.execute(
        "INSERT INTO messages (key, lang, domain, value, version_hash, needs_translation, "
        "updated_at) VALUES (?,?,?,?,?,0,?) ON CONFLICT (key, lang) DO UPDATE SET "
        "domain=excluded.domain, value=excluded.value, version_hash=excluded.version_hash, "
        "needs_translation=0, updated_at=excluded.updated_at",
        (key, lang, domain, dump(value), digest, now()))
    return 1


def dump(value: Value) -> str:
    return json.dumps(value, ensure_ascii=False)


def load(text: str) -> Value:
    value = json.loads(text)
    return value if isinstance(value, str) else {str(k): str(v) for k, v in value.items()}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
