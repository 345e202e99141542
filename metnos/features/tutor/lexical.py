"""The Tutor's lexical fallback: SQLite FTS5 (BM25) over the catalog's sections.

Used when the embedding model cannot load. An in-memory index, built once per catalog;
`unicode61 remove_diacritics 2` folds accents, so "perché" finds "perche". A section's
phrasings (how people ask for it, docs/<lang>/keywords.toml) are indexed with it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metnos.features.tutor.catalog import Hit
    from metnos.features.tutor.sections import Section

WORD = re.compile(r"\w+", re.UNICODE)


class LexicalIndex:
    def __init__(self, sections: Sequence[Section]) -> None:
        self.sections = tuple(sections)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE fts USING fts5(title, text, keywords, "
                         "tokenize = 'unicode61 remove_diacritics 2')")
        self._db.executemany("INSERT INTO fts(rowid, title, text, keywords) VALUES (?, ?, ?, ?)",
                             [(i, s.title, s.text, s.keywords)
                              for i, s in enumerate(self.sections)])

    def search(self, query: str, *, k: int = 5, sources: set[str] | None = None,
               audience: set[str] | frozenset[str] = frozenset({"everyone"})) -> list[Hit]:
        """The best `k` admissible sections for the words of `query` (any word: OR)."""
        from metnos.features.tutor.catalog import Hit

        words = WORD.findall(query)
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        with self._lock:
            rows = self._db.execute("SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? "
                                    "ORDER BY bm25(fts)", (match,)).fetchall()
        hits: list[Hit] = []
        for rowid, rank in rows:
            section = self.sections[rowid]
            if section.audience not in audience or (sources is not None
                                                     and section.source not in sources):
                continue
            strength = max(-float(rank), 0.0)
            hits.append(Hit(section, strength / (1.0 + strength)))
            if len(hits) == k:
                break
        return hits
