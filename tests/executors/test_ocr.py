"""ocr in the real bubblewrap sandbox with Debian's real tesseract: receipts rendered with
Pillow (`tests.support.receipts`) and made to look photographed (a few degrees askew, noise,
blur, JPEG at quality 70), in Italian and English; a photo taken sideways; PNG, TIFF, WebP
and HEIC; and files whose bytes are no image whatever their name says. The Debian packages
are installed on demand (`tests.support.system`): under CI a machine without them fails
instead of skipping."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from metnos.ground import i18n
from metnos.ground.paths import resources_path
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, run_sandboxed
from tests.support.receipts import WORDS, ensure_ocr, photographed, receipt
from tests.support.system import ensure_debian_binary, skip_or_fail

OCR = resources_path("executors") / "ocr"


@pytest.fixture(scope="module", autouse=True)
def engine() -> None:
    ensure_ocr()


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "ws"
    path.mkdir()
    yield path


def run(args: dict[str, Any], workspace: Path) -> SandboxResult:
    manifest = parse_manifest(OCR / "manifest.toml")
    request = SandboxRequest(exec_dir=OCR, entry=manifest.entry, profile=manifest.sandbox,
                             workspace=workspace, args=args, action_id="test")
    return asyncio.run(run_sandboxed(request))


def read(args: dict[str, Any], workspace: Path) -> dict[str, Any]:
    result = run(args, workspace)
    assert result.ok and result.result is not None, (result.error_key, result.error_vars,
                                                     result.stderr_tail)
    return result.result


def refused(result: SandboxResult) -> str:
    assert not result.ok and result.result is None, result.result
    assert result.error_key is not None
    for lang in ("it", "en"):  # every key has its words, and names the file
        message = i18n.get(result.error_key, lang, **result.error_vars)
        assert message != result.error_key
        assert str(result.error_vars.get("path", "")) in message
    return result.error_key


def assert_reads(result: dict[str, Any], lang: str) -> None:
    for word in WORDS[lang]:
        assert word in result["text"], (word, result["text"])
    assert result["reply"] == "text" and result["truncated"] is False
    assert result["words"] >= len(WORDS[lang]) and 50 <= result["confidence"] <= 100


# -- reading ----------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["it", "en"])
def test_ocr_reads_a_photographed_receipt(ws: Path, lang: str) -> None:
    photo = photographed(receipt(lang), angle=3.5 if lang == "it" else -2.5)
    (ws / "inbox").mkdir()
    photo.save(ws / "inbox" / "scontrino.jpg", quality=70)
    started = time.monotonic()
    result = read({"path": "inbox/scontrino.jpg", "lang": lang}, ws)
    print(f"ocr, spawn to result, {lang} receipt: {time.monotonic() - started:.2f} s")
    assert_reads(result, lang)
    assert (result["path"], result["kind"]) == ("inbox/scontrino.jpg", "jpeg")
    assert (result["width"], result["height"]) == photo.size


def test_ocr_reads_a_photo_taken_sideways(ws: Path) -> None:
    photo = photographed(receipt("it"), angle=1.0).rotate(90, expand=True)
    photo.save(ws / "sideways.jpg", quality=70)
    result = read({"path": "sideways.jpg"}, ws)  # default lang: it+en
    assert_reads(result, "it")
    assert (result["width"], result["height"]) == photo.size
    assert result["height"] > result["width"]  # stored sideways, read upright


@pytest.mark.parametrize(("kind", "name", "options"), [
    ("png", "scan.png", {}), ("tiff", "scan.tif", {"compression": "tiff_lzw"}),
    ("webp", "scan.webp", {"quality": 90}), ("webp", "lossless.webp", {"lossless": True}),
])
def test_ocr_reads_each_image_type(ws: Path, kind: str, name: str,
                                   options: dict[str, Any]) -> None:
    scan = receipt("en")
    scan.save(ws / name, **options)
    result = read({"path": name, "lang": "en"}, ws)
    assert_reads(result, "en")
    assert (result["kind"], result["width"], result["height"]) == (kind, *scan.size)


def test_ocr_reads_a_heic_photo(ws: Path, tmp_path: Path) -> None:
    encoder = ensure_debian_binary("heif-enc", "libheif-examples")
    if encoder is None:
        skip_or_fail("heif-enc (Debian package libheif-examples) is not installed")
    photo = photographed(receipt("it"), angle=2.0)
    photo.save(tmp_path / "photo.png")
    made = subprocess.run([str(encoder), "-q", "80", str(tmp_path / "photo.png"),  # noqa: S603
                           "-o", str(ws / "IMG_0001.HEIC")], capture_output=True, check=False)
    if made.returncode != 0:
        skip_or_fail(f"heif-enc cannot encode HEIC here: {made.stderr.decode()[-200:]}")
    result = read({"path": "IMG_0001.HEIC", "lang": "it"}, ws)
    assert_reads(result, "it")
    assert (result["kind"], result["width"], result["height"]) == ("heic", *photo.size)


@pytest.mark.parametrize("lang", ["it", "en"])
def test_ocr_reads_a_scanned_pdf_page_by_page(ws: Path, lang: str) -> None:
    """A bill scanned to PDF (images only, no text layer: what pdf_ext calls image_only),
    two pages: both are read, in order."""
    first = photographed(receipt(lang), angle=1.5).convert("L")
    second = receipt("en" if lang == "it" else "it")
    first.save(ws / "bolletta.pdf", "PDF", resolution=150, save_all=True,
               append_images=[second])
    result = read({"path": "bolletta.pdf"}, ws)
    assert (result["kind"], result["pages"], result["truncated"]) == ("pdf", 2, False)
    text = result["text"]
    for word in WORDS[lang]:
        assert word in text, (word, text)
    other = WORDS["en" if lang == "it" else "it"]
    assert text.index(WORDS[lang][0]) < text.index(other[0])  # page 1, then page 2
    assert result["width"] > 0 and result["height"] > 0


def test_ocr_says_when_an_image_holds_no_text(ws: Path) -> None:
    image = Image.new("RGB", (900, 700), (120, 160, 210))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 450, 900, 700), fill=(70, 130, 60))  # a meadow under a sunny sky
    draw.ellipse((600, 60, 740, 200), fill=(250, 220, 90))
    photographed(image.convert("L"), angle=0.0).save(ws / "landscape.jpg", quality=70)
    result = read({"path": "landscape.jpg"}, ws)
    assert result == {"path": "landscape.jpg", "text": "", "kind": "jpeg", "width": 900,
                      "height": 700, "pages": 1, "confidence": 0, "words": 0,
                      "truncated": False, "reply": "no_text"}


# -- refusing ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "data"), [
    ("note.png", b"Totale 45,00 EUR\nscontrino.jpg\n"),  # tesseract would open a list of names
    ("empty.jpg", b""),
    ("almost.png", b"\x89PNG\r\n"),
])
def test_ocr_refuses_what_is_not_an_image(ws: Path, name: str, data: bytes) -> None:
    (ws / name).write_bytes(data)
    result = run({"path": name}, ws)
    assert refused(result) == "ERR_OCR_NOT_IMAGE"
    assert result.error_vars["path"] == name


@pytest.mark.parametrize(("setup", "args", "key"), [
    ("none", {"path": "missing.jpg"}, "ERR_FILE_NOT_FOUND"),
    ("folder", {"path": "photos"}, "ERR_FILE_IS_DIRECTORY"),
    ("huge", {"path": "huge.jpg"}, "ERR_OCR_TOO_LARGE"),
    ("giant", {"path": "giant.png"}, "ERR_OCR_TOO_LARGE"),
    ("broken", {"path": "broken.jpg"}, "ERR_OCR_UNREADABLE"),
    ("no pages", {"path": "fattura.jpg"}, "ERR_OCR_UNREADABLE"),  # a PDF, whatever its name
    ("none", {"path": "../outside.jpg"}, "ERR_FILE_PATH_REFUSED"),
    ("none", {"path": "a.jpg", "lang": "fr"}, "ERR_EXECUTOR_ARG_INVALID"),
    ("none", {"path": "a.jpg", "surprise": 1}, "ERR_EXECUTOR_ARG_INVALID"),
])
def test_ocr_refuses(ws: Path, setup: str, args: dict[str, Any], key: str) -> None:
    if setup == "folder":
        (ws / "photos").mkdir()
    elif setup == "huge":  # over 40 MiB, sparse
        with (ws / "huge.jpg").open("wb") as handle:
            handle.write(b"\xff\xd8\xff\xe0")
            handle.truncate(41 << 20)
    elif setup == "giant":  # a header that claims 20000 x 20000 pixels
        ihdr = (20000).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00"
        (ws / "giant.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR" + ihdr)
    elif setup == "broken":  # a JPEG start, then no frame header
        (ws / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 64)
    elif setup == "no pages":  # a PDF's start and end, nothing between
        (ws / "fattura.jpg").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n")
    assert refused(run(args, ws)) == key


def test_the_engine_missing_names_the_debian_packages() -> None:
    for lang in ("it", "en"):
        for package in ("tesseract-ocr (tesseract-ocr-ita, tesseract-ocr-eng)",
                        "libheif-examples", "poppler-utils"):
            assert package in i18n.get("ERR_OCR_UNAVAILABLE", lang, package=package)
