"""Compile the docs and the executor manifests into a new signed catalog, atomically.

The candidate is written beside the admitted one (`tutor/catalog.<random>.sqlite`), signed,
opened and verified like any reader would, and only then moved onto `catalog.sqlite` with
`os.replace`. Any failure removes the candidate: the catalog in place stays admitted.
Sections whose embedded text is unchanged under the same model reuse their vectors.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from metnos.features.tutor.catalog import (
    FIELDS,
    RECIPE,
    SCHEMA,
    CatalogUnavailable,
    ModelInfo,
    catalog_path,
    digest,
    embed_hash,
    load,
    open_catalog,
    section_rows,
    signed_rows,
)
from metnos.features.tutor.embedder import Embedder, default_embedder
from metnos.features.tutor.sections import Section, all_sections
from metnos.ground import durable
from metnos.ground.keys import ensure_keypair, load_private_key

BATCH = 32
DDL = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE sections (id TEXT NOT NULL, source TEXT NOT NULL, lang TEXT NOT NULL, "
    "title TEXT NOT NULL, text TEXT NOT NULL, kind TEXT NOT NULL, audience TEXT NOT NULL, "
    "url TEXT NOT NULL, concept TEXT NOT NULL, keywords TEXT NOT NULL, ord INTEGER NOT NULL, "
    "embed_hash TEXT NOT NULL, "
    "PRIMARY KEY (id, lang))",
    "CREATE TABLE vectors (id TEXT NOT NULL, lang TEXT NOT NULL, vector BLOB NOT NULL, "
    "PRIMARY KEY (id, lang))",
)


@dataclass(frozen=True)
class CompileReport:
    sections: int
    reused: int
    computed: int
    version: str
    seconds: float


def compile_catalog(home: Path, *, embedder: Embedder | None = None,
                    docs_dir: Path | None = None,
                    executors_dir: Path | None = None) -> CompileReport:
    """Build, sign, verify and admit a new catalog for `home`; the old one stays on failure."""
    started = time.monotonic()
    emb = embedder or default_embedder()
    sections = all_sections(docs_dir, executors_dir)
    model = ModelInfo.of(emb)
    vectors, reused = _vectors(home, model, sections, emb)
    keys_dir = home / "keys"
    ensure_keypair(keys_dir, "tutor")
    folder = home / "tutor"
    durable.make_dir(folder, 0o755)
    candidate = folder / f"catalog.{secrets.token_hex(8)}.sqlite"
    try:
        version = _write(candidate, model, sections, vectors, keys_dir)
        load(candidate, keys_dir)  # the reader's own checks, on the candidate
        durable.fsync_path(candidate)
        os.replace(candidate, catalog_path(home))
        durable.fsync_dir(folder)
    finally:
        candidate.unlink(missing_ok=True)
    return CompileReport(len(sections), reused, len(sections) - reused, version,
                         time.monotonic() - started)


def _vectors(home: Path, model: ModelInfo, sections: list[Section],
             emb: Embedder) -> tuple[list[np.ndarray], int]:
    """Per section, its vector then its phrasings' (`catalog.section_rows`): the admitted
    catalog's rows when its embedded text and model match."""
    previous: dict[str, np.ndarray] = {}
    try:
        current = open_catalog(home)
        if current.model.identity() == model.identity() and current.recipe == RECIPE:
            previous = {embed_hash(s): current.rows(i) for i, s in enumerate(current.sections)}
    except CatalogUnavailable:
        pass
    out: list[np.ndarray] = [previous.get(embed_hash(s), np.zeros((0, model.dim)))
                             for s in sections]
    missing = [i for i, s in enumerate(sections) if embed_hash(s) not in previous]
    for start in range(0, len(missing), BATCH):
        batch = missing[start:start + BATCH]
        encoded = section_rows(emb, [sections[i] for i in batch])
        for i, rows in zip(batch, encoded, strict=True):
            if rows.ndim != 2 or rows.shape[1] != model.dim:
                raise CatalogUnavailable("vectors")
            out[i] = rows
    return out, len(sections) - len(missing)


def _write(path: Path, model: ModelInfo, sections: list[Section], vectors: list[np.ndarray],
           keys_dir: Path) -> str:
    blobs = [vectors[i].astype("<f4").tobytes() for i in range(len(sections))]
    version = digest(model, signed_rows(sections, blobs))
    signature = load_private_key(keys_dir, "tutor").sign(version)
    meta = {"schema": SCHEMA, "model_name": model.name, "model_version": model.version,
            "model_dim": str(model.dim), "model_files": json.dumps(model.files, sort_keys=True),
            "recipe": RECIPE,
            "version": version.hex(), "signature": base64.b64encode(signature).decode()}
    db = sqlite3.connect(path)
    try:
        for statement in DDL:
            db.execute(statement)
        db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
        db.executemany(
            f"INSERT INTO sections ({', '.join(FIELDS)}, ord, embed_hash) "
            f"VALUES ({', '.join('?' * (len(FIELDS) + 2))})",
            [(*(getattr(s, f) for f in FIELDS), n, embed_hash(s)) for n, s in enumerate(sections)])
        db.executemany("INSERT INTO vectors VALUES (?, ?, ?)",
                       [(s.id, s.lang, b) for s, b in zip(sections, blobs, strict=True)])
        db.commit()
    finally:
        db.close()
    return version.hex()
