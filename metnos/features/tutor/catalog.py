"""The Tutor's catalog: signed sections and their vectors in one SQLite file.

`METNOS_HOME/tutor/catalog.sqlite` holds `meta`, `sections` and `vectors` (float32 BLOBs).
The signature (Ed25519, key `keys/tutor`) covers the model identity (name, version,
dimension, each model file's sha256) and every section's id, content hash and vector hash,
all recomputed from the rows at open: one changed byte anywhere is refused. Opening also
hashes the model files again: a changed file refuses the catalog; an absent one (the
embedder cannot load) leaves it usable by its lexical index only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidSignature

from metnos.features.tutor.embedder import (
    Embedder,
    EmbedderUnavailable,
    default_embedder,
    normalise,
    sha256_file,
)
from metnos.features.tutor.sections import Section
from metnos.ground.errors import MetnosError
from metnos.ground.keys import load_public_key

SCHEMA = "2"
# how a section becomes vectors (title_weight, then its phrasings): signed, and a change of it
# recomputes every vector instead of reusing
RECIPE = "title-text-mix+phrasings/2"
# A section with phrasings (how people ask for it) scores the better of its own cosine and the
# mean of that and its nearest phrasing's: a phrasing is a short question, nearer any question
# than a passage is, so it lifts its section halfway rather than replacing its score. Measured
# with bench/tutor_eval.py (tuning set, 2026-12-06): recall@3 0.876 (nearest phrasing alone),
# 0.92 (halfway; 0.35 and 0.65 within one question of it).
PHRASING_WEIGHT = 0.5
CATALOG_NAME = "catalog.sqlite"
TABLES = {"meta", "sections", "vectors"}
FIELDS = ("id", "source", "lang", "title", "text", "kind", "audience", "url", "concept",
          "keywords")
EVERYONE = frozenset({"everyone"})

__all__ = ["Catalog", "CatalogUnavailable", "DocEntry", "Hit", "ModelInfo", "Section",
           "cached_catalog", "catalog_path", "open_catalog"]


class CatalogUnavailable(MetnosError, RuntimeError):
    """`reason`: missing, unreadable, schema, signature, vectors, model_changed, key."""

    key = "ERR_TUTOR_CATALOG_UNAVAILABLE"

    def __init__(self, reason: str) -> None:
        super().__init__(reason=reason)
        self.reason = reason


@dataclass(frozen=True)
class ModelInfo:
    name: str
    version: str
    dim: int
    files: dict[str, str] = field(default_factory=dict)  # path → sha256

    @classmethod
    def of(cls, embedder: Embedder) -> ModelInfo:
        return cls(embedder.name, embedder.version, int(embedder.dim), dict(embedder.files()))

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "dim": self.dim,
                "files": dict(sorted(self.files.items()))}


@dataclass(frozen=True)
class Hit:
    section: Section
    score: float  # cosine in [-1, 1] (lexical fallback: BM25 mapped into [0, 1))


@dataclass(frozen=True)
class DocEntry:
    source: str    # "docs/en/memory.md"
    lang: str
    name: str      # "memory.md"
    rel_path: str  # "memory.md" (inside docs/<lang>/)
    url: str       # "/docs/en/memory"
    title: str


def catalog_path(home: Path) -> Path:
    return home / "tutor" / CATALOG_NAME


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def section_hash(section: Section) -> str:
    return hashlib.sha256(canonical(asdict(section))).hexdigest()


def title_weight(section: Section) -> float:
    """A section's vector is `w·title + (1-w)·text`: a doc heading names its topic better
    than a long passage does for a sentence encoder (measured: R@3 0.50 → 0.83 on 24 it/en
    questions); a manifest's title is only the tool's name, so its text weighs more."""
    return 0.6 if section.kind == "doc" else 0.3


def embed_hash(section: Section) -> str:
    """What the vectors depend on: equal hash, same model → the vectors can be reused."""
    key = f"{title_weight(section)}\n{section.title}\n\n{section.text}\n\n{section.keywords}"
    return hashlib.sha256(key.encode()).hexdigest()


def section_rows(embedder: Embedder, sections: Sequence[Section]) -> list[np.ndarray]:
    """Per section, the rows of its stored vectors: its own vector (`section_vectors`), then
    one per phrasing of how people ask for it (docs/<lang>/keywords.toml). A question is as
    near the section as the nearest of them."""
    main = section_vectors(embedder, sections)
    phrasings = [p for s in sections for p in s.phrasings()]
    encoded = normalise(embedder.encode(phrasings)) if phrasings else main[:0]
    out, at = [], 0
    for n, s in enumerate(sections):
        k = len(s.phrasings())
        out.append(np.vstack([main[n:n + 1], encoded[at:at + k]]).astype(np.float32))
        at += k
    return out


def section_vectors(embedder: Embedder, sections: Sequence[Section]) -> np.ndarray:
    """One L2-normalised vector per section (title and text encoded apart, then mixed)."""
    if not sections:
        return np.zeros((0, int(embedder.dim)), dtype=np.float32)
    titles = embedder.encode([s.title for s in sections])
    texts = embedder.encode([s.text for s in sections])
    weights = np.array([[title_weight(s)] for s in sections], dtype=np.float32)
    return normalise(weights * titles + (1.0 - weights) * texts)


def vector_hash(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


def signed_rows(sections: Sequence[Section], blobs: Sequence[bytes]) -> list[tuple[str, ...]]:
    return [(s.id, s.lang, section_hash(s), vector_hash(b))
            for s, b in zip(sections, blobs, strict=True)]


def digest(model: ModelInfo, rows: list[tuple[str, ...]], recipe: str = RECIPE) -> bytes:
    """The signed digest: schema, model identity, recipe, (id, lang, section, vector hash)."""
    return hashlib.sha256(canonical({"schema": SCHEMA, "model": model.identity(),
                                     "recipe": recipe,
                                     "sections": [list(r) for r in rows]})).digest()


class Catalog:
    def __init__(self, path: Path, model: ModelInfo, sections: tuple[Section, ...],
                 matrix: np.ndarray, version: str, semantic: bool = True,
                 recipe: str = RECIPE, phrasings: np.ndarray | None = None,
                 owners: np.ndarray | None = None) -> None:
        self.path = path
        # the phrasings' vectors, stacked, and the index of the section each belongs to
        self.phrasings = phrasings if phrasings is not None else matrix[:0]
        self.owners = owners if owners is not None else np.zeros(0, dtype=np.int64)
        self.recipe = recipe
        self.model = model
        self.sections = sections
        self.matrix = matrix
        self.version = version
        self.semantic = semantic  # False: the model files are absent, lexical search only
        self._lexical: Any = None

    def rows(self, i: int) -> np.ndarray:
        """Section `i`'s stored rows: its vector, then its phrasings'."""
        return np.vstack([self.matrix[i:i + 1], self.phrasings[self.owners == i]])

    def vectors(self) -> dict[tuple[str, str], np.ndarray]:
        return {(s.id, s.lang): self.matrix[i] for i, s in enumerate(self.sections)}

    def _mask(self, sources: set[str] | None, audience: set[str] | frozenset[str]) -> np.ndarray:
        return np.array([s.audience in audience and (sources is None or s.source in sources)
                         for s in self.sections], dtype=bool)

    def search(self, vector: np.ndarray, *, k: int = 5, sources: set[str] | None = None,
               audience: set[str] | frozenset[str] = EVERYONE) -> list[Hit]:
        """The `k` admissible sections nearest `vector` by cosine (brute force)."""
        if not self.sections:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        query = query / norm if norm else query
        scores = self.matrix @ query
        if len(self.owners):  # nearer by its phrasings: halfway to the nearest of them
            nearest = np.full(len(scores), -np.inf, dtype=scores.dtype)
            np.maximum.at(nearest, self.owners, self.phrasings @ query)
            mixed = (1 - PHRASING_WEIGHT) * scores + PHRASING_WEIGHT * nearest
            scores = np.where(np.isfinite(nearest), np.maximum(scores, mixed), scores)
        scores = np.where(self._mask(sources, audience), scores, -np.inf)
        order = np.argsort(-scores, kind="stable")[:k]
        return [Hit(self.sections[i], float(scores[i])) for i in order if np.isfinite(scores[i])]

    def search_text(self, query: str, *, k: int = 5, sources: set[str] | None = None,
                    audience: set[str] | frozenset[str] = EVERYONE,
                    embedder: Embedder | None = None) -> list[Hit]:
        """Embed `query` and search; the lexical index when the model cannot serve."""
        vector = self.query_vector(query, embedder)
        if vector is not None:
            return self.search(vector, k=k, sources=sources, audience=audience)
        return self.search_lexical(query, k=k, sources=sources, audience=audience)

    def query_vector(self, query: str, embedder: Embedder | None = None) -> np.ndarray | None:
        """`query`'s embedding by this catalog's model; None when the catalog is lexical only,
        the model is unavailable or it is not the one the catalog was compiled with."""
        if not self.semantic:
            return None
        try:
            emb = embedder or default_embedder()
            if ModelInfo.of(emb).identity() == self.model.identity():
                return np.asarray(emb.encode([query])[0], dtype=np.float32)
        except EmbedderUnavailable:
            pass
        return None

    def search_lexical(self, query: str, *, k: int = 5, sources: set[str] | None = None,
                       audience: set[str] | frozenset[str] = EVERYONE) -> list[Hit]:
        from metnos.features.tutor.lexical import LexicalIndex

        if self._lexical is None:
            self._lexical = LexicalIndex(self.sections)
        hits: list[Hit] = self._lexical.search(query, k=k, sources=sources, audience=audience)
        return hits

    def documents(self) -> list[DocEntry]:
        """One entry per published doc page (the first section of a page gives its title)."""
        seen: dict[str, DocEntry] = {}
        for s in self.sections:
            if s.kind != "doc" or s.source in seen:
                continue
            rel = s.source.split("/", 2)[2]
            seen[s.source] = DocEntry(s.source, s.lang, rel.rsplit("/", 1)[-1], rel,
                                      s.url.split("#", 1)[0], s.title.split(" › ", 1)[0])
        return list(seen.values())


def open_catalog(home: Path) -> Catalog:
    """The admitted catalog of `home`, verified; CatalogUnavailable with a reason if not."""
    path = catalog_path(home)
    if not path.is_file():
        raise CatalogUnavailable("missing")
    return load(path, home / "keys")


_CACHE: dict[Path, tuple[tuple[Any, ...], Catalog]] = {}
_CACHE_LOCK = threading.Lock()


def _stamp(path: Path, catalog: Catalog | None) -> tuple[Any, ...]:
    files = [path, *(Path(f) for f in (catalog.model.files if catalog else {}))]
    out: list[Any] = []
    for file in files:
        try:
            st = file.stat()
            out.append((str(file), st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((str(file), None))
    return tuple(out)


def cached_catalog(home: Path) -> Catalog:
    """`open_catalog`, verified again only when the catalog file or a model file changed
    (inode, size, mtime): the turn's pre-check need not hash 32 MB of model each time."""
    path = catalog_path(home)
    with _CACHE_LOCK:
        entry = _CACHE.get(path)
        if entry is not None and entry[0] == _stamp(path, entry[1]):
            return entry[1]
    catalog = open_catalog(home)
    with _CACHE_LOCK:
        _CACHE[path] = (_stamp(path, catalog), catalog)
    return catalog


