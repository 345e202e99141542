"""The i18n database (layer 3): catalog files, seeding, placeholders, candidates, recovery."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.ground.errors import ConfigError
from metnos.ground.i18n.catalogs import CatalogEntry, read_catalogs
from metnos.ground.i18n.store import (
    MessageStore,
    affinity_words,
    open_store,
    seed_executor_texts,
)


def _write(root: Path, lang: str, domain: str, text: str) -> Path:
    path = root / lang / f"{domain}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def i18n_dir(tmp_path: Path) -> Path:
    root = tmp_path / "i18n"
    _write(root, "en", "core", 'MSG_A = "A {name}"\nMSG_B = "B"\n'
                               'MSG_N = { one = "{count} file", other = "{count} files" }\n')
    _write(root, "en", "turns", 'MSG_T = "T"\n')
    _write(root, "it", "core", 'MSG_A = "A it {name}"\nMSG_B = "B it"\n'
                               'MSG_N = { one = "{count} file", other = "{count} file" }\n')
    _write(root, "it", "turns", 'MSG_T = "T it"\n')
    (root / "it" / "workspace").mkdir()
    (root / "it" / "workspace" / "SOUL.md").write_text("# not a catalog\n")
    (root / "it" / "workspace" / "x.toml").write_text("NOT = 'read'\n")
    (root / "lang_state.json").write_text("{}")
    return root


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore(tmp_path / "i18n.sqlite") as opened:
        yield opened


def test_read_catalogs_domains_plurals_and_subfolders_ignored(i18n_dir: Path) -> None:
    catalogs = read_catalogs(i18n_dir)
    assert sorted(catalogs) == ["en", "it"]
    assert sorted(catalogs["it"]) == ["MSG_A", "MSG_B", "MSG_N", "MSG_T"]  # no NOT
    assert catalogs["it"]["MSG_T"] == CatalogEntry("T it", "turns")
    assert catalogs["en"]["MSG_N"].value == {"one": "{count} file", "other": "{count} files"}


@pytest.mark.parametrize("text", [
    'MSG_X = "unterminated\n',
    'MSG_X = { one = "a" }\n',                      # no `other`
    'MSG_X = { one = "a", lots = "b", other = "c" }\n',  # not a CLDR category
    'MSG_X = 3\n',
    'MSG_X = { other = 3 }\n',
])
def test_a_broken_catalog_is_a_config_error_naming_the_file(i18n_dir: Path, text: str) -> None:
    bad = _write(i18n_dir, "it", "broken", text)
    with pytest.raises(ConfigError) as caught:
        read_catalogs(i18n_dir)
    assert caught.value.key == "ERR_I18N_CATALOG_INVALID"
    assert caught.value.vars["path"] == str(bad)
    assert str(bad) in i18n.message(caught.value, "en")
    lenient = read_catalogs(i18n_dir, strict=False)  # the rest still reads
    assert "MSG_A" in lenient["it"] and "MSG_X" not in lenient["it"]


def test_a_key_in_two_files_of_one_language_is_refused(i18n_dir: Path) -> None:
    _write(i18n_dir, "en", "zzz", 'MSG_B = "again"\n')
    with pytest.raises(ConfigError, match="MSG_B"):
        read_catalogs(i18n_dir)


def test_seeding_is_idempotent_and_reports_changes(store: MessageStore, i18n_dir: Path) -> None:
    first = store.seed(read_catalogs(i18n_dir))
    assert len(first.added) == 8 and not first.changed and not first.removed
    generation = store.generation()
    assert store.seed(read_catalogs(i18n_dir)).total == 0
    assert store.generation() == generation  # nothing written, caches stay valid

    # a reformat is not an edit; an edit, a move to another file and a removal are
    _write(i18n_dir, "en", "core", "MSG_A = 'A {name}'  \n"
                                   'MSG_N = { other = "{count} files", one = "{count} file" }\n'
                                   'MSG_B2 = "new"\n')
    _write(i18n_dir, "en", "turns", 'MSG_T = "T"\nMSG_B = "B edited"\n')
    report = store.seed(read_catalogs(i18n_dir))
    assert report.added == [("en", "MSG_B2")]
    assert report.changed == [("en", "MSG_B")]
    assert report.removed == []
    assert store.lookup("MSG_B", "en") == "B edited"
    assert store.domain("MSG_B2") == "core"
    (i18n_dir / "en" / "turns.toml").unlink()
    report = store.seed(read_catalogs(i18n_dir))
    assert report.removed == [("en", "MSG_B"), ("en", "MSG_T")]
    assert store.lookup("MSG_T", "en") is None and store.lookup("MSG_T", "it") == "T it"
    assert store.generation() > generation


def test_bootstrap_language_twice_adds_nothing(store: MessageStore, i18n_dir: Path) -> None:
    store.seed(read_catalogs(i18n_dir))
    assert store.bootstrap_language("fr", "en") == 4
    assert store.bootstrap_language("fr", "en") == 0
    assert store.pending("fr") == ["MSG_A", "MSG_B", "MSG_N", "MSG_T"]
    assert store.lookup("MSG_A", "fr") is None  # a placeholder is never served
    assert store.catalog("fr") == {}
    assert store.languages() == ("en", "fr", "it")
    assert store.languages(pending=False) == ("en", "it")

    store.set_text("MSG_A", "fr", "A fr {name}")
    assert store.lookup("MSG_A", "fr-CA") == "A fr {name}"
    assert store.domain("MSG_A") == "core"
    assert store.pending("fr") == ["MSG_B", "MSG_N", "MSG_T"]
    # reseeding keeps the rows of a language without files, placeholders included
    assert store.seed(read_catalogs(i18n_dir)).total == 0
    assert store.lookup("MSG_A", "fr") == "A fr {name}"
    assert len(store.pending("fr")) == 3
    # a key gone from every file takes its placeholders with it
    for lang in ("en", "it"):
        _write(i18n_dir, lang, "turns", "")
    report = store.seed(read_catalogs(i18n_dir))
    assert ("fr", "MSG_T") in report.removed and "MSG_T" not in store.pending("fr")


def test_set_text_on_a_file_language_survives_until_the_file_changes(
        store: MessageStore, i18n_dir: Path) -> None:
    store.seed(read_catalogs(i18n_dir))
    store.set_text("MSG_B", "it", "B rivisto")
    assert store.seed(read_catalogs(i18n_dir)).total == 0
    assert store.lookup("MSG_B", "it") == "B rivisto"
    _write(i18n_dir, "it", "core", 'MSG_A = "A it {name}"\nMSG_B = "B dal file"\n'
                                   'MSG_N = { one = "{count} file", other = "{count} file" }\n')
    assert store.seed(read_catalogs(i18n_dir)).changed == [("it", "MSG_B")]
    assert store.lookup("MSG_B", "it") == "B dal file"


def test_a_failed_write_leaves_the_database_as_it_was(
        store: MessageStore, i18n_dir: Path) -> None:
    store.seed(read_catalogs(i18n_dir))
    generation = store.generation()
    catalogs = read_catalogs(i18n_dir)
    catalogs["en"]["MSG_A"] = CatalogEntry("A changed", "core")
    catalogs["it"]["MSG_Z"] = CatalogEntry(object(), "core")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        store.seed(catalogs)  # fails after MSG_A was already updated in the transaction
    assert store.lookup("MSG_A", "en") == "A {name}"
    assert store.generation() == generation
    with pytest.raises(ValueError):
        store.set_texts([("MSG_A", "en", "fine"), ("MSG_B", "en", {"one": "no other"})])
    assert store.lookup("MSG_A", "en") == "A {name}"


def test_candidates_round_trip(store: MessageStore) -> None:
    store.put_candidate("MSG_A", "fr", "A fr {name}", "en", "h1", "wise:m", ["unchanged?"])
    store.put_candidate("MSG_N", "fr-FR", {"one": "{count} f", "other": "{count} fs"}, "en",
                        "h2", "wise:m")
    store.put_candidate("MSG_A", "de", "A de {name}", "it", "h3", "frontier:x")
    assert [(c.key, c.lang) for c in store.candidates()] == [
        ("MSG_A", "de"), ("MSG_A", "fr"), ("MSG_N", "fr")]
    first = store.candidates("fr")[0]
    assert (first.value, first.source_hash, first.problems) == ("A fr {name}", "h1",
                                                                ["unchanged?"])
    assert store.candidates("fr")[1].value == {"one": "{count} f", "other": "{count} fs"}
    store.put_candidate("MSG_A", "fr", "A fr v2 {name}", "en", "h4", "wise:m")  # replaces
    assert [c.value for c in store.candidates("fr")][0] == "A fr v2 {name}"
    assert store.drop_candidate("MSG_A", "fr") is True
    assert store.drop_candidate("MSG_A", "fr") is False
    assert [c.key for c in store.candidates("fr")] == ["MSG_N"]
    assert store.lookup("MSG_A", "fr") is None  # candidates are never served


def test_executor_texts_become_ex_rows_that_seeding_keeps(
        store: MessageStore, i18n_dir: Path) -> None:
    store.seed(read_catalogs(i18n_dir))
    items = [("fs_read", "en", "Read a file.", ["read", "file", "open"]),
             ("fs_read", "fr", "Lire un fichier.", ["lire", "fichier"])]
    assert seed_executor_texts(store, items) == 4
    assert seed_executor_texts(store, items) == 0
    assert store.lookup("EX_DESCRIPTION_fs_read", "fr") == "Lire un fichier."
    stored = store.lookup("EX_AFFINITY_fs_read", "en")
    assert stored == "read, file, open" and affinity_words(stored) == ["read", "file", "open"]
    assert store.domain("EX_AFFINITY_fs_read") == "executors"
    assert store.seed(read_catalogs(i18n_dir)).total == 0
    assert store.lookup("EX_DESCRIPTION_fs_read", "en") == "Read a file."


def test_a_corrupt_database_is_moved_aside_and_rebuilt_from_the_files(
        tmp_path: Path, i18n_dir: Path) -> None:
    path = tmp_path / "i18n.sqlite"
    path.write_bytes(b"this is not a database at all\n" * 200)
    store = open_store(path, i18n_dir)
    try:
        assert store.recovered_from is not None and store.recovered_from.exists()
        assert store.recovered_from.name.startswith("i18n.sqlite.broken-")
        assert store.lookup("MSG_A", "it") == "A it {name}"
    finally:
        store.close()


def test_a_damaged_page_is_detected_too(tmp_path: Path, i18n_dir: Path) -> None:
    path = tmp_path / "i18n.sqlite"
    with MessageStore(path) as store:
        store.seed(read_catalogs(i18n_dir))
        store.set_texts([(f"MSG_FILL_{i}", "en", "x" * 200) for i in range(200)])
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='messages'").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    start = (root - 1) * page_size  # the root page of `messages` becomes garbage
    data[start:start + page_size] = b"\xa5" * page_size
    path.write_bytes(bytes(data))
    with MessageStore(path) as store:
        assert store.recovered_from is not None
        assert store.catalog("en") == {}


def test_an_unopenable_path_is_an_error_not_a_rebuild(tmp_path: Path) -> None:
    folder = tmp_path / "i18n.sqlite"
    folder.mkdir()
    with pytest.raises(sqlite3.OperationalError):
        MessageStore(folder)
    assert folder.is_dir() and not list(tmp_path.glob("*.broken-*"))


def test_two_connections_and_threads_share_the_database(
        tmp_path: Path, i18n_dir: Path) -> None:
    path = tmp_path / "i18n.sqlite"
    with MessageStore(path) as gateway, MessageStore(path) as cli:
        gateway.seed(read_catalogs(i18n_dir))
        before = gateway.generation()
        cli.set_text("MSG_B", "it", "B dall'altro processo")
        assert gateway.generation() == before + 1
        assert gateway.lookup("MSG_B", "it") == "B dall'altro processo"

        errors: list[BaseException] = []

        def work(n: int) -> None:
            try:
                for i in range(20):
                    (gateway if n % 2 else cli).set_text(f"MSG_T{n}_{i}", "en", f"{n}/{i}")
                    assert gateway.lookup("MSG_A", "en") == "A {name}"
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(cli.catalog("en")) == 4 + 6 * 20
