"""The manifest schema refuses what it must, with a readable reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from metnos.errors import ManifestError
from metnos.executors.manifest import MANIFEST_FILE, parse_manifest
from tests.executors.conftest import REPO_EXECUTORS

SOURCE = (REPO_EXECUTORS / "fs_read" / MANIFEST_FILE).read_text(encoding="utf-8")


def _write(tmp_path: Path, text: str, folder: str = "fs_read") -> Path:
    target = tmp_path / folder
    target.mkdir()
    (target / "main.py").write_text("print('{}')\n")
    path = target / MANIFEST_FILE
    path.write_text(text, encoding="utf-8")
    return path


def test_copy_parses(tmp_path: Path) -> None:
    manifest = parse_manifest(_write(tmp_path, SOURCE))
    assert manifest.path_inputs() == {"path": "read"}


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ('risk = "low"', 'risk = "tiny"', "risk"),
        ('version = "0.1.0"', 'version = "one"', "version"),
        ('entry = "main.py"', 'entry = "../main.py"', "entry"),
        ('entry = "main.py"', 'entry = "other.py"', "entry"),
        ('access = "read"', 'access = "delete"', "access"),
        ('access = "read"\n', "", "access"),
        ("side_effects = false", "side_effects = false\nsurprise = 1", "surprise"),
        ('en = """', 'fr = """', "missing language"),
        ('{path}",\n  "cosa', '{file}",\n  "cosa', "not an input"),
        ('"(leggi|leggimi|apri) {path}"', '"(leggi {path}"', "cannot parse"),
        ('"(leggi|leggimi|apri) {path}"', '"<leggi> {path}"', "rule"),
        ('"(leggi|leggimi|apri) {path}"', '"leggi {tipo:path}"', "slots.tipo"),
        ("timeout_s = 10", "timeout_s = 0", "timeout_s"),
        ('read = ["workspace"]', 'read = ["/etc"]', "workspace"),
        ("default = 65536", 'default = "big"', "default"),
        # an array has no `access`: a written path in it would escape the before-state record
        ('type = "integer"\ndefault = 65536', 'type = "array"\nitems = "path"', "arrays of paths"),
        ("required = true", 'required = true\ndefault = "a.md"', "required"),
    ],
)
def test_bad_manifest_refused(tmp_path: Path, old: str, new: str, reason: str) -> None:
    assert old in SOURCE
    with pytest.raises(ManifestError) as info:
        parse_manifest(_write(tmp_path, SOURCE.replace(old, new, 1)))
    assert info.value.key == "ERR_EXECUTOR_MANIFEST_INVALID"
    assert re.search(reason, info.value.vars["detail"]), info.value.vars["detail"]
    assert info.value.message("en").startswith("The manifest of executor fs_read")


def test_name_must_equal_folder(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="folder name"):
        parse_manifest(_write(tmp_path, SOURCE, folder="fs_reader"))


def test_not_toml(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="TOML"):
        parse_manifest(_write(tmp_path, "name = \n"))


def test_tool_spec_languages(tmp_path: Path) -> None:
    text = SOURCE.replace('en = """', 'fr = "Lire un fichier texte."\nen = """', 1)
    manifest = parse_manifest(_write(tmp_path, text))
    fr = manifest.tool_spec("fr")
    assert fr.description == "Lire un fichier texte."
    assert fr.parameters["properties"]["path"]["description"].startswith("Path of the file")
    assert fr.utterances == () and fr.affinity == ()
    it = manifest.tool_spec("it-CH")
    assert it.description.startswith("Legge un file")
    assert it.parameters == {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": it.parameters["properties"]["path"]["description"],
            },
            "max_bytes": {
                "type": "integer",
                "description": "Quanti byte leggere al massimo dall'inizio del file.",
                "default": 65536,
                "minimum": 1,
                "maximum": 262144,
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert "leggi" in it.affinity
