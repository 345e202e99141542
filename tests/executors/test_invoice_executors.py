"""The invoice chain's executors in the real bubblewrap sandbox: pdf_ext (pypdf bound
read-only), archive (its destination chosen on the host, its undo through `metnos.mechanisms.undo`),
notify (it only checks: the gateway sends)."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from metnos.features.archiving import destination
from metnos.ground import i18n
from metnos.ground.errors import PolicyDenied
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, run_sandboxed
from tests.support.pdfs import encrypted_pdf, image_only_pdf, text_pdf
from tests.undo.support import Actor, actor, tree_digest

__all__ = ["actor"]  # the fixture, imported for this module

EXECUTORS = resources_path("executors")


def run(name: str, args: dict[str, Any], workspace: Path) -> SandboxResult:
    folder = EXECUTORS / name
    manifest = parse_manifest(folder / "manifest.toml")
    request = SandboxRequest(exec_dir=folder, entry=manifest.entry, profile=manifest.sandbox,
                             workspace=workspace, args=args, action_id="test")
    return asyncio.run(run_sandboxed(request))


def refused(result: SandboxResult) -> str:
    assert not result.ok, result.result
    assert result.error_key is not None
    for lang in ("it", "en"):  # every key has its words
        assert i18n.get(result.error_key, lang, **result.error_vars) != result.error_key
    return result.error_key


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


# -- pdf_ext ----------------------------------------------------------------------------------

def test_pdf_ext_reads_each_page(ws: Path) -> None:
    text_pdf(ws / "posta" / "fattura.pdf", ["Fattura n. 7\nTotale 45,00 EUR", "Pagina due"])
    result = run("pdf_ext", {"path": "posta/fattura.pdf"}, ws)
    assert result.ok, (result.error_key, result.stderr_tail)
    assert result.result == {
        "path": "posta/fattura.pdf", "pages": ["Fattura n. 7\nTotale 45,00 EUR", "Pagina due"],
        "text": "Fattura n. 7\nTotale 45,00 EUR\n\nPagina due", "page_count": 2,
        "image_only": False, "truncated": False, "reply": "text"}


def test_pdf_ext_says_a_scan_is_image_only(ws: Path) -> None:
    image_only_pdf(ws / "scan.pdf", pages=2)
    result = run("pdf_ext", {"path": "scan.pdf"}, ws)
    assert result.ok, (result.error_key, result.stderr_tail)
    assert result.result is not None
    assert result.result["image_only"] is True and result.result["text"] == ""
    assert result.result["pages"] == ["", ""] and result.result["page_count"] == 2
    manifest = parse_manifest(EXECUTORS / "pdf_ext" / "manifest.toml")
    wish = manifest.wishes["ocr"]  # the proto-mnest this run shows: from pdf_ext, an OCR
    assert (wish.when, wish.have, wish.want) == ("image_only", "pdf_image", "text")


def test_pdf_ext_max_pages(ws: Path) -> None:
    text_pdf(ws / "long.pdf", [f"pagina {n}" for n in range(1, 6)])
    result = run("pdf_ext", {"path": "long.pdf", "max_pages": 2}, ws)
    assert result.ok and result.result is not None
    assert result.result["pages"] == ["pagina 1", "pagina 2"]
    assert (result.result["page_count"], result.result["truncated"]) == (5, True)


def test_pdf_ext_opens_an_owner_locked_pdf(ws: Path) -> None:
    encrypted_pdf(ws / "locked.pdf", text="Bolletta luce", password="")
    result = run("pdf_ext", {"path": "locked.pdf"}, ws)
    assert result.ok and result.result is not None, result.error_key
    assert result.result["pages"] == ["Bolletta luce"]


@pytest.mark.parametrize(("setup", "args", "key"), [
    ("text", {"path": "note.txt"}, "ERR_PDF_NOT_PDF"),
    ("fake", {"path": "fake.pdf"}, "ERR_PDF_NOT_PDF"),
    ("broken", {"path": "broken.pdf"}, "ERR_PDF_UNREADABLE"),
    ("locked", {"path": "locked.pdf"}, "ERR_PDF_ENCRYPTED"),
    ("none", {"path": "missing.pdf"}, "ERR_FILE_NOT_FOUND"),
    ("none", {"path": "../outside.pdf"}, "ERR_FILE_PATH_REFUSED"),
    ("none", {"path": "a.pdf", "max_pages": 0}, "ERR_EXECUTOR_ARG_INVALID"),
    ("none", {"path": "a.pdf", "surprise": 1}, "ERR_EXECUTOR_ARG_INVALID"),
])
def test_pdf_ext_refuses(ws: Path, setup: str, args: dict[str, Any], key: str) -> None:
    if setup == "text":
        (ws / "note.txt").write_text("just text")
    elif setup == "fake":
        (ws / "fake.pdf").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    elif setup == "broken":
        (ws / "broken.pdf").write_bytes(b"%PDF-1.4\n" + b"garbage " * 50)
    elif setup == "locked":
        encrypted_pdf(ws / "locked.pdf", password="segreta")
    assert refused(run("pdf_ext", args, ws)) == key


# -- archive ----------------------------------------------------------------------------------

def planned(ws: Path, path: str, category: str, year: int | None = None) -> dict[str, Any]:
    """The arguments the host gives archive: the destination chosen before the run."""
    dst, slug, chosen = destination(ws, path, category, year, UTC)
    return {"path": path, "category": slug, "year": chosen, "dst": dst}


def test_archive_moves_and_undo_brings_it_back(actor: Actor) -> None:
    text_pdf(actor.ws / "posta" / "fattura.pdf", ["Fattura"])
    (actor.ws / "note.md").write_text("keep")
    before = tree_digest(actor.ws)
    action_id, result = actor.act("archive", planned(actor.ws, "posta/fattura.pdf",
                                                     "Fatture", 2025))
    assert result.result == {"path": "archive/2025/fatture/fattura.pdf",
                             "from": "posta/fattura.pdf", "category": "fatture", "year": 2025}
    assert (actor.ws / "archive/2025/fatture/fattura.pdf").is_file()
    assert not (actor.ws / "posta/fattura.pdf").exists()
    report = actor.undo(action_id)  # the same code path as `metnos undo ACTION_ID`
    assert report.outcome == "done", report.items
    assert tree_digest(actor.ws) == before


def test_archive_year_from_the_file(actor: Actor) -> None:
    text_pdf(actor.ws / "f.pdf", ["x"])
    stamp = datetime(2023, 6, 1, 12, tzinfo=UTC).timestamp()
    os.utime(actor.ws / "f.pdf", (stamp, stamp))
    _, result = actor.act("archive", planned(actor.ws, "f.pdf", "invoices"))
    assert result.result is not None
    assert result.result["path"] == "archive/2023/invoices/f.pdf"


def test_archive_never_overwrites(actor: Actor) -> None:
    folder = actor.ws / "archive/2025/fatture"
    folder.mkdir(parents=True)
    (folder / "f.pdf").write_bytes(b"%PDF- the old one")
    text_pdf(actor.ws / "f.pdf", ["new"])
    args = planned(actor.ws, "f.pdf", "fatture", 2025)
    assert args["dst"] == "archive/2025/fatture/f-2.pdf"  # a numbered name, chosen first
    action_id, result = actor.act("archive", args)
    assert (folder / "f.pdf").read_bytes() == b"%PDF- the old one"
    assert (folder / "f-2.pdf").is_file()
    assert actor.undo(action_id).outcome == "done"
    assert (actor.ws / "f.pdf").is_file() and not (folder / "f-2.pdf").exists()
    # a file that appears at the chosen place in between is never replaced
    args = planned(actor.ws, "f.pdf", "fatture", 2025)
    (actor.ws / args["dst"]).write_bytes(b"arrived in between")
    assert refused(run("archive", args, actor.ws)) == "ERR_FILE_EXISTS"
    assert (actor.ws / args["dst"]).read_bytes() == b"arrived in between"
    assert (actor.ws / "f.pdf").is_file()


@pytest.mark.parametrize(("args", "key"), [
    ({"path": "f.pdf", "category": "fatture"}, "ERR_ARCHIVE_UNPLANNED"),
    ({"path": "f.pdf", "category": "Fat ture!", "dst": "archive/2025/fat/f.pdf"},
     "ERR_ARCHIVE_CATEGORY_INVALID"),
    ({"path": "f.pdf", "category": "fatture", "dst": "elsewhere/f.pdf"},
     "ERR_EXECUTOR_ARG_INVALID"),
    ({"path": "f.pdf", "category": "fatture", "dst": "archive/2025/altro/f.pdf"},
     "ERR_EXECUTOR_ARG_INVALID"),
    ({"path": "f.pdf", "category": "fatture", "dst": "archive/2025/fatture/g.pdf"},
     "ERR_EXECUTOR_ARG_INVALID"),
    ({"path": "f.pdf", "category": "fatture", "year": 2024,
      "dst": "archive/2025/fatture/f.pdf"}, "ERR_EXECUTOR_ARG_INVALID"),
    ({"path": "dir", "category": "fatture", "dst": "archive/2025/fatture/dir"},
     "ERR_ARCHIVE_NOT_A_FILE"),
    ({"path": "../f.pdf", "category": "fatture", "dst": "archive/2025/fatture/f.pdf"},
     "ERR_FILE_PATH_REFUSED"),
])
def test_archive_refuses(ws: Path, args: dict[str, Any], key: str) -> None:
    text_pdf(ws / "f.pdf", ["x"])
    (ws / "dir").mkdir()
    before = tree_digest(ws)
    assert refused(run("archive", args, ws)) == key
    assert tree_digest(ws) == before


@pytest.mark.parametrize(("path", "category", "year", "key"), [
    ("f.pdf", "two words!", None, "ERR_ARCHIVE_CATEGORY_INVALID"),
    ("f.pdf", "", None, "ERR_ARCHIVE_CATEGORY_INVALID"),
    ("f.pdf", "fatture", 1200, "ERR_EXECUTOR_ARG_INVALID"),
    ("missing.pdf", "fatture", None, "ERR_FILE_NOT_FOUND"),
    ("dir", "fatture", None, "ERR_ARCHIVE_NOT_A_FILE"),
    ("archive/2025/fatture/old.pdf", "fatture", 2025, "ERR_ARCHIVE_ALREADY_THERE"),
])
def test_archive_destination_refuses(ws: Path, path: str, category: str, year: int | None,
                                     key: str) -> None:
    text_pdf(ws / "f.pdf", ["x"])
    (ws / "dir").mkdir()
    text_pdf(ws / "archive/2025/fatture/old.pdf", ["x"])
    with pytest.raises(PolicyDenied) as info:
        destination(ws, path, category, year, UTC)
    assert info.value.key == key
    assert i18n.get(key, "it", **info.value.vars) != key


# -- notify -----------------------------------------------------------------------------------

def test_notify_checks_and_returns_the_notification(ws: Path) -> None:
    result = run("notify", {"text": "  La fattura  della luce\n è archiviata. ",
                            "title": "Fatture"}, ws)
    assert result.ok and result.result is not None
    note = result.result["notification"]
    assert (note["text"], note["title"]) == ("La fattura della luce\nè archiviata.", "Fatture")
    assert len(note["id"]) == 32
    assert list(ws.iterdir()) == []  # nothing written: the gateway sends it


@pytest.mark.parametrize(("args", "key"), [
    ({"text": "x" * 1501}, "ERR_NOTIFY_TEXT_TOO_LONG"),
    ({"text": "ok", "title": "t" * 121}, "ERR_NOTIFY_TITLE_TOO_LONG"),
    ({"text": "   "}, "ERR_EXECUTOR_ARG_INVALID"),
    ({}, "ERR_EXECUTOR_ARG_INVALID"),
    ({"text": "ok", "channel": "telegram"}, "ERR_EXECUTOR_ARG_INVALID"),
])
def test_notify_refuses(ws: Path, args: dict[str, Any], key: str) -> None:
    assert refused(run("notify", args, ws)) == key