def load(path: Path, keys_dir: Path) -> Catalog:
    """Read and verify the catalog file at `path` against the `tutor` public key."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables >= TABLES:
                raise CatalogUnavailable("schema")
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            rows = db.execute(f"SELECT {', '.join(FIELDS)} FROM sections ORDER BY ord").fetchall()
            blobs = dict(((i, lang), b) for i, lang, b in
                         db.execute("SELECT id, lang, vector FROM vectors").fetchall())
    except sqlite3.Error as exc:
        raise CatalogUnavailable("unreadable") from exc
    if meta.get("schema") != SCHEMA:
        raise CatalogUnavailable("schema")
    try:
        model = ModelInfo(meta["model_name"], meta["model_version"], int(meta["model_dim"]),
                          json.loads(meta["model_files"]))
        signature = base64.b64decode(meta["signature"], validate=True)
    except (KeyError, ValueError) as exc:
        raise CatalogUnavailable("schema") from exc
    sections = tuple(Section(*row) for row in rows)
    if len(blobs) != len(sections) or any((s.id, s.lang) not in blobs for s in sections):
        raise CatalogUnavailable("vectors")
    ordered = [blobs[(s.id, s.lang)] for s in sections]
    counts = [len(b) // (4 * model.dim) if model.dim > 0 else 0 for b in ordered]
    recipe = meta.get("recipe", "")
    version = digest(model, signed_rows(sections, ordered), recipe)
    try:
        load_public_key(keys_dir, "tutor").verify(signature, version)
    except MetnosError as exc:
        raise CatalogUnavailable("key") from exc
    except InvalidSignature as exc:
        raise CatalogUnavailable("signature") from exc
    if any(n < 1 or len(b) != 4 * model.dim * n for b, n in zip(ordered, counts, strict=True)):
        raise CatalogUnavailable("vectors")
    every = _matrix(ordered, model.dim)
    heads = np.cumsum([0, *counts[:-1]]).astype(np.int64)
    rest = np.setdiff1d(np.arange(len(every)), heads)
    owners = np.repeat(np.arange(len(counts)), [n - 1 for n in counts]).astype(np.int64)
    return Catalog(path, model, sections, every[heads], version.hex(), _model_present(model),
                   recipe, every[rest], owners)


def _matrix(blobs: list[bytes], dim: int) -> np.ndarray:
    """Every stored row (a section's vector, then its phrasings'), each of unit length."""
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(-1, dim).copy()
    if not np.isfinite(matrix).all():
        raise CatalogUnavailable("vectors")
    if len(blobs) and not np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-3):
        raise CatalogUnavailable("vectors")
    return matrix


def _model_present(model: ModelInfo) -> bool:
    """True when every model file is there unchanged; False when one is absent."""
    present = True
    for name, expected in model.files.items():
        file = Path(name)
        if not file.is_file():
            present = False
            continue
        try:
            actual = sha256_file(file)
        except OSError:
            present = False
            continue
        if actual != expected:
            raise CatalogUnavailable("model_changed")
    return present
